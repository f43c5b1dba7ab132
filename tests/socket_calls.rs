//! sock_send / sock_recv against the kernel's accounting of the process
//! itself: a load process pinned to CPU 1 (netto and the peer stay on CPU 0)
//! makes one kind of socket call in a loop; what netto charges on CPU 1 must
//! match the process's own system time. Needs root and BPF.

mod common;

use std::thread;
use std::time::Duration;

use common::*;
use netto::model::{EventKey, Snapshot};
use netto::netns::VethPair;

const UNDER_TEST: usize = 1;
const SECONDS: &str = "3";
/// Quiet time before each run, longer than netto's interval, so no interval
/// holds the tail of one run and the start of the next.
const GAP: Duration = Duration::from_millis(600);

struct Bench {
    pair: VethPair,
    netto: NettoStat,
}

impl Bench {
    /// BPF run-time statistics stay off: they add clock reads to every
    /// syscall hook, which the kernel bills to the process under test.
    fn new(tag: &str) -> Bench {
        let pair = VethPair::create(tag).expect("creating the test namespace");
        let netto = NettoStat::start(0, &["--interval", "0.25", "--no-bpf-stats"]);
        Bench { pair, netto }
    }

    fn dest(&self, port: u16) -> String {
        format!("{}:{port}", self.pair.peer_addr())
    }

    fn finish(self) -> Vec<Snapshot> {
        self.netto.stop()
    }
}

/// (sock event, NET_RX + NET_TX) on the CPU under test while `run` was alive.
fn charged(snaps: &[Snapshot], run: &LoadReport, key: EventKey) -> (u64, u64) {
    let window = overlapping(snaps, run.started, run.ended);
    let softirq = event_on_cpu(&window, EventKey::NetRxSoftirq, UNDER_TEST)
        + event_on_cpu(&window, EventKey::NetTxSoftirq, UNDER_TEST);
    (event_on_cpu(&window, key, UNDER_TEST), softirq)
}

fn send_variant(bench: &Bench, proto: &str, syscall: &str, port: u16) -> LoadReport {
    let dest = bench.dest(port);
    let sink = Server::start(loadgen_in(
        &bench.pair,
        &[
            "sink",
            "--proto",
            proto,
            "--listen",
            &dest,
            "--duration",
            "6",
            "--cpu",
            "0",
        ],
    ));
    thread::sleep(GAP);
    let run = run_client(loadgen(&[
        "send",
        "--proto",
        proto,
        "--syscall",
        syscall,
        "--dest",
        &dest,
        "--duration",
        SECONDS,
        "--cpu",
        "1",
        "--size",
        if proto == "udp" { "8000" } else { "65536" },
    ]));
    drop(sink);
    assert!(
        run.calls > 1000,
        "{proto} {syscall}: only {} calls",
        run.calls
    );
    run
}

#[test]
fn every_send_variant_is_charged_like_the_kernel_charges_it() {
    let bench = Bench::new("send");
    // Large datagrams without fragmentation: fewer kernel exits per second
    // means less of the tick-sampled system time lands in user time (a tick
    // pending on the syscall exit path fires after the return to user mode),
    // which otherwise pushes netto's exact figure above the kernel's.
    bench.pair.set_mtu(9000).expect("setting the veth MTU");
    let variants = [
        ("udp", "sendto", 5401),
        ("udp", "sendmsg", 5402),
        ("udp", "sendmmsg", 5403),
        ("udp", "write", 5404),
        ("tcp", "sendfile", 5405),
    ];
    let runs: Vec<(&str, &str, LoadReport)> = variants
        .iter()
        .map(|&(proto, syscall, port)| (proto, syscall, send_variant(&bench, proto, syscall, port)))
        .collect();
    let snaps = bench.finish();
    for (proto, syscall, run) in &runs {
        let (send, softirq) = charged(&snaps, run, EventKey::SockSend);

        let sys = run.stime_ns as f64;
        let ratio = (send + softirq) as f64 / sys;
        let alone = send as f64 / sys;
        eprintln!("{proto} {syscall}: sock_send {send} + softirq {softirq} ns vs system time {sys} ns: {ratio:.2}, alone {alone:.2}");
        assert!(
            (0.6..=1.05).contains(&ratio),
            "{proto} {syscall}: sock_send+softirq is {ratio:.2} of system time"
        );
        assert!(
            alone >= 0.25,
            "{proto} {syscall}: sock_send alone is {alone:.2} of system time"
        );
    }
}

#[test]
fn every_recv_variant_is_charged_like_the_kernel_charges_it() {
    let bench = Bench::new("recv");
    // Jumbo frames and a batching sender keep the receiver busy with whole
    // 8000-byte datagrams: with tiny datagrams and a receiver that sleeps
    // between them, the fixed cost of entering and leaving each syscall
    // (outside the sys_enter..sys_exit window) dominates; see README.
    bench.pair.set_mtu(9000).expect("setting the veth MTU");
    let variants = [
        ("udp", "recvfrom", 5501),
        ("udp", "recvmsg", 5502),
        ("udp", "recvmmsg", 5503),
        ("udp", "read", 5504),
        ("udp", "readv", 5505),
    ];
    let mut runs = Vec::new();
    for (proto, syscall, port) in variants {
        // The receiver listens in the root namespace (pinned to the CPU
        // under test); the sender sends from inside the namespace on CPU 0.
        let listen = format!("{}:{port}", bench.pair.host_addr());
        thread::sleep(GAP);
        let receiver = Server::start(loadgen(&[
            "recv",
            "--proto",
            proto,
            "--syscall",
            syscall,
            "--listen",
            &listen,
            "--duration",
            SECONDS,
            "--cpu",
            "1",
        ]));
        let started = now_unix();
        let sender_syscall = if proto == "udp" { "sendmmsg" } else { "write" };
        let sender = loadgen_in(
            &bench.pair,
            &[
                "send",
                "--proto",
                proto,
                "--syscall",
                sender_syscall,
                "--dest",
                &listen,
                "--duration",
                SECONDS,
                "--cpu",
                "0",
                "--size",
                "8000",
            ],
        );
        let _ = run_client(sender);
        let run = receiver.finish(started);
        assert!(
            run.calls > 1000,
            "{proto} {syscall}: only {} calls",
            run.calls
        );
        runs.push((proto, syscall, run));
    }
    let snaps = bench.finish();
    for (proto, syscall, run) in &runs {
        let (recv, _) = charged(&snaps, run, EventKey::SockRecv);
        let ratio = recv as f64 / run.stime_ns as f64;
        eprintln!(
            "{proto} {syscall}: sock_recv {recv} ns vs system time {} ns: {ratio:.2}",
            run.stime_ns
        );
        assert!(
            (0.6..=1.05).contains(&ratio),
            "{proto} {syscall}: sock_recv is {ratio:.2} of system time"
        );
    }
}

#[test]
fn reading_a_regular_file_is_not_a_socket_receive() {
    let bench = Bench::new("file");
    thread::sleep(GAP);
    let run = run_client(loadgen(&["read-file", "--duration", SECONDS, "--cpu", "1"]));
    let snaps = bench.finish();
    assert!(
        run.calls > 1000 && run.stime_ns > 100_000_000,
        "the reader barely ran: {run:?}"
    );
    let window = overlapping(&snaps, run.started, run.ended);
    let recv = event_on_cpu(&window, EventKey::SockRecv, UNDER_TEST);
    assert!(
        (recv as f64) < 0.01 * run.stime_ns as f64,
        "file reads charged {recv} ns to sock_recv (reader system time {} ns)",
        run.stime_ns
    );
}
