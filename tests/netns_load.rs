//! End-to-end checks of the test topology, the load generator and the demo. They
//! create real namespaces and veth pairs, so they need root; every resource they make
//! sits in a guard that removes it even when an assertion fails, and a signal that
//! ends the test process removes what is left (`common::undo_on_signals`).

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use netto::workload::demo::Demo;
use netto::workload::netns::{self, VethPair};
use netto::workload::undo::{self, Registered};
use serde_json::Value;

const LOADGEN: &str = env!("CARGO_BIN_EXE_netto-loadgen");

/// Long enough never to end on its own during a test; tests stop receivers with
/// SIGTERM once the sender is done, which also exercises the early-stop path.
const RECEIVER_DURATION: &str = "30";

/// Far more than draining a few MiB of socket buffers over a veth takes.
const SETTLE: Duration = Duration::from_millis(500);

/// Kills and reaps a child process when dropped, so a failed test leaves no load running.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A namespace created by hand with `ip netns add`, deleted when dropped (or
/// on a signal, by the undo it holds).
struct NsGuard(String, #[allow(dead_code)] Registered);

impl NsGuard {
    fn add(name: String) -> NsGuard {
        let guard = NsGuard::adopt(name);
        assert!(ip(&["netns", "add", &guard.0]).status.success());
        guard
    }

    /// Namespace `name`, whoever made it, deleted when dropped or on a signal.
    fn adopt(name: String) -> NsGuard {
        common::undo_on_signals();
        let undo = {
            let name = name.clone();
            undo::register(move || {
                let _ = ip(&["netns", "del", &name]);
            })
        };
        NsGuard(name, undo)
    }
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

/// A `recv` or `discard` started inside a namespace that has said it is ready.
struct Listener {
    child: ChildGuard,
    stdout: BufReader<ChildStdout>,
}

impl Listener {
    fn start(pair: &VethPair, args: &str) -> Listener {
        Listener::start_for(pair, args, RECEIVER_DURATION)
    }

    fn start_for(pair: &VethPair, args: &str, duration: &str) -> Listener {
        let child = pair
            .command(LOADGEN)
            .args(args.split_whitespace())
            .args(["--duration", duration])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn listener");
        let mut child = ChildGuard(child);
        let stdout = child.0.stdout.take().expect("listener stdout");
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read ready line");
        assert_eq!(line.trim(), r#"{"ready":true}"#, "{args}: not ready");
        Listener { child, stdout }
    }

    /// Lets data still in flight after the sender exited (TCP send buffers, datagrams
    /// in socket queues) arrive, then stops the listener with SIGTERM and returns its
    /// report.
    fn stop(self) -> Value {
        thread::sleep(SETTLE);
        let pid = self.child.0.id() as libc::pid_t;
        // SAFETY: plain kill(2) on a child this test owns and has not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        self.finish()
    }

    /// Waits for the listener to end and returns its report.
    fn finish(mut self) -> Value {
        let status = self.child.0.wait().expect("wait for listener");
        assert!(status.success(), "listener failed: {status}");
        let mut rest = String::new();
        let read = self.stdout.read_to_string(&mut rest);
        read.expect("listener report");
        let report = parse_report(&rest);
        assert_eq!(report["pid"], u64::from(self.child.0.id()));
        report
    }
}

fn ip(args: &[&str]) -> std::process::Output {
    Command::new("ip").args(args).output().expect("run ip")
}

fn namespace_exists(name: &str) -> bool {
    let listing = ip(&["netns", "list"]);
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

fn interface_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

fn in_benchmark_range(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V4(v4) if v4.octets()[0] == 198 && v4.octets()[1] & 0xfe == 18)
}

fn parse_report(stdout: &str) -> Value {
    let last = stdout.lines().last().unwrap_or_default();
    let report: Value = serde_json::from_str(last).expect("report is JSON");
    for field in ["pid", "calls", "bytes", "utime_ns", "stime_ns"] {
        assert!(report[field].is_u64(), "report lacks {field}: {last}");
    }
    report
}

/// Runs `netto-loadgen ARGS` (split at whitespace) to completion in the host namespace.
fn loadgen(args: &str) -> Output {
    let output = Command::new(LOADGEN).args(args.split_whitespace()).output();
    output.expect("run loadgen")
}

/// Runs a `send` that must succeed and returns its report.
fn send(args: &str) -> Value {
    let output = loadgen(&format!("send {args}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "send {args} failed: {stderr}");
    parse_report(&String::from_utf8_lossy(&output.stdout))
}

fn assert_moved_data(report: &Value, what: &str) {
    assert!(
        report["calls"].as_u64() > Some(0),
        "{what} made no calls: {report}"
    );
    assert!(
        report["bytes"].as_u64() > Some(0),
        "{what} moved no bytes: {report}"
    );
}

/// A pid that belonged to a process that has exited.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("wait for true");
    pid
}

/// Set in the copy of this test binary that
/// [`a_test_process_ended_by_a_signal_leaves_nothing_behind`] runs and signals.
const SIGNALLED: &str = "NETTO_TEST_SIGNALLED";

/// A test process ended by SIGINT (a terminal's Ctrl-C on a test run) or
/// SIGTERM runs no destructor, yet leaves none of its namespaces: this test
/// runs itself again as the process to end, which makes a veth pair and a
/// namespace by hand, says their names and waits for the signal.
#[test]
fn a_test_process_ended_by_a_signal_leaves_nothing_behind() {
    if std::env::var_os(SIGNALLED).is_some() {
        let pair = common::veth_pair("signalled").expect("create pair");
        let by_hand = NsGuard::add(format!("netto-byhand-{}", std::process::id()));
        println!(
            "made {} {} {}",
            pair.ns_name(),
            pair.host_ifname(),
            by_hand.0
        );
        loop {
            thread::sleep(Duration::from_secs(1));
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let mut child = ChildGuard(
            Command::new(std::env::current_exe().expect("the test binary"))
                .args([
                    "--exact",
                    "a_test_process_ended_by_a_signal_leaves_nothing_behind",
                    "--nocapture",
                ])
                .env(SIGNALLED, "1")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("running the test binary again"),
        );
        let stdout = BufReader::new(child.0.stdout.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Some(made) = line.strip_prefix("made ") {
                    let _ = tx.send(made.to_owned());
                }
            }
        });
        let made = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the signalled copy never said what it made");
        let made: Vec<&str> = made.split_whitespace().collect();
        let [ns, host_if, by_hand] = made[..] else {
            panic!("made {made:?}");
        };
        // Whatever happens below, the namespaces go.
        let _cleanup: Vec<NsGuard> = [ns, by_hand]
            .iter()
            .map(|n| NsGuard::adopt(n.to_string()))
            .collect();
        assert!(namespace_exists(ns) && namespace_exists(by_hand));
        assert!(interface_exists(host_if));
        common::kill(child.0.id() as i32, signal);
        let status = child.0.wait().expect("waiting for the signalled copy");
        let mut stderr = String::new();
        let _ = child.0.stderr.take().unwrap().read_to_string(&mut stderr);
        assert_eq!(status.code(), Some(128 + signal), "{stderr}");
        // The pair's namespace and host end, and the namespace by hand.
        assert!(stderr.contains("undid 3 things it made"), "{stderr}");
        for name in [ns, by_hand] {
            assert!(!namespace_exists(name), "signal {signal} left {name}");
        }
        assert!(!interface_exists(host_if), "signal {signal} left {host_if}");
    }
}

#[test]
fn veth_pair_create_and_drop_leave_nothing_behind() {
    let first = common::veth_pair("test").expect("create first pair");
    let second = common::veth_pair("test").expect("create second pair");
    let prefix = format!("netto-test-{}-", std::process::id());
    let snapshot: Vec<(String, String, String)> = [&first, &second]
        .iter()
        .map(|pair| {
            assert!(pair.ns_name().starts_with(&prefix), "{}", pair.ns_name());
            assert!(namespace_exists(pair.ns_name()));
            assert!(interface_exists(pair.host_ifname()));
            assert!(pair.host_ifname().len() <= 15 && pair.peer_ifname().len() <= 15);
            let (host, peer) = (u32::from(pair.host_addr()), u32::from(pair.peer_addr()));
            assert!(in_benchmark_range(pair.host_addr().into()));
            assert_eq!((host % 4, peer), (1, host + 1), "not .1/.2 of a /30");
            let peer_link = ip(&[
                "-n",
                pair.ns_name(),
                "-o",
                "link",
                "show",
                pair.peer_ifname(),
            ]);
            assert!(String::from_utf8_lossy(&peer_link.stdout).contains("UP"));
            (
                pair.ns_name().to_owned(),
                pair.host_ifname().to_owned(),
                pair.host_addr().to_string(),
            )
        })
        .collect();
    assert_ne!(first.host_addr(), second.host_addr());
    assert_ne!(first.host_ifname(), second.host_ifname());
    drop(first);
    drop(second);
    let addrs = String::from_utf8_lossy(&ip(&["-o", "-4", "addr"]).stdout).into_owned();
    for (ns, ifname, addr) in snapshot {
        assert!(!namespace_exists(&ns), "{ns} left behind");
        assert!(!interface_exists(&ifname), "{ifname} left behind");
        assert!(
            !addrs.contains(&format!("inet {addr}/")),
            "{addr} left behind"
        );
    }
}

#[test]
fn entering_moves_only_the_calling_thread() {
    let pair = common::veth_pair("test").expect("create pair");
    let peer = SocketAddr::from((pair.peer_addr(), 0));
    assert!(
        UdpSocket::bind(peer).is_err(),
        "peer address visible on the host"
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let receiver = thread::scope(|scope| {
        let inside = scope.spawn(|| {
            pair.enter_current_thread().expect("enter namespace");
            let socket = UdpSocket::bind(peer).expect("bind inside namespace");
            socket
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            tx.send(socket.local_addr().unwrap()).unwrap();
            let mut buf = [0; 16];
            socket.recv(&mut buf)
        });
        let target = rx.recv().expect("inside thread bound");
        let sender = UdpSocket::bind("0.0.0.0:0").unwrap();
        sender
            .send_to(b"hello", target)
            .expect("send across the veth");
        inside.join().expect("inside thread")
    });
    assert_eq!(receiver.expect("datagram crossed the veth"), 5);
}

#[test]
fn sweep_stale_reaps_only_namespaces_of_dead_processes() {
    let stale = NsGuard::add(format!("netto-sweeptest-{}-0", dead_pid()));
    let live = common::veth_pair("sweeptest").expect("create live pair");
    netns::sweep_stale("sweeptest");
    assert!(!namespace_exists(&stale.0), "stale namespace survived");
    assert!(namespace_exists(live.ns_name()), "live namespace was swept");
}

/// What a killed test run (a terminal's Ctrl-C, SIGKILL) or a restart left
/// behind goes at the next creation of a pair with its tag.
#[test]
fn creating_a_pair_sweeps_what_a_dead_process_left_of_its_tag() {
    let stale = NsGuard::add(format!("netto-sweepnext-{}-0", dead_pid()));
    let other_tag = NsGuard::add(format!("netto-sweepother-{}-0", dead_pid()));
    let pair = common::veth_pair("sweepnext").expect("create pair");
    assert!(!namespace_exists(&stale.0), "stale namespace survived");
    assert!(namespace_exists(pair.ns_name()));
    assert!(
        namespace_exists(&other_tag.0),
        "another tag's namespace was swept"
    );
}

#[test]
fn udp_each_send_syscall_reaches_a_receiver_in_the_namespace() {
    let pair = common::veth_pair("test").expect("create pair");
    let pairs = [
        ("sendto", "recvfrom"),
        ("sendmsg", "recvmsg"),
        ("sendmmsg", "recvmmsg"),
        ("write", "read"),
        ("writev", "readv"),
    ];
    for (port, (send_call, recv_call)) in (7100..).zip(pairs) {
        let addr = SocketAddr::from((pair.peer_addr(), port));
        let listener = Listener::start(
            &pair,
            &format!("recv --proto udp --syscall {recv_call} --listen {addr}"),
        );
        let sent = send(&format!(
            "--proto udp --syscall {send_call} --dest {addr} --duration 0.4"
        ));
        let received = listener.stop();
        assert_moved_data(&sent, send_call);
        assert_moved_data(&received, recv_call);
        assert!(received["bytes"].as_u64() <= sent["bytes"].as_u64());
    }
}

#[test]
fn tcp_each_send_syscall_reaches_a_receiver_in_the_namespace() {
    let pair = common::veth_pair("test").expect("create pair");
    let pairs = [
        ("sendto", "recvfrom"),
        ("sendmsg", "recvmsg"),
        ("write", "read"),
        ("writev", "readv"),
    ];
    for (port, (send_call, recv_call)) in (7200..).zip(pairs) {
        let addr = SocketAddr::from((pair.peer_addr(), port));
        let listener = Listener::start(
            &pair,
            &format!("recv --proto tcp --syscall {recv_call} --listen {addr}"),
        );
        let sent = send(&format!(
            "--proto tcp --syscall {send_call} --dest {addr} --duration 0.4 --congestion reno"
        ));
        let received = listener.stop();
        assert_moved_data(&sent, send_call);
        assert_moved_data(&received, recv_call);
        assert_eq!(
            received["bytes"], sent["bytes"],
            "TCP lost or invented bytes"
        );
    }
}

#[test]
fn tcp_sendfile_reaches_a_sink_in_the_namespace() {
    let pair = common::veth_pair("test").expect("create pair");
    let addr = SocketAddr::from((pair.peer_addr(), 7300));
    let sink = Listener::start(&pair, &format!("discard --proto tcp --listen {addr}"));
    let sent = send(&format!(
        "--proto tcp --syscall sendfile --dest {addr} --duration 0.5"
    ));
    let received = sink.stop();
    assert_moved_data(&sent, "sendfile");
    assert_eq!(received["bytes"], sent["bytes"], "discard missed bytes");
}

#[test]
fn one_sender_to_two_sinks_reports_each() {
    let pair = common::veth_pair("test").expect("create pair");
    let addrs = [7310, 7311].map(|port| SocketAddr::from((pair.peer_addr(), port)));
    let sinks =
        addrs.map(|addr| Listener::start(&pair, &format!("discard --proto tcp --listen {addr}")));
    let sent = send(&format!(
        "--proto tcp --syscall write --dest {} --dest {} --duration 0.5",
        addrs[0], addrs[1]
    ));
    let received = sinks.map(Listener::stop);
    let by_dest = sent["by_dest"].as_array().expect("by_dest for two --dest");
    assert_eq!(by_dest.len(), 2, "{sent}");
    let mut calls = 0;
    for ((addr, each), got) in addrs.iter().zip(by_dest).zip(&received) {
        assert_eq!(each["dest"], addr.to_string());
        assert_moved_data(each, "one of two sockets");
        assert_eq!(
            each["bytes"], got["bytes"],
            "{addr}: TCP lost or invented bytes"
        );
        calls += each["calls"].as_u64().unwrap();
    }
    assert_eq!(sent["calls"], calls, "the total is the sum: {sent}");
}

#[test]
fn short_connections_reach_a_closer_in_the_namespace() {
    let pair = common::veth_pair("test").expect("create pair");
    let addr = SocketAddr::from((pair.peer_addr(), 7320));
    let closer = Listener::start(&pair, &format!("accept --listen {addr}"));
    let output = loadgen(&format!(
        "connect --dest {addr} --rate 500 --size 100 --duration 1"
    ));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "connect failed: {stderr}");
    let made = parse_report(&String::from_utf8_lossy(&output.stdout));
    let accepted = closer.stop();
    let n = made["calls"].as_u64().unwrap();
    // The rate holds: 500 a second for a second, and the first before it.
    assert!((400..=502).contains(&n), "{made}");
    assert_eq!(made["bytes"].as_u64(), Some(n * 100), "{made}");
    assert_eq!(
        accepted["calls"].as_u64(),
        Some(n),
        "every one accepted: {accepted}"
    );
}

#[test]
fn tcp_sender_outliving_its_receiver_ends_cleanly() {
    let pair = common::veth_pair("test").expect("create pair");
    let addr = SocketAddr::from((pair.peer_addr(), 7301));
    let listen = format!("recv --proto tcp --syscall read --listen {addr}");
    let listener = Listener::start_for(&pair, &listen, "0.5");
    let started = Instant::now();
    let sent = send(&format!(
        "--proto tcp --syscall write --dest {addr} --duration 20"
    ));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "sender kept going"
    );
    assert_moved_data(&sent, "write");
    assert_moved_data(&listener.finish(), "read");
}

#[test]
fn udp_sink_discards_datagrams() {
    let pair = common::veth_pair("test").expect("create pair");
    let addr = SocketAddr::from((pair.peer_addr(), 7302));
    let sink = Listener::start(&pair, &format!("discard --proto udp --listen {addr}"));
    let sent = send(&format!(
        "--proto udp --syscall sendto --dest {addr} --duration 0.3"
    ));
    assert_moved_data(&sent, "sendto");
    assert_moved_data(&sink.stop(), "udp discard");
}

#[test]
fn read_file_reads_a_regular_file() {
    let output = loadgen("read-file --duration 0.3 --cpu 0");
    assert!(output.status.success());
    let report = parse_report(&String::from_utf8_lossy(&output.stdout));
    assert_moved_data(&report, "read-file");
}

#[test]
fn demo_pushes_traffic_at_its_rate_and_removes_its_namespace() {
    let stale = NsGuard::add(format!("netto-demo-{}-0", dead_pid()));
    // 200 Mbit/s: 25 MB/s, a small share of what the veth pair takes.
    let rate_bytes = 25_000_000.0;
    let demo = Demo::start(Some(200_000_000)).expect("start demo");
    assert!(
        !namespace_exists(&stale.0),
        "stale demo namespace not swept"
    );
    let (ns, ifname) = (
        demo.veth().ns_name().to_owned(),
        demo.veth().host_ifname().to_owned(),
    );
    let description = demo.describe();
    assert!(
        description.contains(&ns)
            && description.contains("paced to 200 Mbit/s")
            && !description.contains('\n'),
        "{description}"
    );
    let tx_path = format!("/sys/class/net/{ifname}/statistics/tx_bytes");
    let tx_bytes = || -> u64 {
        let text = fs::read_to_string(&tx_path).expect("read tx_bytes");
        text.trim().parse().expect("tx_bytes is a number")
    };
    let before = tx_bytes();
    let started = Instant::now();
    while tx_bytes() - before <= 10_000_000 && started.elapsed() < Duration::from_secs(2) {
        thread::sleep(Duration::from_millis(50));
    }
    let pushed = tx_bytes() - before;
    assert!(
        pushed > 10_000_000,
        "demo pushed only {pushed} bytes in 2 s"
    );
    // Once running, it keeps to its rate (the kernel paces it).
    let before = tx_bytes();
    let started = Instant::now();
    thread::sleep(Duration::from_secs(2));
    let per_s = (tx_bytes() - before) as f64 / started.elapsed().as_secs_f64();
    assert!(
        (0.5 * rate_bytes..1.3 * rate_bytes).contains(&per_s),
        "demo at {per_s} bytes/s, paced to {rate_bytes}"
    );
    drop(demo);
    assert!(!namespace_exists(&ns), "{ns} left behind");
    assert!(!interface_exists(&ifname), "{ifname} left behind");
}

#[test]
fn bad_loadgen_arguments_exit_2_with_one_line() {
    let udp = "send --proto udp --syscall write --dest 127.0.0.1:9";
    let cases = [
        String::new(),
        "bogus".into(),
        "send".into(),
        "send --proto sctp --syscall write --dest 127.0.0.1:9 --duration 1".into(),
        "send --proto udp --syscall sendfile --dest 127.0.0.1:9 --duration 1".into(),
        "send --proto udp --syscall write --dest 203.0.113.9:9 --duration 1".into(),
        "send --proto udp --syscall write --dest nowhere --duration 1".into(),
        format!("{udp} --duration 0"),
        format!("{udp} --duration -1"),
        format!("{udp} --duration 1 --size 70000"),
        format!("{udp} --duration 1 --congestion bbr"),
        format!("{udp} --duration 1 --cpu 100000"),
        "send --proto tcp --syscall write --dest 127.0.0.1:9 --duration 1 --congestion nosuch"
            .into(),
        "recv --proto tcp --syscall recvmmsg --listen 127.0.0.1:0 --duration 1".into(),
        "read-file --duration soon".into(),
        "send --proto tcp --syscall write --dest 127.0.0.1:9 --dest 203.0.113.9:9 --duration 1"
            .into(),
        "connect --dest 127.0.0.1:9 --rate 0 --duration 1".into(),
        "connect --dest 127.0.0.1:9 --size 0 --duration 1".into(),
        "connect --dest 127.0.0.1:9 --size 70000 --duration 1".into(),
        "connect --dest 203.0.113.9:9 --duration 1".into(),
        "accept --listen 127.0.0.1:9".into(),
    ];
    for args in cases {
        let output = loadgen(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args}: {stderr}");
        // One error line; a usage error's tips follow on indented lines.
        let errors = stderr.lines().filter(|l| !l.starts_with(' ')).count();
        assert_eq!(errors, 1, "{args}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args}: {stderr}");
        assert!(output.stdout.is_empty(), "{args}: printed a report");
    }
}

#[test]
fn tcp_sender_without_receiver_gives_up_after_retrying() {
    let started = Instant::now();
    let output = loadgen("send --proto tcp --syscall write --dest 127.0.0.1:1 --duration 10");
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let retried = Duration::from_secs(2)..Duration::from_secs(5);
    assert!(retried.contains(&elapsed), "gave up after {elapsed:?}");
}
