//! The XDP sketch against its reference implementation, its accuracy, and
//! `netto sketch` end to end. Needs root: programs are loaded and run for
//! real, and the live test builds a namespace.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::mem::MaybeUninit;
use std::net::{IpAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use netto::abi::sketch::sketch_protocol;
use netto::model::{SketchSnapshot, Snapshot, XdpMode};
use netto::sketch::config::{
    Geometry, Sampling, DEFAULT_COLUMNS, DEFAULT_ROWS, SKETCH_MAX_COLUMNS, SKETCH_MAX_ROWS,
    SKETCH_MIN_COLUMNS,
};
use netto::sketch::flow::FlowKey;
use netto::sketch::flow::{classify, protocol_name, Class, PROTOCOLS};
use netto::sketch::hash::{buckets, flow_hash};
use netto::sketch::packet::{
    arp, frame, ipv4_with_options, ipv6_with_extensions, make_later_fragment, set_ip_version,
    set_ipv4_total_length, set_ipv6_payload_length, Extension,
};
use netto::sketch::program::Loaded;
use netto::sketch::query::{self, Estimate, TopK};
use netto::sketch::reference::Reference;
use netto::sketch::slots::Reading;
use netto::sketch::variates::Variates;
use netto::workload::netns::VethPair;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::Zipf;

/// test_run executes on the calling CPU; the reference models one slot,
/// the one started first, which is CPU 0's. The thread's affinity is
/// restored on drop: libtest may run the next test on the same thread.
struct PinnedToCpu0(libc::cpu_set_t);

impl PinnedToCpu0 {
    fn new() -> PinnedToCpu0 {
        // SAFETY: cpu_set_t values for this thread only, checked calls.
        unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut old),
                0
            );
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set),
                0
            );
            PinnedToCpu0(old)
        }
    }
}

impl Drop for PinnedToCpu0 {
    fn drop(&mut self) {
        // SAFETY: restores the set read in `new`.
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &self.0) };
    }
}

fn addr(rng: &mut StdRng, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::from(rng.random::<[u8; 16]>())
    } else {
        IpAddr::from(rng.random::<[u8; 4]>())
    }
}

/// Many distinct TCP/UDP flows over IPv4 and IPv6, some VLAN-tagged, with
/// ICMP, GRE, ARP, fragments, truncated frames, padded frames, total
/// lengths shorter than the frame and IPv4 options mixed in.
fn mixed_trace(packets: usize, flows: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let pool: Vec<Vec<u8>> = (0..flows)
        .map(|i| {
            let v6 = i % 3 == 0;
            let proto = if i % 2 == 0 { 6 } else { 17 };
            let (s, d) = (addr(&mut rng, v6), addr(&mut rng, v6));
            frame(
                s,
                d,
                rng.random(),
                rng.random(),
                proto,
                i % 5 == 0,
                64 + i % 1400,
            )
        })
        .collect();
    (0..packets)
        .map(|_| match rng.random_range(0..100) {
            0 => arp(),
            1 => frame(
                addr(&mut rng, false),
                addr(&mut rng, false),
                0,
                0,
                1,
                false,
                98,
            ),
            2 => frame(
                addr(&mut rng, true),
                addr(&mut rng, true),
                0,
                0,
                58,
                false,
                118,
            ),
            3 => {
                let mut f = frame(
                    addr(&mut rng, false),
                    addr(&mut rng, false),
                    1,
                    2,
                    17,
                    false,
                    600,
                );
                make_later_fragment(&mut f);
                f
            }
            4 => pool[rng.random_range(0..flows)][..30].to_vec(),
            5 => frame(
                addr(&mut rng, false),
                addr(&mut rng, false),
                0,
                0,
                47,
                false,
                80,
            ),
            6 => frame(
                addr(&mut rng, true),
                addr(&mut rng, true),
                0,
                0,
                47,
                true,
                90,
            ),
            // A minimum-size frame padded after a short datagram: the
            // ports are inside the total length, the padding is not read.
            7 => {
                let mut f = frame(
                    addr(&mut rng, false),
                    addr(&mut rng, false),
                    rng.random(),
                    rng.random(),
                    17,
                    false,
                    60,
                );
                set_ipv4_total_length(&mut f, 28);
                f
            }
            // A total length that ends before the ports: padding would
            // otherwise be read as ports.
            8 => {
                let mut f = frame(
                    addr(&mut rng, false),
                    addr(&mut rng, false),
                    7,
                    9,
                    6,
                    false,
                    64,
                );
                set_ipv4_total_length(&mut f, rng.random_range(0..24));
                f
            }
            // A frame cut short of its total length, ports in or out.
            9 => {
                let f = pool[rng.random_range(0..flows)].clone();
                f[..f.len().min(rng.random_range(34..60))].to_vec()
            }
            // IPv4 options (ihl 6 to 15).
            10 => ipv4_with_options(
                addr(&mut rng, false),
                addr(&mut rng, false),
                rng.random(),
                rng.random(),
                if rng.random() { 6 } else { 17 },
                rng.random_range(1..=10),
                64 + rng.random_range(0..200),
            ),
            // IPv6 through extension headers, fragments among them.
            11 | 12 => ipv6_with_extensions(
                addr(&mut rng, true),
                addr(&mut rng, true),
                rng.random(),
                rng.random(),
                [6, 17, 58][rng.random_range(0..3)],
                &random_extensions(&mut rng),
                64 + rng.random_range(0..300),
            ),
            // An IPv6 payload length that ends before (or at) the ports.
            13 => {
                let mut f = pool[rng.random_range(0..flows / 3) * 3].clone();
                set_ipv6_payload_length(&mut f, rng.random_range(0..6));
                f
            }
            // A version that is not the ethertype's.
            14 => {
                let mut f = pool[rng.random_range(0..flows)].clone();
                if f[12..14] != [0x81, 0x00] {
                    set_ip_version(&mut f, rng.random_range(0..16));
                }
                f
            }
            _ => pool[rng.random_range(0..flows)].clone(),
        })
        .collect()
}

/// Up to five IPv6 extension headers (one more than the program looks
/// through), fragment headers of first and later fragments among them.
fn random_extensions(rng: &mut StdRng) -> Vec<Extension> {
    (0..rng.random_range(0..=5))
        .map(|_| match rng.random_range(0..5) {
            0 => Extension::Fragment {
                offset: 0,
                more: true,
            },
            1 => Extension::Fragment {
                offset: rng.random_range(1..8192),
                more: rng.random(),
            },
            kind => Extension::Options {
                kind: [0, 43, 60][kind - 2],
                units: rng.random_range(1..4),
            },
        })
        .collect()
}

/// Runs mixed traces through the kernel program and the reference with
/// the same variates, one trace per probability (a change of p between
/// them), topping the ring up behind the cursor every `top_up_every`
/// packets as the live host does every interval, or never (the ring then
/// runs dry and gaps are reused, counted alike).
fn exact_run(
    rows: u32,
    columns: u32,
    probabilities: &[f64],
    seed: u64,
    top_up_every: Option<usize>,
) {
    exact_trace(
        rows,
        columns,
        probabilities,
        seed,
        top_up_every,
        (20_000, 3_000),
    );
}

/// [`exact_run`] with a trace of `packets` packets of up to `flows` flows
/// per probability.
fn exact_trace(
    rows: u32,
    columns: u32,
    probabilities: &[f64],
    seed: u64,
    top_up_every: Option<usize>,
    (packets, flows): (usize, usize),
) {
    let _pinned = PinnedToCpu0::new();
    let geometry = Geometry::new(rows, columns).unwrap();
    let first = Sampling::new(probabilities[0]).unwrap();
    let mut kernel_variates = Variates::new(first, seed);
    let mut storage = MaybeUninit::uninit();
    let loaded =
        Loaded::load(&mut storage, geometry, &mut kernel_variates).expect("loading the sketch");
    let mut reference = Reference::new(geometry, Variates::new(first, seed).slot_start(rows));
    let mut refills = Variates::new(first, seed ^ 0xabcdef);
    for (round, &p) in probabilities.iter().enumerate() {
        if round > 0 {
            // A run-time change of p: new variates, same program.
            refills.set_sampling(Sampling::new(p).unwrap());
            let (cursor, _) = loaded.slots().ring_position(0);
            let refill = refills.rewrite(rows, cursor);
            loaded.slots().refill(0, &refill);
            reference.refill(&refill);
        }
        for (i, packet) in mixed_trace(packets, flows, seed + round as u64)
            .iter()
            .enumerate()
        {
            if top_up_every.is_some_and(|every| i % every == 0) {
                let position = loaded.slots().ring_position(0);
                assert_eq!(position, reference.ring_position(), "ring cursor and limit");
                let refill = refills.top_up(rows, position.0, position.1);
                loaded.slots().refill(0, &refill);
                reference.refill(&refill);
            }
            assert_eq!(loaded.test_run(packet).unwrap(), 2, "XDP_PASS");
            reference.process(packet);
        }
    }
    let kernel = loaded.slots().read().counters;
    let expected = reference.counters();
    assert_eq!(kernel.packets, expected.packets);
    assert_eq!(kernel.bytes, expected.bytes);
    assert_eq!(kernel.proto_packets, expected.proto_packets);
    assert_eq!(kernel.proto_bytes, expected.proto_bytes);
    assert_eq!(kernel.gaps_reused, expected.gaps_reused);
    if top_up_every.is_some() {
        assert_eq!(
            kernel.gaps_reused, 0,
            "a ring topped up in time is never dry"
        );
    } else {
        assert!(kernel.gaps_reused > 0, "the trace must outrun the ring");
    }
    let differing = kernel
        .cells
        .iter()
        .zip(&expected.cells)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(
        differing,
        0,
        "{differing} of {} cells differ",
        kernel.cells.len()
    );
    // Most of the cells the trace's flows can reach: all of a small
    // sketch, a row's worth per flow of a wide one.
    let reachable = kernel.cells.len().min(flows * rows as usize);
    assert!(
        expected.cells.iter().filter(|c| c[0] != 0).count() > reachable / 2,
        "the trace must touch most cells it can reach for the comparison to mean something"
    );
    assert!(
        expected.proto_packets.iter().all(|&n| n > 0),
        "every protocol class was sampled"
    );
    let kernel_candidates: HashSet<FlowKey> = loaded.slots().candidates().into_iter().collect();
    let expected_candidates: HashSet<FlowKey> = reference.candidates().copied().collect();
    assert_eq!(kernel_candidates, expected_candidates);
}

#[test]
fn kernel_counts_exactly_what_the_reference_counts() {
    exact_run(4, 256, &[0.3], 11, Some(1_000));
}

/// Each column count has its own program (the column mask and stride are
/// its constants): every one, from 16 to 32768 columns, with the most rows
/// a geometry of that width takes, counts what the reference counts. (A
/// short trace of few flows: the kernel matrix runs this under emulation.)
#[test]
fn every_column_counts_program_counts_exactly_as_the_reference() {
    let mut columns = SKETCH_MIN_COLUMNS;
    while columns <= SKETCH_MAX_COLUMNS {
        let rows = (1..=SKETCH_MAX_ROWS)
            .rev()
            .find(|&rows| Geometry::new(rows, columns).is_ok())
            .expect("one row fits every width");
        exact_trace(rows, columns, &[1.0, 0.2], 14, Some(500), (1_000, 250));
        columns *= 2;
    }
}

#[test]
fn exact_with_odd_rows_full_sampling_and_a_change_of_p() {
    exact_run(3, 1024, &[1.0, 0.05, 0.5], 12, Some(2_000));
}

/// Two flows whose first buckets are the same, one after the other at
/// p = 1: the later one takes its second bucket, so both stay candidates
/// (a bucket per flow lost the earlier one to the later, heavier or not),
/// in the kernel as in the reference.
#[test]
fn flows_sharing_a_bucket_are_both_candidates() {
    let _pinned = PinnedToCpu0::new();
    let bucket = |key: &FlowKey| buckets(flow_hash(key));
    let (src, dst) = (IpAddr::from([10, 1, 2, 3]), IpAddr::from([10, 4, 5, 6]));
    let first = FlowKey::new(src, dst, 1000, 53, 17);
    let sport = (1001..=u16::MAX)
        .find(|&sport| {
            let other = bucket(&FlowKey::new(src, dst, sport, 53, 17));
            other[0] == bucket(&first)[0] && !bucket(&first).contains(&other[1])
        })
        .expect("some port shares the first bucket only");
    let second = FlowKey::new(src, dst, sport, 53, 17);
    let geometry = Geometry::new(4, 256).unwrap();
    let sampling = Sampling::new(1.0).unwrap();
    let mut variates = Variates::new(sampling, 5);
    let mut storage = MaybeUninit::uninit();
    let loaded = Loaded::load(&mut storage, geometry, &mut variates).expect("loading the sketch");
    let mut reference = Reference::new(geometry, Variates::new(sampling, 5).slot_start(4));
    // The earlier flow banks every vote it can; the later one is lighter.
    for (sport, count) in [(1000, 100), (sport, 40)] {
        let packet = frame(src, dst, sport, 53, 17, false, 100);
        for _ in 0..count {
            assert_eq!(loaded.test_run(&packet).unwrap(), 2, "XDP_PASS");
            reference.process(&packet);
        }
    }
    let kernel: HashSet<FlowKey> = loaded.slots().candidates().into_iter().collect();
    let expected: HashSet<FlowKey> = reference.candidates().copied().collect();
    assert_eq!(kernel, expected);
    assert_eq!(kernel, HashSet::from([first, second]));
}

/// Intervals read in the middle of traffic, as the live sketch reads
/// them: at p = 1 one flow's estimate in each interval is never above the
/// most the interval's cells can have counted (`Reading::most_since`, the
/// bound the live sketch holds its estimates within), so holding them to
/// it takes nothing from the flow, and the intervals' estimates add up to
/// what was sent. Held within the interval's totals alone, an interval
/// whose cells had run ahead of them lost the excess for good (a flow of
/// 1000 datagrams came out at 973).
///
/// Two reading errors remain, both small: a packet counted in its CPU's
/// total before a read may reach its cells only after (one per CPU at a
/// time, so the bound may be short by one here), and a read takes the
/// rows one after another while the median picks different rows in
/// different intervals, so the estimates' sum need not telescope exactly.
#[test]
fn intervals_read_during_traffic_lose_no_packet_of_a_flow() {
    const RUNS: u64 = 30_000;
    let (src, dst) = (IpAddr::from([10, 1, 2, 3]), IpAddr::from([10, 4, 5, 6]));
    let key = FlowKey::new(src, dst, 1000, 53, 17);
    let packet = frame(src, dst, 1000, 53, 17, false, 100);
    let geometry = Geometry::new(4, 2048).unwrap();
    let mut variates = Variates::new(Sampling::new(1.0).unwrap(), 5);
    let mut storage = MaybeUninit::uninit();
    let loaded = Loaded::load(&mut storage, geometry, &mut variates).expect("loading the sketch");
    /// The program, lent to the thread that runs it.
    struct Runner<'a, 'obj>(&'a Loaded<'obj>);
    // SAFETY: the runner only calls `test_run`, which passes the program's
    // fd to the kernel; the reader only reads the mapped counters.
    unsafe impl Send for Runner<'_, '_> {}
    let runner = Runner(&loaded);
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut previous = Reading::zero(geometry);
    let (mut estimated, mut intervals, mut ahead) = (0.0, 0u64, 0u64);
    let mut over_the_most = Vec::new();
    let mut interval = |previous: &mut Reading| {
        let current = loaded.slots().read();
        let delta = current.counters.since(&previous.counters);
        let estimate = query::flow(&delta, geometry, &key).packets;
        let (most, _) = current.most_since(previous);
        ahead += u64::from(estimate > delta.packets as f64);
        if estimate > (most + 1) as f64 {
            over_the_most.push((estimate, most));
        }
        let mut held = [estimate];
        query::within_total(&mut held, most as f64);
        estimated += held[0];
        intervals += 1;
        *previous = current;
    };
    thread::scope(|scope| {
        scope.spawn(|| {
            let runner = runner;
            let _pinned = PinnedToCpu0::new();
            for _ in 0..RUNS {
                assert_eq!(runner.0.test_run(&packet).unwrap(), 2, "XDP_PASS");
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            interval(&mut previous);
        }
    });
    // The interval in progress when the traffic stopped.
    interval(&mut previous);
    assert_eq!(previous.counters.packets, RUNS);
    assert!(
        intervals >= 10,
        "only {intervals} intervals while the program ran"
    );
    assert!(
        over_the_most.is_empty(),
        "estimates above the most the cells can have counted: {over_the_most:?}"
    );
    assert!(
        relative_error(estimated, RUNS) <= 0.01,
        "{estimated} estimated of {RUNS} in {intervals} intervals, {ahead} of them with the \
         cells ahead of the interval's totals"
    );
}

/// The program's parser, packet by packet, against what each packet is:
/// IPv6 through extension headers to its ports, IPv6 fragments after the
/// first apart (not ipv6_other), ports never read past the IPv6 payload
/// (from padding), and IP versions that are not their ethertype's refused.
#[test]
fn the_program_classes_ipv6_extensions_fragments_and_versions() {
    use sketch_protocol::*;
    use Extension::*;
    let _pinned = PinnedToCpu0::new();
    let (s, d): (IpAddr, IpAddr) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
    let (s4, d4): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
    let flow = Class::Flow(FlowKey::new(s, d, 1000, 80, 6));
    let hop = Options { kind: 0, units: 1 };
    let routing = Options { kind: 43, units: 2 };
    let later = Fragment {
        offset: 100,
        more: true,
    };
    let first = Fragment {
        offset: 0,
        more: true,
    };
    let ipv6 = |extensions: &[Extension], proto| {
        ipv6_with_extensions(s, d, 1000, 80, proto, extensions, 150)
    };
    let with_payload = |mut f: Vec<u8>, length| {
        set_ipv6_payload_length(&mut f, length);
        f
    };
    let with_version = |mut f: Vec<u8>, version| {
        set_ip_version(&mut f, version);
        f
    };
    let cases: Vec<(&str, Vec<u8>, Class)> = vec![
        ("hop-by-hop, routing", ipv6(&[hop, routing], 6), flow),
        ("a first fragment", ipv6(&[hop, first], 6), flow),
        (
            "a later fragment",
            ipv6(&[later], 6),
            Class::Protocol(SKETCH_PROTO_FRAGMENT),
        ),
        (
            "a later fragment after options",
            ipv6(&[hop, routing, later], 17),
            Class::Protocol(SKETCH_PROTO_FRAGMENT),
        ),
        (
            "ICMPv6 after hop-by-hop",
            ipv6(&[hop], 58),
            Class::Protocol(SKETCH_PROTO_ICMPV6),
        ),
        (
            "five extension headers",
            ipv6(&[hop, routing, routing, routing, first], 6),
            Class::Protocol(SKETCH_PROTO_IPV6_OTHER),
        ),
        (
            "ports at the payload's end",
            with_payload(frame(s, d, 1000, 80, 6, false, 100), 4),
            flow,
        ),
        (
            "ports past the payload's end",
            with_payload(frame(s, d, 1000, 80, 6, false, 100), 3),
            Class::Protocol(SKETCH_PROTO_OTHER),
        ),
        (
            "an empty payload",
            with_payload(frame(s, d, 1000, 80, 6, false, 100), 0),
            Class::Protocol(SKETCH_PROTO_OTHER),
        ),
        (
            "a fragment header in padding",
            with_payload(ipv6(&[later], 6), 4),
            Class::Protocol(SKETCH_PROTO_OTHER),
        ),
        (
            "IPv6 saying version 4",
            with_version(frame(s, d, 1000, 80, 6, false, 100), 4),
            Class::Protocol(SKETCH_PROTO_OTHER),
        ),
        (
            "IPv4 saying version 6",
            with_version(frame(s4, d4, 1000, 80, 6, false, 100), 6),
            Class::Protocol(SKETCH_PROTO_OTHER),
        ),
        (
            "IPv4 saying version 0",
            with_version(frame(s4, d4, 1000, 80, 6, false, 100), 0),
            Class::Protocol(SKETCH_PROTO_OTHER),
        ),
    ];
    let geometry = Geometry::new(1, 256).unwrap();
    let sampling = Sampling::new(1.0).unwrap();
    let mut variates = Variates::new(sampling, 9);
    let mut storage = MaybeUninit::uninit();
    let loaded = Loaded::load(&mut storage, geometry, &mut variates).expect("loading the sketch");
    let mut failures = Vec::new();
    for (what, packet, expected) in cases {
        assert_eq!(classify(&packet), expected, "the reference on {what}");
        let before = loaded.slots().read().counters;
        assert_eq!(loaded.test_run(&packet).unwrap(), 2, "XDP_PASS");
        let counted = loaded.slots().read().counters.since(&before);
        assert_eq!(counted.packets, 1, "{what}: sampled");
        let classes: Vec<&str> = PROTOCOLS
            .iter()
            .enumerate()
            .filter(|&(i, _)| counted.proto_packets[i] != 0)
            .map(|(_, &p)| protocol_name(p))
            .collect();
        let got = match (classes.as_slice(), counted.cells.iter().any(|c| c[0] != 0)) {
            ([], true) => "flow",
            ([class], false) => class,
            _ => panic!("{what}: counted as {classes:?} and by flow"),
        };
        let wanted = match expected {
            Class::Flow(_) => "flow",
            Class::Protocol(p) => protocol_name(p),
        };
        if got != wanted {
            failures.push(format!("{what}: {got}, not {wanted}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(
        loaded.slots().candidates(),
        [FlowKey::new(s, d, 1000, 80, 6)],
        "the flow's key, from its ports wherever they were"
    );
}

/// Without top-ups the ring runs dry: every gap taken again is counted,
/// and the program and the reference pick the same ones.
#[test]
fn a_dry_ring_reuses_gaps_counted_and_exactly_as_the_reference() {
    exact_run(3, 1024, &[1.0, 0.5], 13, None);
}

/// A Zipf-distributed trace: frames of `flows` distinct UDP/TCP flows, the
/// k-th heaviest drawn with probability proportional to k^-skew.
struct ZipfTrace {
    frames: Vec<Vec<u8>>,
    keys: Vec<FlowKey>,
    draws: Vec<usize>,
}

impl ZipfTrace {
    fn new(flows: usize, packets: usize, skew: f64, seed: u64) -> ZipfTrace {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut frames = Vec::new();
        let mut keys = Vec::new();
        for i in 0..flows {
            let v6 = i % 4 == 0;
            let proto = if i % 2 == 0 { 17 } else { 6 };
            let (s, d) = (addr(&mut rng, v6), addr(&mut rng, v6));
            let (sport, dport) = (rng.random(), rng.random());
            frames.push(frame(
                s,
                d,
                sport,
                dport,
                proto,
                false,
                64 + (i * 37) % 1200,
            ));
            keys.push(FlowKey::new(s, d, sport, dport, proto));
        }
        let zipf = Zipf::new(flows as f64, skew).unwrap();
        let draws = (0..packets)
            .map(|_| rng.sample(zipf) as usize - 1)
            .collect();
        ZipfTrace {
            frames,
            keys,
            draws,
        }
    }

    /// Exact packets and bytes per flow, heaviest first.
    fn exact(&self) -> Vec<(FlowKey, u64, u64)> {
        let mut counts: HashMap<usize, (u64, u64)> = HashMap::new();
        for &i in &self.draws {
            let c = counts.entry(i).or_default();
            c.0 += 1;
            c.1 += self.frames[i].len() as u64;
        }
        let mut exact: Vec<(FlowKey, u64, u64)> = counts
            .into_iter()
            .map(|(i, (p, b))| (self.keys[i], p, b))
            .collect();
        exact.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        exact
    }
}

/// Runs the trace through the reference at probability `p`, ranking
/// candidates every `interval` packets as the live host does every
/// interval, and returns the final top-`k` with the sketch's counters.
fn sketch_trace(
    trace: &ZipfTrace,
    p: f64,
    k: usize,
) -> (Vec<(FlowKey, Estimate)>, Reference, Geometry) {
    const INTERVAL: usize = 50_000;
    let geometry = Geometry::new(DEFAULT_ROWS, DEFAULT_COLUMNS).unwrap();
    let mut reference = Reference::new(
        geometry,
        Variates::new(Sampling::new(p).unwrap(), 5).slot_start(geometry.rows()),
    );
    let mut top = TopK::new(k);
    for chunk in trace.draws.chunks(INTERVAL) {
        for &i in chunk {
            reference.process(&trace.frames[i]);
        }
        top.rank(
            reference.counters(),
            geometry,
            reference.candidates().copied(),
        );
    }
    let ranked = top.rank(
        reference.counters(),
        geometry,
        reference.candidates().copied(),
    );
    (ranked, reference, geometry)
}

fn relative_error(estimate: f64, exact: u64) -> f64 {
    (estimate - exact as f64).abs() / exact as f64
}

#[test]
fn zipf_top10_found_within_5_percent_at_p1() {
    let trace = ZipfTrace::new(20_000, 500_000, 1.1, 21);
    let exact = trace.exact();
    let (ranked, _, _) = sketch_trace(&trace, 1.0, 10);
    let found: Vec<FlowKey> = ranked.iter().map(|(k, _)| *k).collect();
    for (rank, (key, packets, bytes)) in exact.iter().take(10).enumerate() {
        let Some((_, e)) = ranked.iter().find(|(k, _)| k == key) else {
            panic!("flow of rank {rank} ({packets} packets) not in the top-10: {found:?}");
        };
        assert!(
            relative_error(e.packets, *packets) <= 0.05,
            "rank {rank}: {} vs {packets}",
            e.packets
        );
        assert!(
            relative_error(e.bytes, *bytes) <= 0.05,
            "rank {rank}: {} vs {bytes} bytes",
            e.bytes
        );
    }
}

#[test]
fn zipf_estimates_within_10_percent_at_p001() {
    let trace = ZipfTrace::new(20_000, 8_000_000, 1.1, 22);
    let exact = trace.exact();
    let (ranked, reference, geometry) = sketch_trace(&trace, 0.01, 20);
    let found: HashSet<FlowKey> = ranked.iter().map(|(k, _)| *k).collect();
    for (rank, (key, packets, bytes)) in exact.iter().take(10).enumerate() {
        assert!(
            found.contains(key),
            "flow of rank {rank} not among the top-20"
        );
        let e = query::flow(reference.counters(), geometry, key);
        assert!(
            relative_error(e.packets, *packets) <= 0.10,
            "rank {rank}: {} vs {packets}",
            e.packets
        );
        assert!(
            relative_error(e.bytes, *bytes) <= 0.10,
            "rank {rank}: {} vs {bytes} bytes",
            e.bytes
        );
    }
    // Skipped packets are still counted exactly.
    assert_eq!(reference.counters().packets, trace.draws.len() as u64);
}

/// `netto sketch` on the host end of a veth pair, started and waited for.
fn start_sketch(
    iface: &str,
    extra: &[&str],
) -> (common::Guarded, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(common::NETTO)
        .args(["sketch", "--iface", iface, "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning netto sketch");
    let stderr = child.stderr.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = common::Guarded(child);
    common::wait_for_line(stderr, "netto: sketch attached", Duration::from_secs(30));
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn bpftool(object: &str) -> Vec<serde_json::Value> {
    let out = Command::new("bpftool")
        .args([object, "show", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

/// Ids of loaded sketch programs, `netto_sketch_<log2 columns>` (other
/// netto programs may belong to other runs on this host).
fn sketch_programs() -> Vec<u64> {
    bpftool("prog")
        .iter()
        .filter(|p| {
            p["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("netto_sketch_"))
        })
        .filter_map(|p| p["id"].as_u64())
        .collect()
}

fn sketch_links() -> usize {
    let programs = sketch_programs();
    bpftool("link")
        .iter()
        .filter(|l| {
            l["prog_id"]
                .as_u64()
                .is_some_and(|id| programs.contains(&id))
        })
        .count()
}

fn xdp_on(iface: &str) -> bool {
    let out = Command::new("ip")
        .args(["link", "show", "dev", iface])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

/// Sends `count` datagrams of `size` bytes per flow from inside the
/// namespace to the host end, paced so no veth queue overflows.
fn send_flows(pair: &VethPair, flows: &[(u16, u16, usize)], size: usize) {
    let (peer, host) = (pair.peer_addr(), pair.host_addr());
    thread::scope(|scope| {
        scope
            .spawn(|| {
                pair.enter_current_thread().unwrap();
                let payload = vec![0x5a; size];
                for &(sport, dport, count) in flows {
                    let socket = UdpSocket::bind((peer, sport)).unwrap();
                    for i in 0..count {
                        socket.send_to(&payload, (host, dport)).unwrap();
                        if i % 50 == 49 {
                            thread::sleep(Duration::from_millis(1));
                        }
                    }
                }
            })
            .join()
            .unwrap();
    });
}

#[test]
fn live_top_k_finds_the_flows_on_a_veth() {
    let pair = common::veth_pair("sketch").unwrap();
    let iface = pair.host_ifname().to_owned();
    let (mut child, lines) = start_sketch(
        &iface,
        &["--probability", "1", "--interval", "0.5", "--top", "5"],
    );
    assert!(xdp_on(&iface), "no XDP program on {iface} while netto runs");
    let flows = [
        (40001, 9001, 3000),
        (40002, 9002, 2000),
        (40003, 9003, 1000),
    ];
    send_flows(&pair, &flows, 200);
    // Until the program has seen every datagram and one more interval
    // ended (a loaded machine can take a while), then stop it.
    let mut snapshots: Vec<SketchSnapshot> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut after_all = 0;
    while after_all < 2 && Instant::now() < deadline {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
            snapshots.push(serde_json::from_str(&line).expect("bad JSON line"));
            let seen: u64 = snapshots.iter().map(|s| s.packets).sum();
            if seen >= 6000 {
                after_all += 1;
            }
        }
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert!(
        child.0.wait().unwrap().success(),
        "netto sketch did not exit cleanly"
    );
    assert!(!xdp_on(&iface), "XDP program left on {iface} after exit");
    assert!(snapshots.len() >= 2, "{} snapshots", snapshots.len());
    assert!(snapshots
        .iter()
        .all(|s| s.mode == XdpMode::Native && s.iface == iface));
    let mut found: HashMap<(u16, u16), (u64, u64)> = HashMap::new();
    for s in &snapshots {
        for e in &s.top {
            if e.flow.src == pair.peer_addr().to_string() && e.flow.proto == "udp" {
                let c = found.entry((e.flow.sport, e.flow.dport)).or_default();
                c.0 += e.packets;
                c.1 += e.bytes;
            }
        }
    }
    // 200 bytes of payload + UDP, IPv4 and Ethernet headers.
    let frame = 200 + 8 + 20 + 14;
    for (sport, dport, count) in flows {
        let (packets, bytes) = found.get(&(sport, dport)).copied().unwrap_or_default();
        assert!(
            relative_error(packets as f64, count as u64) <= 0.02,
            "flow {sport}->{dport}: {packets} packets estimated, {count} sent; snapshots {snapshots:?}"
        );
        assert!(
            relative_error(bytes as f64, (count * frame) as u64) <= 0.02,
            "{bytes} bytes"
        );
    }
    let seen: u64 = snapshots.iter().map(|s| s.packets).sum();
    assert!(seen >= 6000, "the program saw {seen} packets");
    let runs: u64 = snapshots.iter().map(|s| s.cost.run_count).sum();
    // One run per packet; the reads of runs and packets are microseconds
    // apart, so a stray neighbour solicitation may fall between them.
    assert!(runs.abs_diff(seen) <= 2, "{runs} runs for {seen} packets");
    assert!(snapshots.iter().any(|s| s.cost.ns_per_packet > 0.0));
}

/// Ctrl-C in the middle of an interval prints that interval, cut short:
/// every packet the program saw up to the stop is in the output.
#[test]
fn ctrl_c_prints_the_interval_in_progress() {
    let pair = common::veth_pair("sketchc").unwrap();
    let iface = pair.host_ifname().to_owned();
    let (mut child, lines) = start_sketch(&iface, &["--probability", "1", "--interval", "60"]);
    let started = Instant::now();
    send_flows(&pair, &[(40021, 9021, 500)], 200);
    thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert!(
        child.0.wait().unwrap().success(),
        "netto sketch did not exit cleanly"
    );
    let ran = started.elapsed().as_secs_f64();
    assert!(!xdp_on(&iface), "XDP program left on {iface} after exit");
    // netto has exited: its output ends once the pipe is read.
    let snapshots: Vec<SketchSnapshot> = lines
        .iter()
        .map(|line| serde_json::from_str(&line).expect("bad JSON line"))
        .collect();
    assert_eq!(snapshots.len(), 1, "one interval, cut short by the stop");
    let s = &snapshots[0];
    assert!(
        s.interval_s < ran + 1.0,
        "the interval ran {} s, netto ran about {ran:.2} s",
        s.interval_s
    );
    assert!(s.packets >= 500, "{} packets", s.packets);
    let flow = s
        .top
        .iter()
        .find(|e| e.flow.sport == 40021 && e.flow.dport == 9021)
        .expect("the flow among the top");
    assert!(
        relative_error(flow.packets as f64, 500) <= 0.02,
        "{} packets estimated",
        flow.packets
    );
}

#[test]
fn sigkill_leaves_no_xdp_program_behind() {
    let pair = common::veth_pair("sketchk").unwrap();
    let iface = pair.host_ifname().to_owned();
    let (mut child, _lines) = start_sketch(&iface, &[]);
    assert!(xdp_on(&iface));
    assert_eq!(
        sketch_links(),
        1,
        "the sketch is attached through a BPF link"
    );
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while (xdp_on(&iface) || !sketch_programs().is_empty()) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    assert!(!xdp_on(&iface), "XDP program left on {iface} after SIGKILL");
    assert_eq!(sketch_links(), 0);
    assert!(sketch_programs().is_empty(), "netto_sketch still loaded");
}

#[test]
fn bad_input_is_one_line_and_attaches_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--iface", "nosuchif0"],
            "no network interface named \"nosuchif0\"",
        ),
        (&["--iface", "lo", "--probability", "0"], "outside (0, 1]"),
        (
            &["--iface", "lo", "--probability", "1.01"],
            "outside (0, 1]",
        ),
        (&["--iface", "lo", "--probability", "nan"], "outside (0, 1]"),
        (
            &["--iface", "lo", "--rows", "0"],
            "rows must be between 1 and 8",
        ),
        (
            &["--iface", "lo", "--rows", "12"],
            "rows must be between 1 and 8",
        ),
        (&["--iface", "lo", "--columns", "1000"], "power of two"),
        (&["--iface", "lo", "--columns", "8"], "power of two"),
        (
            &["--iface", "lo", "--rows", "8", "--columns", "4096"],
            "need 104 bits",
        ),
    ];
    for (args, mentions) in cases {
        let mut all = vec!["sketch"];
        all.extend_from_slice(args);
        let out = common::netto(&all);
        common::assert_clean_failure(&out, mentions);
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with("netto: "),
            "{args:?}"
        );
        assert!(!xdp_on("lo"), "{args:?} attached to lo");
        assert!(
            sketch_programs().is_empty(),
            "{args:?} left a program loaded"
        );
    }
}

/// `--xdp-sketch` co-hosts the sketch with the accounting: every snapshot
/// of `netto stat` carries its flows and cost, and it is gone afterwards.
/// With `--by flow`, the heavy hitter is joined to its connection's flows
/// by tuple: the receiving socket here and the sender in the namespace.
#[test]
fn stat_cohosts_the_sketch() {
    let pair = common::veth_pair("sketchs").unwrap();
    let iface = pair.host_ifname().to_owned();
    let stat = common::NettoStat::start(
        0,
        &["--interval", "0.5", "--xdp-sketch", &iface, "--by", "flow"],
    );
    assert!(
        xdp_on(&iface),
        "no XDP program on {iface} while netto stat runs"
    );
    let sink = common::Server::start(common::loadgen(&format!(
        "discard --proto tcp --listen {}:9012 --duration 3",
        pair.host_addr()
    )));
    let sent = common::run_client(common::loadgen_in(
        &pair,
        &format!(
            "send --proto tcp --syscall write --dest {}:9012 --duration 1",
            pair.host_addr()
        ),
    ));
    send_flows(&pair, &[(40011, 9011, 500)], 200);
    sink.finish(0.0);
    thread::sleep(Duration::from_secs(1));
    let snapshots = stat.stop();
    assert!(sent.bytes > 0);
    let (peer, host) = (pair.peer_addr(), pair.host_addr());
    // The TCP connection's data arrives on the interface: joined to the
    // sink's accepted socket here and to the sender's in the namespace.
    let joined: Vec<(&Snapshot, u16)> = snapshots
        .iter()
        .filter_map(|s| {
            let e =
                s.sketch.as_ref()?.top.iter().find(|e| {
                    e.flow.proto == "tcp" && e.flow.dport == 9012 && !e.flows.is_empty()
                })?;
            Some((s, e.flow.sport))
        })
        .collect();
    assert!(
        !joined.is_empty(),
        "no heavy hitter joined to the connection: {:?}; groups {:?}",
        snapshots
            .iter()
            .filter_map(|s| s.sketch.as_ref())
            .map(|k| k
                .top
                .iter()
                .map(|e| (&e.flow, &e.flows))
                .collect::<Vec<_>>())
            .collect::<Vec<_>>(),
        snapshots
            .iter()
            .filter_map(|s| s.attribution.as_ref())
            .map(|a| a.groups.iter().map(|g| &g.name).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    // An interval may hold a connection's bytes and none of its time (its
    // call's time settles in the next one), so time is asked of the run.
    let mut joined_ns = 0;
    for (s, sport) in joined {
        let wanted = [
            format!("{host}:9012 -> {peer}:{sport} tcp"),
            format!("{peer}:{sport} -> {host}:9012 tcp"),
        ];
        let sketch = s.sketch.as_ref().unwrap();
        let estimate = sketch.top.iter().find(|e| e.flow.dport == 9012).unwrap();
        assert_eq!(estimate.flows, wanted);
        let groups = &s.attribution.as_ref().unwrap().groups;
        let own: u64 = groups
            .iter()
            .filter(|g| wanted.contains(&g.name))
            .map(|g| g.total_ns())
            .sum();
        assert_eq!(estimate.network_ns(s.attribution.as_ref()), Some(own));
        joined_ns += own;
    }
    assert!(joined_ns > 0, "the joined flows took no time");
    assert!(!xdp_on(&iface), "XDP program left on {iface} after exit");
    let sketches: Vec<&SketchSnapshot> =
        snapshots.iter().filter_map(|s| s.sketch.as_ref()).collect();
    assert_eq!(
        sketches.len(),
        snapshots.len(),
        "a snapshot without the sketch"
    );
    assert!(sketches.iter().all(|s| s.iface == iface));
    let packets: u64 = sketches.iter().map(|s| s.packets).sum();
    assert!(packets >= 500, "the co-hosted sketch saw {packets} packets");
}
