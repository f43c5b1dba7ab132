//! Softirq accounting against the kernel's own (tick-sampled) figures, under
//! TCP (BBR) and UDP load through a veth pair into a namespace the test
//! builds. Needs root and BPF.

mod common;

use std::thread;

use common::*;
use netto::model::EventKey;
use netto::workload::netns::VethPair;

#[test]
fn softirq_vectors_agree_with_proc_stat_and_network_dominates() {
    let pair = VethPair::create("sirq").expect("creating the test namespace");
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
    let softirq_before = proc_stat_softirq_ns();
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
    assert!(
        (0.7..=1.3).contains(&ratio),
        "netto softirq {softirq_ns} ns vs /proc/stat {kernel_ns} ns (ratio {ratio:.2})"
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

    // Network callbacks run inside the timer-like softirqs, on each CPU and
    // in every interval: their time can never exceed those softirqs' time.
    use netto::model::SoftirqVector::{Hi, Hrtimer, Tasklet, Timer};
    for snap in &snaps {
        for cpu in 0..snap.cpus {
            let timers = snap.event(EventKey::NetTimers).per_cpu_ns[cpu];
            let room: u64 = [Hi, Timer, Tasklet, Hrtimer]
                .iter()
                .map(|v| snap.softirq[v].per_cpu_ns[cpu])
                .sum();
            assert!(
                timers <= room,
                "cpu {cpu}: net_timers {timers} ns > timer softirqs {room} ns in {:?}",
                snap.net_timer_callbacks
            );
        }
    }
}
