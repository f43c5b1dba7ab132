//! How fast sampled stacks become a breakdown: fold, symbolize, categorize.
//!
//! The workload is synthetic but shaped like a busy host: a kallsyms of
//! about 100k symbols (every function with its `__pfx_` padding, compiler
//! suffixes, a module and BPF programs), 4000 distinct stacks of 15-40
//! frames (how the context was entered, a real network path cut at some
//! depth, up to six leaf helpers from a pool of 3000), and samples drawn
//! from them with Zipf-like repetition (a few hot paths, a long tail).
//! Generated from a fixed seed, so runs compare.
//!
//! `cargo bench --bench symbolize` (no privileges needed). The figure that
//! matters is `pipeline`: samples per second through `Folder::add`,
//! `Folder::take` and `breakdowns`, with the symbolizer's cache warm as it
//! is from the second interval on. NETTO_BENCH_TABLE=1 writes the figures
//! over the `symbolize` table of docs/src/performance.md.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::hint::black_box;

use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use netto::breakdown::categories::{Pattern, RULES};
use netto::breakdown::fold::Folder;
use netto::breakdown::{breakdowns, categorize};
use netto::model::{CpuTime, EventKey, SampleContext};
use netto::symbols::kallsyms::SymbolTable;
use netto::symbols::symbolizer::Symbolizer;

mod table;

const FUNCTIONS: usize = 50_000;
const DISTINCT_STACKS: usize = 4_000;
const ZIPF_EXPONENT: f64 = 1.1;
const TEXT_START: u64 = 0xffff_ffff_8100_0000;

/// splitmix64: a seeded generator is all the workload needs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How a context is entered, outermost first: which frames sit above the
/// network path in a real stack.
#[rustfmt::skip]
const ENTRIES: &[&[&str]] = &[
    &["ret_from_fork_asm", "ret_from_fork", "kthread", "smpboot_thread_fn", "run_ksoftirqd",
      "handle_softirqs"],
    &["asm_common_interrupt", "common_interrupt", "irq_exit_rcu", "handle_softirqs"],
    // NET_RX run inline when a TCP sender re-enables bottom halves (veth).
    &["entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_sendto", "__sys_sendto",
      "tcp_sendmsg", "tcp_sendmsg_locked", "__tcp_push_pending_frames", "tcp_write_xmit",
      "__tcp_transmit_skb", "__ip_queue_xmit", "ip_local_out", "ip_output", "ip_finish_output",
      "__ip_finish_output", "ip_finish_output2", "__dev_queue_xmit", "__local_bh_enable_ip",
      "do_softirq", "handle_softirqs"],
    &["entry_SYSCALL_64_after_hwframe", "do_syscall_64"],
];

/// Real network paths, outermost first, with the entries they run under;
/// stacks are cut from them at any depth.
#[rustfmt::skip]
const PATHS: &[(SampleContext, &[usize], &[&str])] = &[
    (SampleContext::NetRx, &[0, 1, 2], &[
        "net_rx_action", "__napi_poll", "process_backlog", "__netif_receive_skb",
        "__netif_receive_skb_one_core", "ip_rcv", "ip_rcv_finish", "ip_local_deliver",
        "ip_local_deliver_finish", "ip_protocol_deliver_rcu", "tcp_v4_rcv", "tcp_v4_do_rcv",
        "tcp_rcv_established", "tcp_data_queue", "tcp_data_ready", "sock_def_readable",
        "__wake_up_sync_key", "__wake_up_common", "try_to_wake_up",
    ]),
    (SampleContext::NetRx, &[0, 1, 2], &[
        "net_rx_action", "__napi_poll", "veth_poll", "veth_xdp_rcv", "napi_gro_receive",
        "dev_gro_receive", "inet_gro_receive", "tcp4_gro_receive", "tcp_gro_receive",
        "skb_gro_receive",
    ]),
    (SampleContext::NetRx, &[0, 1], &[
        "net_rx_action", "__napi_poll", "virtnet_poll", "virtnet_receive", "napi_gro_receive",
        "gro_normal_list", "netif_receive_skb_list_internal", "__netif_receive_skb_list_core",
        "ip_list_rcv", "ip_sublist_rcv", "nf_hook_slow", "ipv4_conntrack_in", "nf_conntrack_in",
        "__nf_conntrack_find_get",
    ]),
    (SampleContext::NetRx, &[0, 1], &[
        "net_rx_action", "__napi_poll", "process_backlog", "__netif_receive_skb_one_core", "ip_rcv",
        "ip_rcv_finish", "ip_forward", "nf_hook_slow", "nft_do_chain_ipv4", "nft_do_chain",
        "ip_forward_finish", "ip_output", "ip_finish_output2", "__dev_queue_xmit",
        "dev_hard_start_xmit", "veth_xmit", "veth_forward_skb",
    ]),
    (SampleContext::NetRx, &[0, 1, 2], &[
        "net_rx_action", "__napi_poll", "process_backlog", "__netif_receive_skb",
        "__netif_receive_skb_core", "br_handle_frame", "br_handle_frame_finish", "br_forward",
        "__br_forward", "br_forward_finish", "br_dev_queue_push_xmit", "__dev_queue_xmit",
        "dev_hard_start_xmit", "veth_xmit",
    ]),
    (SampleContext::NetRx, &[0, 1], &[
        "net_rx_action", "__napi_poll", "process_backlog", "__netif_receive_skb",
        "__netif_receive_skb_core", "do_xdp_generic", "bpf_prog_run_generic_xdp", "xdp_pass_prog",
    ]),
    (SampleContext::NetTx, &[0, 1], &[
        "net_tx_action", "__qdisc_run", "sch_direct_xmit", "dev_hard_start_xmit", "start_xmit",
        "free_old_xmit",
    ]),
    (SampleContext::SockRecv, &[3], &[
        "__x64_sys_recvfrom", "__sys_recvfrom", "sock_recvmsg", "inet_recvmsg", "tcp_recvmsg",
        "tcp_recvmsg_locked", "skb_copy_datagram_iter", "__skb_datagram_iter", "_copy_to_iter",
        "rep_movs_alternative",
    ]),
    (SampleContext::SockSend, &[3], &[
        "__x64_sys_sendto", "__sys_sendto", "udp_sendmsg", "udp_send_skb", "ip_send_skb",
        "ip_local_out", "ip_output", "ip_finish_output2", "__dev_queue_xmit", "validate_xmit_skb",
    ]),
];

/// Leaf helpers (allocation, locks, checksums, ...) come from a pool this
/// big, at most this many deep.
const HELPERS: usize = 3_000;
const MAX_HELPER_DEPTH: u64 = 6;

struct Function {
    name: String,
    start: u64,
    size: u64,
}

/// The kallsyms text and where each function landed.
fn kallsyms(rng: &mut Rng) -> (String, Vec<Function>) {
    let mut names: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let known = RULES.iter().filter_map(|(p, _)| match p {
        Pattern::Exact(name) => Some(*name),
        _ => None,
    });
    let path_names = PATHS.iter().flat_map(|(_, _, path)| path.iter().copied());
    for name in ENTRIES
        .iter()
        .copied()
        .flatten()
        .copied()
        .chain(path_names)
        .chain(known)
    {
        if seen.insert(name) {
            names.push(name.to_owned());
        }
    }
    for i in names.len()..FUNCTIONS {
        let suffix = match i % 13 {
            0 => ".isra.0",
            1 => ".constprop.0",
            2 => ".part.0",
            _ => "",
        };
        names.push(format!("helper_{i:05}{suffix}"));
    }
    let mut text = String::new();
    let mut functions = Vec::new();
    let mut addr = TEXT_START;
    writeln!(text, "{addr:016x} T _stext").unwrap();
    for (i, name) in names.into_iter().enumerate() {
        let kind = if i % 3 == 0 { 'T' } else { 't' };
        let size = 16 * (4 + rng.below(120));
        writeln!(text, "{addr:016x} {kind} __pfx_{name}").unwrap();
        writeln!(text, "{:016x} {kind} {name}", addr + 16).unwrap();
        functions.push(Function {
            name,
            start: addr + 16,
            size,
        });
        addr += 16 + size;
    }
    writeln!(text, "{addr:016x} T _etext").unwrap();
    for i in 0..2_000u64 {
        writeln!(text, "{:016x} d data_{i}", addr + 0x10_0000 + i * 64).unwrap();
    }
    for i in 0..500u64 {
        writeln!(
            text,
            "{:016x} t br_helper_{i}\t[bridge]",
            0xffff_ffff_c0a0_0000 + i * 256
        )
        .unwrap();
    }
    writeln!(
        text,
        "ffffffffa0001000 t bpf_prog_6deef7357e7b4530_xdp_pass_prog\t[bpf]"
    )
    .unwrap();
    (text, functions)
}

/// A return address in `f`: one of a few call sites, as a function calls
/// its callee from one place or a handful.
fn call_site(rng: &mut Rng, f: &Function) -> u64 {
    f.start + f.size * (1 + rng.below(3)) / 4
}

/// Distinct raw stacks of 15-40 frames, leaf first as `bpf_get_stack`
/// returns them: an entry, a network path cut at some depth, a few helpers.
fn distinct_stacks(rng: &mut Rng, functions: &[Function]) -> Vec<(SampleContext, Vec<u64>)> {
    let by_name: HashMap<&str, &Function> =
        functions.iter().map(|f| (f.name.as_str(), f)).collect();
    let bpf_prog = Function {
        name: "xdp_pass_prog".into(),
        start: 0xffff_ffff_a000_1000,
        size: 512,
    };
    let helpers = &functions[functions.len() - HELPERS..];
    let mut seen = HashSet::new();
    let mut stacks = Vec::new();
    while stacks.len() < DISTINCT_STACKS {
        let (context, entries, path) = PATHS[rng.below(PATHS.len() as u64) as usize];
        let entry = ENTRIES[entries[rng.below(entries.len() as u64) as usize]];
        let cut = 1 + rng.below(path.len() as u64) as usize;
        let mut functions: Vec<&Function> = entry
            .iter()
            .chain(&path[..cut])
            .map(|name| by_name.get(name).copied().unwrap_or(&bpf_prog))
            .collect();
        for _ in 0..rng.below(MAX_HELPER_DEPTH + 1) {
            functions.push(&helpers[rng.below(HELPERS as u64) as usize]);
        }
        while functions.len() < 15 {
            functions.push(&helpers[rng.below(HELPERS as u64) as usize]);
        }
        if functions.len() > 40 {
            continue;
        }
        let (leaf, callers) = functions.split_last().expect("at least 15 frames");
        let mut raw = vec![leaf.start + rng.below(leaf.size)];
        raw.extend(callers.iter().rev().map(|f| call_site(rng, f)));
        if seen.insert(raw.clone()) {
            stacks.push((context, raw));
        }
    }
    stacks
}

/// `n` sample indices, rank k drawn with weight 1 / (k + 1)^s.
fn zipf_samples(rng: &mut Rng, ranks: usize, n: usize) -> Vec<usize> {
    let mut cdf = Vec::with_capacity(ranks);
    let mut total = 0.0;
    for k in 0..ranks {
        total += 1.0 / ((k + 1) as f64).powf(ZIPF_EXPONENT);
        cdf.push(total);
    }
    (0..n)
        .map(|_| {
            let u = rng.unit() * total;
            cdf.partition_point(|&c| c < u).min(ranks - 1)
        })
        .collect()
}

fn events() -> BTreeMap<EventKey, CpuTime> {
    EventKey::ALL
        .into_iter()
        .map(|key| {
            let t = CpuTime {
                total_ns: 750_000_000,
                per_cpu_ns: vec![750_000_000],
                count: 1,
                ..CpuTime::default()
            };
            (key, t)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut rng = Rng(0x6e65_7474_6f21);
    let (text, functions) = kallsyms(&mut rng);
    let table = SymbolTable::parse(&text).expect("synthetic kallsyms");
    let stacks = distinct_stacks(&mut rng, &functions);
    let events = events();
    println!(
        "workload: {} kallsyms lines, {} address ranges, {} distinct stacks",
        text.lines().count(),
        table.len(),
        stacks.len()
    );

    let mut group = c.benchmark_group("symbolize");
    group.sample_size(20);

    for n in [10_000usize, 100_000, 1_000_000] {
        let samples: Vec<(SampleContext, &[u64])> = zipf_samples(&mut rng, stacks.len(), n)
            .into_iter()
            .map(|i| (stacks[i].0, stacks[i].1.as_slice()))
            .collect();
        let mut symbolizer = Symbolizer::new(table.clone());
        let mut folder = Folder::new();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("pipeline/{n}_samples"), |b| {
            b.iter(|| {
                for &(context, raw) in &samples {
                    folder.add(0, Some(context), None, raw);
                }
                let folded = folder.take(&mut symbolizer, |_| None);
                black_box(breakdowns(&folded, &events, &BTreeMap::new(), 999))
            })
        });
    }

    group.throughput(Throughput::Elements(stacks.len() as u64));
    group.bench_function("symbolize_cold/distinct_stacks", |b| {
        b.iter_batched_ref(
            || Symbolizer::new(table.clone()),
            |symbolizer| {
                let mut frames = Vec::new();
                for (_, raw) in &stacks {
                    symbolizer.symbolize_into(raw, &mut frames);
                    black_box(&frames);
                }
            },
            BatchSize::LargeInput,
        )
    });

    let mut folder = Folder::new();
    for (context, raw) in &stacks {
        folder.add(0, Some(*context), None, raw);
    }
    let folded = folder.take(&mut Symbolizer::new(table.clone()), |_| None);
    let frames: Vec<Vec<&str>> = folded
        .iter()
        .map(|s| s.frames.iter().map(String::as_str).collect())
        .collect();
    group.throughput(Throughput::Elements(frames.len() as u64));
    group.bench_function("categorize/distinct_stacks", |b| {
        b.iter(|| {
            for stack in &frames {
                black_box(categorize(stack));
            }
        })
    });

    group.throughput(Throughput::Elements(text.lines().count() as u64));
    group.bench_function("parse_kallsyms", |b| {
        b.iter(|| black_box(SymbolTable::parse(&text).expect("synthetic kallsyms")))
    });
    group.finish();
}

criterion_group!(benches, bench);

fn main() -> anyhow::Result<()> {
    table::criterion_main("symbolize", benches)
}
