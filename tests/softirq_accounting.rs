//! Softirq accounting against the kernel's own (tick-sampled) figures, under
//! TCP (BBR) and UDP load through a veth pair into a namespace the test
//! builds. Needs root and BPF.

mod common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::*;
use netto::collect::Collector;
use netto::kernel::selection::Storage;
use netto::model::{EventKey, Snapshot, SoftirqVector};

#[test]
fn softirq_vectors_agree_with_proc_stat_and_network_dominates() {
    let pair = common::veth_pair("sirq").expect("creating the test namespace");
    let peer = pair.peer_addr().to_string();
    let tcp_dest = format!("{peer}:5301");
    let udp_dest = format!("{peer}:5302");
    let tcp_sink = Server::start(loadgen_in(
        &pair,
        &format!("discard --proto tcp --listen {tcp_dest} --duration 8"),
    ));
    let udp_sink = Server::start(loadgen_in(
        &pair,
        &format!("discard --proto udp --listen {udp_dest} --duration 8"),
    ));
    let netto = NettoStat::start(0, &["--interval", "0.5"]);

    let started = now_unix();
    let stolen = Stolen::start_host();
    let softirq_before = proc_stat_softirq_ns();
    let interrupts_before = proc_interrupts_hooked();
    let tcp = thread::spawn(move || {
        run_client(loadgen(&format!(
            "send --proto tcp --syscall write --dest {tcp_dest} --duration 4 --congestion bbr"
        )))
    });
    let udp = run_client(loadgen(&format!(
        "send --proto udp --syscall sendto --dest {udp_dest} --duration 4"
    )));
    let tcp = tcp.join().expect("tcp sender");
    let softirq_after = proc_stat_softirq_ns();
    let stolen = stolen.ns();
    let interrupts_after = proc_interrupts_hooked();
    let ended = now_unix();
    let snaps = netto.stop();
    drop((tcp_sink, udp_sink));
    assert!(
        tcp.bytes > 10_000_000 && udp.bytes > 1_000_000,
        "too little load: {tcp:?} {udp:?}"
    );

    let window = overlapping(&snaps, started, ended);
    assert!(window.len() >= 8, "only {} intervals", window.len());
    let total = |key| window.iter().map(|s| s.event(key).total_ns).sum::<u64>();
    let softirq_ns: u64 = window.iter().map(|s| s.softirq_total_ns()).sum();
    let kernel_ns = softirq_after - softirq_before;
    let ratio = softirq_ns as f64 / kernel_ns as f64;
    eprintln!(
        "softirqs: netto {softirq_ns} ns, /proc/stat {kernel_ns} ns; the host stole {stolen} ns"
    );
    // /proc/stat leaves stolen ticks out of the softirq time.
    assert!(
        (0.7..=kernel_time_ceiling(1.3, kernel_ns, stolen)).contains(&ratio),
        "netto softirq {softirq_ns} ns vs /proc/stat {kernel_ns} ns (ratio {ratio:.2}), \
         the host stole {stolen} ns"
    );

    // BBR's pacing timers interrupt tens of thousands of times a second:
    // netto's count of hardirqs follows the kernel's.
    let hardirqs: u64 = window.iter().map(|s| s.hardirq.count).sum();
    let kernel_irqs = interrupts_after - interrupts_before;
    let ratio = hardirqs as f64 / kernel_irqs as f64;
    eprintln!("hardirqs: netto {hardirqs}, /proc/interrupts {kernel_irqs}");
    assert!(
        kernel_irqs > 10_000 && (0.9..=1.1).contains(&ratio),
        "netto counted {hardirqs} hardirqs, /proc/interrupts {kernel_irqs} (ratio {ratio:.2})"
    );

    for vector in netto::model::SoftirqVector::ALL {
        let ns: u64 = window.iter().map(|s| s.softirq[&vector].total_ns).sum();
        eprintln!("{:<9} {:>12} ns", vector.name(), ns);
    }
    for key in EventKey::ALL {
        eprintln!("{:<15} {:>12} ns", key.name(), total(key));
    }
    let network =
        total(EventKey::NetRxSoftirq) + total(EventKey::NetTxSoftirq) + total(EventKey::NetTimers);
    let share = network as f64 / softirq_ns as f64;
    assert!(
        share >= 0.85,
        "network events are {share:.2} of softirq time"
    );

    let timers = total(EventKey::NetTimers);
    let paced: u64 = window
        .iter()
        .filter_map(|s| s.net_timer_callbacks.get("tcp_pace_kick"))
        .sum();
    assert!(timers > 1_000_000, "net_timers only {timers} ns under BBR");
    assert!(paced > 0, "no tcp_pace_kick time under BBR");

    // Network callbacks run inside the timer-like softirqs, on each CPU:
    // over the run their time can never exceed those softirqs' time. Not
    // per interval: a softirq run that straddles an interval's end has its
    // time outside callbacks counted as it passes, but shared out to
    // net_timers at its exit, in the next interval.
    use netto::model::SoftirqVector::{Hi, Hrtimer, Tasklet, Timer};
    for cpu in 0..snaps[0].cpus {
        let timers: u64 = snaps
            .iter()
            .map(|s| s.event(EventKey::NetTimers).per_cpu_ns[cpu])
            .sum();
        let room: u64 = snaps
            .iter()
            .flat_map(|s| {
                [Hi, Timer, Tasklet, Hrtimer]
                    .iter()
                    .map(|v| s.softirq[v].per_cpu_ns[cpu])
            })
            .sum();
        assert!(
            timers <= room,
            "cpu {cpu}: net_timers {timers} ns > timer softirqs {room} ns over the run"
        );
    }
}

/// Time on CPU of every threaded NAPI poller on the host, in ns, from the
/// scheduler's exact run time (/proc/PID/schedstat), not tick samples.
fn napi_threads_cpu_ns() -> u64 {
    let mut ns = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        if !comm.starts_with("napi/") {
            continue;
        }
        let Ok(schedstat) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        ns += schedstat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    ns
}

/// With threaded NAPI the receive path runs in a kernel thread with bottom
/// halves off and never enters the NET_RX softirq; netto charges that
/// thread's time to net_rx_softirq (docs/src/concepts/measured.md).
#[test]
fn threaded_napi_polling_is_net_rx_time() {
    let pair = common::veth_pair("napi").expect("creating the test namespace");
    let peer_if = pair.peer_ifname();
    // GRO makes the receiving veth poll through NAPI, for TCP only when the
    // sending side does not hand it TSO super-packets; `threaded` moves
    // that poll into a kthread.
    let mut host = std::process::Command::new("ethtool");
    host.args(["-K", pair.host_ifname(), "tso", "off"]);
    let mut gro = pair.command("ethtool");
    gro.args(["-K", peer_if, "gro", "on"]);
    let mut threaded = pair.command("sh");
    threaded.args(["-c", &format!("echo 1 > /sys/class/net/{peer_if}/threaded")]);
    for mut command in [host, gro, threaded] {
        let status = command.status().expect("running the device set-up");
        assert!(status.success(), "{command:?} failed");
    }
    let dest = format!("{}:5311", pair.peer_addr());
    let sink = Server::start(loadgen_in(
        &pair,
        &format!("discard --proto udp --listen {dest} --duration 8"),
    ));
    let netto = NettoStat::start(0, &["--interval", "0.5"]);
    let started = now_unix();
    let stolen = Stolen::start_host();
    let napi_before = napi_threads_cpu_ns();
    let sent = run_client(loadgen(&format!(
        "send --proto udp --syscall sendto --dest {dest} --duration {}",
        scaled_secs(4)
    )));
    let napi_ns = napi_threads_cpu_ns() - napi_before;
    let stolen = stolen.ns();
    let ended = now_unix();
    let snaps = netto.stop();
    drop(sink);

    assert!(sent.bytes > 10_000_000, "too little load: {sent:?}");
    assert!(
        napi_ns > 50_000_000,
        "the NAPI threads barely ran ({napi_ns} ns): is the poll threaded?"
    );
    let window = overlapping(&snaps, started, ended);
    let sum = |ns: fn(&Snapshot) -> u64| window.iter().map(|s| ns(s)).sum::<u64>();
    let net_rx = sum(|s| s.event(EventKey::NetRxSoftirq).total_ns);
    let vector = sum(|s| s.softirq[&SoftirqVector::NetRx].total_ns);
    let threaded = net_rx - vector;
    eprintln!(
        "net_rx_softirq {net_rx} ns, of it outside the NET_RX softirq {threaded} ns; \
         NAPI threads ran {napi_ns} ns; the host stole {stolen} ns from the CPUs"
    );
    // The thread's run time also holds the interrupts and softirqs that run
    // inside it, which are charged to keys of their own; the share was
    // 0.47-0.84 over three runs at load 8. Without NAPI threads it is 0.
    // The run time leaves out what the host stole, netto's clock does not.
    let share = threaded as f64 / napi_ns as f64;
    assert!(
        (0.4..=kernel_time_ceiling(1.05, napi_ns, stolen)).contains(&share),
        "net_rx_softirq outside the softirq is {share:.2} of the NAPI threads' run time"
    );
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; the calls only read it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set),
            0,
            "pinning to CPU {cpu}"
        );
    }
}

/// A NET_RX load of short softirqs with idle time between them: one
/// datagram every millisecond from CPU 1 over the veth, whose receive path
/// runs in a NET_RX softirq on that CPU, until `stop`.
fn sparse_net_rx(dest: String, stop: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        pin_to(1);
        let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
        let mut sent = 0;
        while !stop.load(Ordering::Relaxed) {
            sent += u64::from(socket.send_to(&[0u8; 64], &dest).is_ok());
            thread::sleep(Duration::from_millis(1));
        }
        sent
    })
}

/// Attaching while NET_RX softirqs run (docs/src/concepts/measured.md): netto
/// attaches every program that ends a state before any that begins one.
/// Entries first, a softirq beginning between the two attaches and ending
/// before its exit is attached left NET_RX set on its CPU until the next
/// softirq ended there, and the idle time in between counted as NET_RX.
/// Each trial attaches during a sparse NET_RX load on CPU 1, stops it, and
/// measures CPU 1 idle: no NET_RX time at all may land there. (The race
/// window is the ~0.2 ms between two attaches, so a trial hits it rarely;
/// the order that closes it is checked in every trial, and for every
/// program in src/kernel/accounting.rs's unit test.)
#[test]
fn attaching_while_net_rx_runs_leaves_no_idle_time_in_net_rx() {
    let pair = common::veth_pair("attach").expect("creating the test namespace");
    let dest = format!("{}:5312", pair.peer_addr());
    let _sink = Server::start(loadgen_in(
        &pair,
        &format!("discard --proto udp --listen {dest} --duration 60"),
    ));
    for trial in 0..5 {
        let stop = Arc::new(AtomicBool::new(false));
        let sender = sparse_net_rx(dest.clone(), Arc::clone(&stop));
        thread::sleep(Duration::from_millis(200));
        let mut storage = Storage::default();
        let accounting = library_accounting(&mut storage);
        stop.store(true, Ordering::Relaxed);
        let sent = sender.join().unwrap();
        assert!(sent > 100, "trial {trial}: only {sent} datagrams sent");
        let attached = accounting.attached();
        let at = |name| attached.iter().position(|p| *p == name).unwrap();
        assert!(
            at("netto_softirq_exit") < at("netto_softirq_entry"),
            "entries attached before exits: {attached:?}"
        );

        let mut collector = Collector::start(&accounting, false).unwrap();
        thread::sleep(Duration::from_millis(500));
        // A context switch on CPU 1 charges whatever state it is in.
        let status = std::process::Command::new("taskset")
            .args(["-c", "1", "true"])
            .status()
            .unwrap();
        assert!(status.success());
        let snapshot = collector.collect(Default::default()).unwrap();
        let idle_net_rx = snapshot.event(EventKey::NetRxSoftirq).per_cpu_ns[1];
        eprintln!("trial {trial}: {sent} datagrams; NET_RX on idle CPU 1: {idle_net_rx} ns");
        assert!(
            idle_net_rx < 1_000_000,
            "trial {trial}: {idle_net_rx} ns of NET_RX on CPU 1 after its load stopped"
        );
    }
}
