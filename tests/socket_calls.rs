//! sock_send / sock_recv against the kernel's accounting of the process
//! itself: a load process pinned to CPU 1 (netto and the peer stay on CPU 0)
//! makes one kind of socket call in a loop; what netto charges on CPU 1 must
//! match the process's own system time from /proc/PID/stat. Needs root and
//! BPF.

mod common;

use std::thread;
use std::time::Duration;

use common::*;
use netto::model::{EventKey, Losses, Snapshot, SoftirqVector};
use netto::workload::netns::VethPair;

const UNDER_TEST: usize = 1;
const SEND_SECONDS: u64 = 3;
/// Receivers run longer on the host: their system time is smaller, and it
/// is sampled by the tick (HZ=250 here), so a short run is a noisy
/// reference for their floor.
const RECV_SECONDS: u64 = 6;
/// Every loop in the emulated guests, where stretching the host's by
/// [`scaled_secs`] gave 9 s and 18 s. Their receivers and TCP senders have
/// no time floor ([`recv_floor`], [`send_floor`]); their UDP senders' floor
/// held with room in 9 s (0.84-0.93 of the system time against 0.6 on
/// 6.1); the fewest sends a 9 s loop made there were 995 sendmmsg calls
/// (31 840 datagrams), the fewest receives 5 972 splices, so 6 s keeps
/// every loop well over its 1 000. It saves CI about a minute per row.
const GUEST_SECONDS: u64 = 6;

/// How long a loop runs: `host_seconds` on the host.
fn loop_seconds(host_seconds: u64) -> u64 {
    if emulated() {
        GUEST_SECONDS
    } else {
        host_seconds
    }
}

/// Quiet time before each run, longer than netto's interval, so no interval
/// holds the tail of one run and the start of the next.
const GAP: Duration = Duration::from_millis(600);

struct Bench {
    pair: VethPair,
    netto: NettoStat,
}

impl Bench {
    /// Jumbo frames: large datagrams without IP fragmentation keep the
    /// calls busy with real work, so the fixed cost of entering and leaving
    /// each syscall (outside the sys_enter..sys_exit window, see docs/src/concepts/backends.md) and
    /// the tick-accounting bias at each return to user mode stay small.
    /// BPF run-time statistics stay off: they add clock reads to every
    /// syscall hook, which the kernel bills to the process under test.
    fn new(tag: &str) -> Bench {
        let pair = common::veth_pair(tag).expect("creating the test namespace");
        pair.set_mtu(9000).expect("setting the veth MTU");
        let netto = NettoStat::start(0, &["--interval", "0.25", "--no-bpf-stats"]);
        Bench { pair, netto }
    }

    /// Stopped at once after the last run: netto prints the interval in
    /// progress at a stop, so the last run's end is in it. (When netto did
    /// not, this waited a gap first; stopped at once, it had lost that
    /// interval's part of the last run: on the host, 230 326 windows for
    /// 246 351 calls of the splice sender, the last of its test. The window
    /// counts of every run are asserted, the last one's included.)
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

/// How many `key` windows netto opened while `run` was alive, on any CPU:
/// at least one per call of the loop, or netto missed calls. A fentry
/// window is a socket function, which one sendfile, splice or recvmmsg call
/// may enter more than once; a call that failed for a moment opened one too.
fn windows(snaps: &[Snapshot], run: &LoadReport, key: EventKey) -> u64 {
    overlapping(snaps, run.started, run.ended)
        .iter()
        .map(|s| s.event(key).count)
        .sum()
}

/// What else ran on the CPU under test while `run` was alive, as shares of
/// its system time, printed beside each ratio to read a failure by:
/// network timers, the softirq vectors other than NET_RX/NET_TX (the
/// network timers' among them) and hardirqs. The kernel bills these to
/// whichever task they interrupt, the idle task included. And what netto
/// counted as lost meanwhile: a task window lost at a switch leaves the
/// rest of that call uncharged.
fn beside(snaps: &[Snapshot], run: &LoadReport, stolen: u64) -> String {
    let window = overlapping(snaps, run.started, run.ended);
    let share = |ns: u64| ns as f64 / run.stime_ns as f64;
    let timers = event_on_cpu(&window, EventKey::NetTimers, UNDER_TEST);
    let other: u64 = window
        .iter()
        .flat_map(|s| &s.softirq)
        .filter(|(v, _)| !matches!(v, SoftirqVector::NetRx | SoftirqVector::NetTx))
        .map(|(_, t)| t.per_cpu_ns[UNDER_TEST])
        .sum();
    let hardirq: u64 = window
        .iter()
        .map(|s| s.hardirq.per_cpu_ns[UNDER_TEST])
        .sum();
    let lost: Losses = window.iter().map(|s| s.losses).sum();
    format!(
        "beside: net_timers {:.3}, other softirqs {:.3}, hardirq {:.3}, stolen by the host {:.3}; \
         netto lost {} task windows, {} BPF runs",
        share(timers),
        share(other),
        share(hardirq),
        share(stolen),
        lost.task_storage_failures,
        lost.recursion_misses
    )
}

/// The least share of a sender's system time its window alone holds, as a
/// part of its [`send_floor`].
const ALONE_OF_FLOOR: f64 = 2.0 / 3.0;

/// The least share of a sender's system time its window and softirqs hold,
/// where that time is a reference. A splice sender makes two system calls
/// a round, file -> pipe (page cache, no socket call) and pipe -> socket,
/// as a splice receiver does: half the floor, like the receiver's. sendfile
/// makes the same round inside one system call (the kernel's own pipe): a
/// tracepoint window holds all of it, a fentry window only the socket
/// function (guests: 0.47-0.80 of the system time), so with fentry it has
/// splice's floor.
///
/// None for a TCP sender in the emulated guests: there its system time,
/// while it sleeps on its full send buffer thousands of times a second, is
/// no reference. The same 9 s sendfile load read 0.48-0.85 over five runs
/// of the tracepoint backend, 0.27 on a slower day, and 0.17 on 6.12 (a
/// window of 0.71 s against 4.36 s of system time); in the runs after it
/// (0.40-0.46) netto opened one window for each of the loop's calls and
/// lost no task window, and the interrupts and softirqs the kernel bills
/// to the task (printed beside each ratio) do not account for the rest.
/// The floor went to a half, then a quarter; lowering it again would test
/// the guest's accounting, not netto. There the window count stands in:
/// one per call, which a backend that missed calls would not have. On the
/// host sendfile reads 0.79-0.92 and keeps the floor.
fn send_floor(proto: &str, syscall: &str) -> Option<f64> {
    let through_a_pipe =
        syscall == "splice" || (syscall == "sendfile" && windows_are_socket_functions());
    if proto == "tcp" && emulated() {
        None
    } else if through_a_pipe {
        Some(window_floor() / 2.0)
    } else {
        Some(window_floor())
    }
}

/// The least share of a receiver's system time its window holds, where
/// that time is a reference: on the host. A splice receiver makes two
/// system calls a round, socket -> pipe (the window) and pipe -> /dev/null
/// (no socket call): half the floor (0.60 of its system time here).
///
/// None in the emulated guests, for the reason a TCP sender has none there
/// ([`send_floor`]): a receiver sleeps on its empty socket thousands of
/// times a second, and the guest's system time for such a task is no
/// reference. A UDP recvmmsg receiver read 0.52-0.93 of it in the guests'
/// runs, then 0.31 in CI on 6.1 (fentry). The window count stands in.
fn recv_floor(syscall: &str) -> Option<f64> {
    if emulated() {
        None
    } else if syscall == "splice" {
        Some(window_floor() / 2.0)
    } else {
        Some(window_floor())
    }
}

#[test]
fn every_send_variant_is_charged_like_the_kernel_charges_it() {
    let bench = Bench::new("send");
    let variants = [
        ("udp", "sendto", 5401),
        ("udp", "sendmsg", 5402),
        ("udp", "sendmmsg", 5403),
        ("udp", "write", 5404),
        ("tcp", "sendfile", 5405),
        ("tcp", "splice", 5406),
    ];
    let seconds = loop_seconds(SEND_SECONDS);
    let mut runs = Vec::new();
    for (proto, syscall, port) in variants {
        let dest = format!("{}:{port}", bench.pair.peer_addr());
        let size = if proto == "udp" { 8000 } else { 65536 };
        let sink = Server::start(loadgen_in(
            &bench.pair,
            &format!(
                "discard --proto {proto} --listen {dest} --duration {} --cpu 0",
                2 * seconds
            ),
        ));
        thread::sleep(GAP);
        let stolen = Stolen::start(UNDER_TEST);
        let run = run_client(loadgen(&format!(
            "send --proto {proto} --syscall {syscall} --dest {dest} --duration {seconds} \
             --cpu {UNDER_TEST} --size {size}"
        )));
        let stolen = stolen.ns();
        drop(sink);
        // Enough sends for the run to mean something. A sendmmsg call
        // carries a batch of datagrams, so its datagrams count: the 6.1
        // guest made 995 such calls in 9 s (31 840 datagrams), 1 277 in
        // another run.
        let sends = if syscall == "sendmmsg" {
            run.bytes / size
        } else {
            run.calls
        };
        eprintln!(
            "{proto} {syscall}: {sends} sends, {} calls, {} bytes, {} ns system time in {:.1} s",
            run.calls,
            run.bytes,
            run.stime_ns,
            run.ended - run.started
        );
        assert!(
            sends > 1000,
            "{proto} {syscall}: only {sends} sends in {} calls",
            run.calls
        );
        runs.push((proto, syscall, run, stolen));
    }
    let snaps = bench.finish();
    for (proto, syscall, run, stolen) in &runs {
        let (send, softirq) = charged(&snaps, run, EventKey::SockSend);
        let sys = run.stime_ns as f64;
        let ratio = (send + softirq) as f64 / sys;
        let alone = send as f64 / sys;
        let windows = windows(&snaps, run, EventKey::SockSend);
        eprintln!(
            "{proto} {syscall}: sock_send {send} + softirq {softirq} ns vs system time {sys} ns: \
             {ratio:.2}, alone {alone:.2}; {windows} windows for {} calls; {}",
            run.calls,
            beside(&snaps, run, *stolen)
        );
        assert!(
            windows >= run.calls,
            "{proto} {syscall}: {windows} windows for {} calls",
            run.calls
        );
        assert!(
            ratio <= kernel_time_ceiling(1.05, run.stime_ns, *stolen),
            "{proto} {syscall}: sock_send+softirq is {ratio:.2} of system time"
        );
        if let Some(floor) = send_floor(proto, syscall) {
            assert!(
                ratio >= floor,
                "{proto} {syscall}: sock_send+softirq is {ratio:.2} of system time"
            );
            // Most of it is the sender's own window, not the softirq beside
            // it: the veth peer's receive, run inline in the sender's calls,
            // took 0.3-0.5 of a UDP sender's system time (half on a slow day:
            // `alone` 0.48-0.50, which 0.8 of the floor failed).
            assert!(
                alone >= ALONE_OF_FLOOR * floor,
                "{proto} {syscall}: sock_send alone is {alone:.2} of system time"
            );
        }
    }
}

#[test]
fn every_recv_variant_is_charged_like_the_kernel_charges_it() {
    let bench = Bench::new("recv");
    // UDP receivers are fed datagrams by a batching sender; splice out of
    // a socket is offered for TCP, fed by a bulk writer.
    let variants = [
        ("udp", "recvfrom"),
        ("udp", "recvmsg"),
        ("udp", "recvmmsg"),
        ("udp", "read"),
        ("udp", "readv"),
        ("tcp", "splice"),
    ];
    let seconds = loop_seconds(RECV_SECONDS);
    let mut runs = Vec::new();
    for ((proto, syscall), port) in variants.into_iter().zip(5501..) {
        // The receiver listens in the root namespace on the CPU under test;
        // the sender in the namespace keeps it fed from CPU 0.
        let listen = format!("{}:{port}", bench.pair.host_addr());
        thread::sleep(GAP);
        let stolen = Stolen::start(UNDER_TEST);
        let receiver = Server::start(loadgen(&format!(
            "recv --proto {proto} --syscall {syscall} --listen {listen} --duration {seconds} \
             --cpu {UNDER_TEST}"
        )));
        let started = now_unix();
        let (sender, size) = match proto {
            "udp" => ("sendmmsg", 8000),
            _ => ("write", 65536),
        };
        run_client(loadgen_in(
            &bench.pair,
            &format!(
                "send --proto {proto} --syscall {sender} --dest {listen} --duration {seconds} \
                 --cpu 0 --size {size}"
            ),
        ));
        let run = receiver.finish(started);
        let stolen = stolen.ns();
        assert!(
            run.calls > 1000,
            "{proto} {syscall}: only {} calls",
            run.calls
        );
        runs.push((proto, syscall, run, stolen));
    }
    let snaps = bench.finish();
    for (proto, syscall, run, stolen) in &runs {
        let (recv, _) = charged(&snaps, run, EventKey::SockRecv);
        let ratio = recv as f64 / run.stime_ns as f64;
        let windows = windows(&snaps, run, EventKey::SockRecv);
        eprintln!(
            "{proto} {syscall}: sock_recv {recv} ns vs system time {} ns: {ratio:.2}; \
             {windows} windows for {} calls; {}",
            run.stime_ns,
            run.calls,
            beside(&snaps, run, *stolen)
        );
        assert!(
            windows >= run.calls,
            "{proto} {syscall}: {windows} windows for {} calls",
            run.calls
        );
        assert!(
            ratio <= kernel_time_ceiling(1.05, run.stime_ns, *stolen),
            "{proto} {syscall}: sock_recv is {ratio:.2} of system time"
        );
        if let Some(floor) = recv_floor(syscall) {
            assert!(
                ratio >= floor,
                "{proto} {syscall}: sock_recv is {ratio:.2} of system time"
            );
        }
    }
}

#[test]
fn reading_a_regular_file_is_not_a_socket_receive() {
    let bench = Bench::new("file");
    thread::sleep(GAP);
    let run = run_client(loadgen(&format!(
        "read-file --duration {} --cpu {UNDER_TEST}",
        loop_seconds(SEND_SECONDS)
    )));
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
