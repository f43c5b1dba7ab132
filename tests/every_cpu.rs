//! Every CPU of the host counted, sampled and shown, whatever their number:
//! under a bounded loopback load pinned to each CPU, `netto stat` gives
//! each CPU its time, `netto record` samples each CPU, and `netto top
//! --replay` shows that recording with a row per CPU. The suite runs it on
//! the host's CPUs; the kernel matrix's wide mode (`cargo xtask vm-matrix
//! --wide`) runs it in a guest of sixteen, and says so in
//! `NETTO_TEST_CPUS`, which the test then holds the guest to.

mod common;

use std::net::UdpSocket;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::pane::Pane;
use common::*;
use netto::model::{EventKey, Recording};

/// The CPUs of a list in /sys/devices/system/cpu (`online`: those running;
/// `possible`: those netto sizes its per-CPU figures for), from the
/// kernel's format: `0-3,5`.
fn cpu_list(name: &str) -> Vec<usize> {
    let text = std::fs::read_to_string(format!("/sys/devices/system/cpu/{name}")).unwrap();
    text.trim()
        .split(',')
        .flat_map(|range| {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            first.parse().unwrap()..=last.parse().unwrap()
        })
        .collect()
}

/// A discarding UDP receiver pinned to each CPU on loopback, there for
/// the whole test (and killed with it): each phase's senders start at once.
struct Sinks {
    /// Each CPU and its sink's address.
    dests: Vec<(usize, String)>,
    _servers: Vec<Server>,
}

impl Sinks {
    fn start(cpus: &[usize]) -> Sinks {
        let mut dests = Vec::new();
        let mut servers = Vec::new();
        for &cpu in cpus {
            // A port no one holds: the kernel's pick, let go for the sink.
            let port = UdpSocket::bind("127.0.0.1:0")
                .and_then(|s| s.local_addr())
                .unwrap()
                .port();
            let dest = format!("127.0.0.1:{port}");
            servers.push(Server::start(loadgen(&format!(
                "discard --proto udp --listen {dest} --duration {} --cpu {cpu}",
                scaled_secs(120)
            ))));
            dests.push((cpu, dest));
        }
        Sinks {
            dests,
            _servers: servers,
        }
    }

    /// A sender on each CPU to that CPU's sink for `seconds`, to their
    /// end: every CPU sends, receives and runs NET_RX.
    fn load(&self, seconds: u64) {
        let mut senders: Vec<Guarded> = self
            .dests
            .iter()
            .map(|(cpu, dest)| {
                let sender: Child = loadgen(&format!(
                    "send --proto udp --syscall sendto --dest {dest} --duration {seconds} --cpu {cpu}"
                ))
                .stdout(Stdio::null())
                .spawn()
                .expect("spawning loadgen");
                Guarded(sender)
            })
            .collect();
        for sender in &mut senders {
            let status = exit_within(
                &mut sender.0,
                Duration::from_secs(seconds) + scaled(Duration::from_secs(30)),
                "a pinned sender still runs",
            );
            assert!(status.success(), "loadgen send: {status}");
        }
    }
}

#[test]
fn every_cpu_is_counted_sampled_and_shown() {
    undo_on_signals();
    let online = cpu_list("online");
    let cpus = cpu_list("possible").len();
    if let Ok(wanted) = std::env::var("NETTO_TEST_CPUS") {
        assert_eq!(online.len().to_string(), wanted, "the guest's online CPUs");
    }
    let seconds = scaled_secs(3);
    let sinks = Sinks::start(&online);

    // stat: each CPU's time, in every event the load makes. netto attaches
    // and detaches with no load running: in the emulated guests a kernel
    // patching its tracepoints' sites while every vCPU runs through them
    // has panicked on int3 (docs/src/journal/2026-11-29-wide-guest.md).
    let stat = NettoStat::start(0, &[]);
    sinks.load(seconds);
    let snaps = stat.stop();
    assert!(snaps.iter().all(|s| s.cpus == cpus), "{cpus} CPUs");
    let all: Vec<_> = snaps.iter().collect();
    for key in [
        EventKey::SockSend,
        EventKey::SockRecv,
        EventKey::NetRxSoftirq,
    ] {
        let per_cpu: Vec<u64> = online.iter().map(|&c| event_on_cpu(&all, key, c)).collect();
        eprintln!("stat {}: ns per online CPU {per_cpu:?}", key.name());
        assert!(
            per_cpu.iter().all(|&ns| ns > 0),
            "{} not counted on every CPU: {per_cpu:?}",
            key.name()
        );
    }

    // record: samples from each CPU, none unsampled.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("every-cpu.json");
    let duration = (seconds + scaled_secs(4)).to_string();
    let mut record = start_record(&["--duration", &duration], &path);
    sinks.load(seconds);
    assert!(
        record.0.try_wait().unwrap().is_none(),
        "netto record ended ({duration} s) before the load did"
    );
    let status = exit_within(
        &mut record.0,
        scaled(Duration::from_secs(60)),
        "netto record past its duration",
    );
    assert!(status.success(), "netto record: {status}");
    let recording: Recording = netto::recording::load(&path)
        .expect("a recording netto reads")
        .into_inner();
    let mut samples = vec![0u64; cpus];
    for snapshot in &recording.snapshots {
        assert_eq!(snapshot.cpus, cpus);
        assert_eq!(snapshot.losses.unsampled_cpus, 0, "a CPU without a sampler");
        for stack in &snapshot.stacks {
            for (&cpu, &n) in &stack.cpus {
                samples[cpu as usize] += n;
            }
        }
    }
    eprintln!("record: samples per CPU {samples:?}");
    assert!(
        online.iter().all(|&c| samples[c] > 0),
        "an online CPU without samples: {samples:?}"
    );

    // top --replay of that recording: a row per CPU, the last one reached
    // by scrolling, at the smallest screen top draws.
    let pane = Pane::new(80, 24);
    pane.run_netto(&format!("top --replay {} --speed inf", path.display()));
    pane.wait_for("end of the replay", scaled(Duration::from_secs(30)), |s| {
        s.contains("finished; q quits")
    });
    pane.keys(&["c"]);
    let title = format!("{cpus} CPUs");
    let screen = pane.wait_for("the per-CPU view", Duration::from_secs(5), |s| {
        s.contains("% of each CPU") && s.contains(&title) && s.contains("cpu0 ")
    });
    let shown = 5;
    if cpus > shown {
        assert!(
            screen.contains(&format!("rows 1-{shown} of {cpus}")),
            "{screen}"
        );
    }
    for _ in 1..cpus {
        pane.keys(&["Down"]);
    }
    let last = format!("cpu{} ", cpus - 1);
    pane.wait_for("the last CPU's row", Duration::from_secs(5), |s| {
        s.contains(&last)
    });
    pane.keys(&["q"]);
    let screen = pane.wait_for("exit status", scaled(Duration::from_secs(5)), |s| {
        s.contains("EXIT=")
    });
    assert!(screen.contains("EXIT=0"), "{screen}");
}
