//! The stack sampler, driven directly through the library: samples taken in
//! NET_RX agree with the exact NET_RX time, and a buffer too small for the
//! rate drops (and says so) instead of delivering garbage. Both transports.
//! A reader that gives up waiting for writers drops whole halves, counts
//! them, and still delivers no garbage. Needs root and BPF.

mod common;

use std::mem::MaybeUninit;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use netto::breakdown::fold::Folder;
use netto::breakdown::leave_out_softirq_loop;
use netto::collect::Collector;
use netto::kernel::accounting::recursion_miss_is_loss;
use netto::kernel::sampler::{Sampler, SamplerConfig, SamplerCounters, Transport, WRITER_WAIT};
use netto::kernel::selection::Storage;
use netto::kernel::stats::ProgramRun;
use netto::model::{SampleContext, Snapshot, Tier};
use netto::symbols::symbolizer::Symbolizer;
use netto::workload::undo::{self, Registered};

/// Lowest address of the x86-64 kernel half: every real frame is above it.
const KERNEL_SPACE: u64 = 0xffff_8000_0000_0000;

/// Samples by context as netto counts them (the samples it leaves out in
/// the softirq loop apart), and the stacks that could not be real.
struct Tally {
    per_context: [u64; SampleContext::ALL.len()],
    softirq_loop: u64,
    bad_stacks: u64,
}

/// How the test drains: how often, and how long the reader waits for
/// writers before it gives a half up.
struct Reader {
    every: Duration,
    writer_wait: Duration,
}

/// As netto itself reads.
const NETTO_READER: Reader = Reader {
    every: Duration::from_millis(100),
    writer_wait: WRITER_WAIT,
};

/// What a run saw: the samples read, the interval's snapshot, the
/// sampler's counters and every accounting program's statistics.
struct Run {
    tally: Tally,
    snapshot: Snapshot,
    counters: SamplerCounters,
    programs: Vec<ProgramRun>,
}

/// Samples and accounts `seconds` of TCP through a veth pair, sender and
/// receiver on CPU 1: unpinned, where the kernel's scheduler put them moved
/// NET_RX's agreement widely between runs (docs/src/concepts/breakdown.md,
/// "Agreement").
fn run(
    transport: Transport,
    frequency_hz: u64,
    slots: Option<u32>,
    seconds: u64,
    reader: Reader,
) -> Run {
    let pair = common::veth_pair("sample").expect("creating the test namespace");
    let dest = format!("{}:5601", pair.peer_addr());
    let mut acct_storage = Storage::default();
    let accounting = library_accounting(&mut acct_storage);
    let mut sampler_storage = MaybeUninit::uninit();
    let mut sampler = Sampler::load(
        &mut sampler_storage,
        &accounting,
        SamplerConfig {
            frequency_hz,
            transport,
            drain_period: Duration::from_millis(100),
            slots_per_half: slots,
            writer_wait: reader.writer_wait,
            tier: Tier::Exact,
        },
    )
    .unwrap();
    let mut symbolizer = Symbolizer::load().unwrap();
    let mut folder = Folder::new();
    let mut collector = Collector::start(&accounting, false).unwrap();
    // Started only now: its lifetime must cover the load, not BPF
    // verification, which takes many seconds in an emulated guest.
    let _sink = Server::start(loadgen_in(
        &pair,
        &format!(
            "discard --proto tcp --listen {dest} --duration {} --cpu 1",
            seconds + 3
        ),
    ));
    let load = thread::spawn(move || {
        run_client(loadgen(&format!(
            "send --proto tcp --syscall write --dest {dest} --duration {seconds} --cpu 1"
        )))
    });
    let mut bad_stacks = 0;
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        thread::sleep(reader.every);
        sampler
            .drain(|s| {
                folder.add(s.cpu, s.context, s.group, s.frames);
                let plausible = !s.frames.is_empty()
                    && s.frames.len() <= 64
                    && s.frames.iter().all(|&f| f >= KERNEL_SPACE);
                if !plausible {
                    bad_stacks += 1;
                }
            })
            .unwrap();
    }
    let snapshot = collector.collect(Default::default()).unwrap();
    load.join().unwrap();
    let mut stacks = folder.take(&mut symbolizer, |_| None);
    let mut tally = Tally {
        per_context: [0; SampleContext::ALL.len()],
        softirq_loop: leave_out_softirq_loop(&mut stacks),
        bad_stacks,
    };
    for stack in &stacks {
        tally.per_context[stack.context as usize] += stack.count;
    }
    Run {
        tally,
        snapshot,
        counters: sampler.counters(),
        programs: accounting.program_stats(),
    }
}

/// NET_RX samples against the exact NET_RX time, absolutely and relative
/// to the other network contexts. Absolutely they read 0.96-1.09 in six
/// runs on a quiet machine here (load average 0.7-1.3) and 0.68-0.79 in
/// CI runs: samples x period is not
/// NET_RX's time where a virtual CPU loses time to its host (the exact
/// clock keeps running in whatever context the CPU was, the sampling timer
/// misses the periods), so the absolute bound only catches gross errors
/// (none or twice the samples). Such losses hit every context alike, so
/// NET_RX's share of the network samples against its share of the exact
/// network time is held to 35 %: the ringbuf run read 1.30 in CI, the
/// bias issue 34 calibrates (docs/src/concepts/breakdown.md, "Agreement").
fn agreement(transport: Transport) {
    let frequency = 1000;
    let Run {
        tally,
        snapshot,
        counters,
        ..
    } = run(transport, frequency, None, 10, NETTO_READER);
    let period_ns = 1e9 / frequency as f64;
    let exact = |context: SampleContext| snapshot.event(context.event()).total_ns as f64;
    let sampled = |context: SampleContext| tally.per_context[context as usize] as f64 * period_ns;
    assert_eq!(tally.bad_stacks, 0);
    assert_eq!(
        counters.dropped, 0,
        "the default buffer dropped samples at 1 kHz"
    );
    assert_eq!(
        counters.dropped_halves, 0,
        "a reader waiting 100 ms gave up"
    );
    let absolute = sampled(SampleContext::NetRx) / exact(SampleContext::NetRx);
    let all_sampled: f64 = SampleContext::ALL.into_iter().map(sampled).sum();
    let all_exact: f64 = SampleContext::ALL.into_iter().map(exact).sum();
    let relative = absolute / (all_sampled / all_exact);
    let agreements: Vec<String> = SampleContext::ALL
        .into_iter()
        .filter(|&c| exact(c) > 0.0)
        .map(|c| format!("{} {:.2}", c.name(), sampled(c) / exact(c)))
        .collect();
    eprintln!(
        "{}: NET_RX agreement {absolute:.2}, relative to all network contexts {relative:.2}; \
         {}; samples {:?}, {} left out in the softirq loop",
        transport.name(),
        agreements.join(", "),
        tally.per_context,
        tally.softirq_loop
    );
    assert!(
        (0.5..=1.5).contains(&absolute),
        "sampled NET_RX is {absolute:.2} of the exact time"
    );
    assert!(
        (0.8..=1.35).contains(&relative),
        "NET_RX's share of the samples is {relative:.2} of its share of the exact time"
    );
    assert!(
        tally.per_context[SampleContext::SockSend as usize] > 0,
        "no samples inside socket sends"
    );
}

#[test]
fn net_rx_samples_agree_with_exact_time_mmap() {
    agreement(Transport::Mmap);
}

#[test]
fn net_rx_samples_agree_with_exact_time_ringbuf() {
    agreement(Transport::Ringbuf);
}

fn overflow(transport: Transport) {
    let Run {
        tally, counters, ..
    } = run(transport, 10_000, Some(4), 3, NETTO_READER);
    let dropped = counters.dropped;
    let taken: u64 = tally.per_context.iter().sum();
    eprintln!("{}: {taken} samples, {dropped} dropped", transport.name());
    assert!(dropped > 0, "a 4-slot buffer at 10 kHz must drop");
    assert!(taken > 0, "nothing got through");
    assert_eq!(tally.bad_stacks, 0, "garbage stacks delivered");
}

#[test]
fn tiny_buffer_drops_and_stays_correct_mmap() {
    overflow(Transport::Mmap);
}

#[test]
fn tiny_buffer_drops_and_stays_correct_ringbuf() {
    overflow(Transport::Ringbuf);
}

/// A reader that never waits, draining in a loop, gives up every half a
/// writer is still inside when it looks: those halves are counted, their samples count as
/// dropped, and a given-up half goes back to the writers only once they
/// have left it (else two writers could share a slot: garbage stacks).
#[test]
fn late_reader_drops_whole_halves_and_counts_them() {
    let reader = Reader {
        // As often as it can: every swap a writer is inside gives a half up.
        every: Duration::ZERO,
        writer_wait: Duration::ZERO,
    };
    let Run {
        tally, counters, ..
    } = run(Transport::Mmap, 10_000, None, 3, reader);
    let taken: u64 = tally.per_context.iter().sum();
    eprintln!(
        "late reader: {taken} samples read, {} dropped in {} halves given up",
        counters.dropped, counters.dropped_halves
    );
    assert!(counters.dropped_halves > 0, "no half was given up");
    assert!(counters.dropped > 0, "halves given up, no sample counted");
    assert!(taken > 0, "nothing got through");
    assert_eq!(tally.bad_stacks, 0, "garbage stacks delivered");
}

/// A reader that swaps halves as often as it can, but waits for writers as
/// netto does, loses no sample: a writer that announced itself in a half
/// the reader had just retired leaves it and writes into the new one. At
/// thousands of swaps a second, writers lose that race many times in a
/// run; the buffer holds a second's samples, so none is lost for room.
#[test]
fn swapping_halves_under_writers_loses_nothing() {
    let reader = Reader {
        every: Duration::ZERO,
        writer_wait: WRITER_WAIT,
    };
    let Run {
        tally, counters, ..
    } = run(Transport::Mmap, 10_000, Some(20_000), 3, reader);
    let taken: u64 = tally.per_context.iter().sum();
    eprintln!(
        "swapping reader: {taken} samples read, {} dropped, {} halves given up",
        counters.dropped, counters.dropped_halves
    );
    assert!(taken > 1000, "only {taken} samples read");
    assert_eq!(counters.dropped, 0, "samples lost to swaps");
    assert_eq!(counters.dropped_halves, 0);
    assert_eq!(tally.bad_stacks, 0, "garbage stacks delivered");
}

/// Recursion misses are read from every accounting program, with run-time
/// statistics off. At 10 kHz the sampler's timer interrupts nest in the
/// hrtimer hooks, which the kernel then skips: read, but no loss (a run in
/// hardirq does nothing). No other program misses a run, and nothing else
/// is lost.
#[test]
fn recursion_misses_are_read_and_only_losses_count() {
    let Run {
        snapshot, programs, ..
    } = run(Transport::Mmap, 10_000, None, 5, NETTO_READER);
    assert!(programs.len() > 10, "{} programs read", programs.len());
    let (harmless, losing): (Vec<_>, Vec<_>) = programs
        .iter()
        .filter(|p| p.stats.recursion_misses > 0)
        .partition(|p| !recursion_miss_is_loss(&p.name));
    eprintln!("recursion misses: harmless {harmless:?}, losing {losing:?}");
    assert!(
        !harmless.is_empty(),
        "no hrtimer hook missed a run at 10 kHz"
    );
    assert!(losing.is_empty(), "programs lost runs: {losing:?}");
    assert_eq!(snapshot.losses.recursion_misses, 0);
    assert_eq!(snapshot.losses.task_storage_failures, 0);
}

/// Takes CPU 1 offline, and brings it back when dropped, whatever happens
/// (a signal too: `common::undo_on_signals`).
struct Offline {
    /// Forgotten once `drop` has brought the CPU back.
    _undo: Registered,
}

const CPU1_ONLINE: &str = "/sys/devices/system/cpu/cpu1/online";

impl Offline {
    fn cpu1() -> Offline {
        common::undo_on_signals();
        let undo = undo::register(|| {
            let _ = std::fs::write(CPU1_ONLINE, "1");
        });
        std::fs::write(CPU1_ONLINE, "0").expect("taking CPU 1 offline");
        Offline { _undo: undo }
    }
}

impl Drop for Offline {
    fn drop(&mut self) {
        std::fs::write(CPU1_ONLINE, "1").expect("bringing CPU 1 back online");
    }
}

/// The sampler as netto runs it at 1000 Hz, for the tests of its events.
const EVERY_CPU_AT_1000_HZ: SamplerConfig = SamplerConfig {
    frequency_hz: 1000,
    transport: Transport::Mmap,
    drain_period: Duration::from_millis(100),
    slots_per_half: None,
    writer_wait: WRITER_WAIT,
    tier: Tier::Exact,
};

/// A CPU that goes offline loses its perf event; the sampler gives it a new
/// one when it is back, so load on it afterwards is sampled again.
#[test]
fn a_cpu_back_from_offline_is_sampled_again() {
    let pair = common::veth_pair("hotplug").expect("creating the test namespace");
    let dest = format!("{}:5602", pair.peer_addr());
    let mut acct_storage = Storage::default();
    let accounting = library_accounting(&mut acct_storage);
    let mut sampler_storage = MaybeUninit::uninit();
    let mut sampler =
        Sampler::load(&mut sampler_storage, &accounting, EVERY_CPU_AT_1000_HZ).unwrap();
    // Off and back on between two looks at the CPUs: the online list is
    // the same, only the dead event tells.
    drop(Offline::cpu1());
    thread::sleep(Duration::from_millis(300));

    let seconds = 3;
    let _sink = Server::start(loadgen_in(
        &pair,
        &format!(
            "discard --proto udp --listen {dest} --duration {}",
            seconds + 3
        ),
    ));
    let load = thread::spawn(move || {
        run_client(loadgen(&format!(
            "send --proto udp --syscall sendto --dest {dest} --duration {seconds} --cpu 1"
        )))
    });
    let mut on_cpu1 = 0;
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        thread::sleep(Duration::from_millis(100));
        sampler.follow_cpus().unwrap();
        sampler.drain(|s| on_cpu1 += u64::from(s.cpu == 1)).unwrap();
    }
    load.join().unwrap();
    eprintln!("{on_cpu1} samples on CPU 1 after it came back");
    assert!(
        on_cpu1 > 100,
        "CPU 1 was barely sampled after coming back online: {on_cpu1} samples"
    );
}

#[test]
fn a_measuring_command_starts_under_a_soft_file_limit_of_40() {
    let out = std::process::Command::new("prlimit")
        .args(["--nofile=40:", NETTO, "stat", "--duration", "1", "--json"])
        .output()
        .expect("running prlimit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let snapshot: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {stdout:.300} {stderr}"));
    assert!(snapshot["interval_s"].as_f64().unwrap() > 0.0, "{snapshot}");
}
