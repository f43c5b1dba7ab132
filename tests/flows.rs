//! Which connections pay, end to end: `netto stat --by flow|port` while
//! TCP and UDP loads run between namespaces the tests make (and remove on
//! every exit path). Each connection's time follows its bytes, its cost
//! per KiB is the same at 3:1 bitrates and higher for small datagrams, its
//! bytes are the ones its calls moved, IPv6 ends are named in brackets, and
//! every snapshot's groups and unattributed part add up to each event's
//! total exactly. Needs root and BPF.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::process::Command;
use std::thread;
use std::time::Duration;

use common::topology::Topology;
use common::*;
use netto::abi::NETTO_MAX_GROUPS;
use netto::frontends::flame::readback::parse_folded;
use netto::model::{EventKey, Group, Recording, Snapshot};

/// Every snapshot's groups and unattributed time add up to each event's
/// total, exactly, and attribution ran throughout.
fn assert_parts_add_up(snaps: &[Snapshot]) {
    assert!(snaps.len() >= 3, "only {} snapshots", snaps.len());
    for s in snaps {
        let a = s.attribution.as_ref().expect("every snapshot has groups");
        assert!(a.on, "attribution was off at {}", s.ts);
        for key in EventKey::ALL {
            let parts: u64 =
                a.groups.iter().map(|g| g.events[&key]).sum::<u64>() + a.unattributed[&key];
            assert_eq!(parts, s.event(key).total_ns, "{key:?} at {}", s.ts);
        }
        let why: u64 = a.unattributed_why.values().sum();
        assert_eq!(why, a.unattributed_total_ns(), "reasons at {}", s.ts);
    }
}

/// The unattributed time over a run by reason, as `stat` says them, and
/// by event.
fn why(snaps: &[Snapshot]) -> BTreeMap<String, u64> {
    let mut why = BTreeMap::new();
    for s in snaps {
        let a = s.attribution.as_ref().unwrap();
        for (reason, ns) in &a.unattributed_why {
            *why.entry(reason.words().to_owned()).or_default() += ns;
        }
        for (event, ns) in &a.unattributed {
            *why.entry(event.name().to_owned()).or_default() += ns;
        }
    }
    why
}

/// A group's time and bytes summed over a run.
#[derive(Debug, Default, Clone)]
struct Paid {
    ns: u64,
    bytes_in: u64,
    bytes_out: u64,
    events: BTreeMap<EventKey, u64>,
}

impl Paid {
    fn add(&mut self, g: &Group) {
        self.ns += g.total_ns();
        for (key, ns) in &g.events {
            *self.events.entry(*key).or_default() += ns;
        }
        let t = g
            .traffic
            .expect("--by flow|port groups carry their traffic");
        self.bytes_in += t.bytes_in;
        self.bytes_out += t.bytes_out;
    }

    fn ns_per_kib(&self) -> f64 {
        self.ns as f64 * 1024.0 / (self.bytes_in + self.bytes_out) as f64
    }
}

/// Every group's time and bytes over the run, by name.
fn paid(snaps: &[Snapshot]) -> BTreeMap<String, Paid> {
    let mut paid: BTreeMap<String, Paid> = BTreeMap::new();
    for s in snaps {
        for g in &s.attribution.as_ref().unwrap().groups {
            paid.entry(g.name.clone()).or_default().add(g);
        }
    }
    paid
}

/// Both ends of the connection to `server` (`IP:PORT`): the sender's flow
/// (`... -> server tcp`) and the sink's (`server -> ...`), summed.
fn connection(paid: &BTreeMap<String, Paid>, server: &str, proto: &str) -> (Paid, Paid) {
    let (out, inward) = connection_names(paid, server, proto);
    (paid[&out].clone(), paid[&inward].clone())
}

/// The names of both ends of the connection to `server`, as [`connection`]
/// finds them.
fn connection_names(paid: &BTreeMap<String, Paid>, server: &str, proto: &str) -> (String, String) {
    let find = |outgoing: bool| {
        let mut found = paid.iter().filter(|(name, _)| {
            let (local, rest) = name.split_once(" -> ").unwrap_or_default();
            let remote = rest.strip_suffix(&format!(" {proto}")).unwrap_or_default();
            // An unconnected UDP sink's flow is named by its datagrams'
            // peer, as a TCP connection's; a TCP listener's flow, or the
            // sink's time before a datagram named its call, is `*`.
            if outgoing {
                remote == server
            } else {
                local == server && remote != "*"
            }
        });
        let (name, _) = found.next().unwrap_or_else(|| {
            let names: Vec<&String> = paid.keys().take(20).collect();
            panic!(
                "no flow of {server} ({outgoing}) among {} flows: {names:?}",
                paid.len()
            )
        });
        assert!(
            found.next().is_none(),
            "two flows like {name} in {:?}",
            paid.keys()
        );
        name.clone()
    };
    (find(true), find(false))
}

/// The send calls' ns/KiB of flow `a` over that of flow `b`, in each
/// snapshot where both sent: one interval's disturbance (a sender
/// preempted mid-call, a cache gone cold) moves one ratio, not their median.
fn send_cost_ratios(snaps: &[Snapshot], a: &str, b: &str) -> Vec<f64> {
    let per_kib = |s: &Snapshot, name: &str| {
        let g = s
            .attribution
            .as_ref()?
            .groups
            .iter()
            .find(|g| g.name == name)?;
        let ns = *g.events.get(&EventKey::SockSend)?;
        let bytes = g.traffic?.bytes_out;
        (ns > 0 && bytes > 0).then(|| ns as f64 * 1024.0 / bytes as f64)
    };
    snaps
        .iter()
        .filter_map(|s| Some(per_kib(s, a)? / per_kib(s, b)?))
        .collect()
}

/// A pair of namespaces `a{i}` -> `b{i}` on 198.18.23{i}.0/24, the sender's
/// egress shaped to `rate`; returns (a, b, the sink's IP:PORT).
fn shaped_pair(topology: &mut Topology, i: u8, rate: &str, port: u16) -> (String, String, String) {
    let (a, b, ip) = topology.shaped_pair(i, 230 + i, rate);
    (a, b, format!("{ip}:{port}"))
}

/// `netto-loadgen ARGS` in namespace `ns`, pinned to `cpu`.
fn loadgen(topology: &Topology, ns: &str, cpu: usize, args: &str) -> Command {
    let mut command = topology.exec(ns, "taskset");
    command.args(["-c", &cpu.to_string(), LOADGEN]);
    command.args(args.split_whitespace());
    command
}

/// What the senders and the sinks of [`loads`] reported, in order.
struct Reports {
    sent: Vec<LoadReport>,
    received: Vec<LoadReport>,
}

/// Runs, for `secs`, one sender per `(namespace pair, proto, size)` to its
/// sink, all on CPU 0 (netto on CPU 1), until the sinks are done too.
fn loads(
    topology: &Topology,
    pairs: &[(String, String, String)],
    protos: &[(&str, usize)],
    secs: u64,
) -> Reports {
    let sinks: Vec<Server> = pairs
        .iter()
        .zip(protos)
        .map(|((_, b, dest), (proto, _))| {
            let args = format!(
                "discard --proto {proto} --listen {dest} --duration {}",
                secs + 2
            );
            Server::start(loadgen(topology, b, 0, &args))
        })
        .collect();
    let senders: Vec<thread::JoinHandle<LoadReport>> = pairs
        .iter()
        .zip(protos)
        .map(|((a, _, dest), (proto, size))| {
            let command = loadgen(
                topology,
                a,
                0,
                &format!(
                    "send --proto {proto} --syscall write --size {size} --dest {dest} \
                     --duration {secs}"
                ),
            );
            thread::spawn(move || run_client(command))
        })
        .collect();
    let sent = senders.into_iter().map(|s| s.join().unwrap()).collect();
    let received = sinks.into_iter().map(|s| s.finish(0.0)).collect();
    Reports { sent, received }
}

/// Two TCP connections at 3:1 bitrates (tbf-shaped, sender and sink of
/// both on one CPU): each sender's socket calls cost the same per KiB (same
/// writes, shaped after them) in the median interval; each
/// connection's whole network time (both ends) lies between the ratio of
/// its bytes and that of its sink's receive calls: at a third of the rate a
/// receive call finds less data, so a KiB received costs more (the sinks'
/// own system time says so too; the test prints both). Each end's bytes
/// are exactly the bytes its calls moved, and every snapshot adds up. Then
/// the same load `--by port`: one `in` and one `out` service per
/// connection.
#[test]
fn flows_pay_in_proportion_to_their_bytes() {
    let mut topology = Topology::new("w");
    let pairs = [
        shaped_pair(&mut topology, 1, "300mbit", 5711),
        shaped_pair(&mut topology, 2, "100mbit", 5712),
    ];
    let tcp = [("tcp", 65536), ("tcp", 65536)];
    let secs = scaled_secs(6);

    let stat = NettoStat::start(1, &["--by", "flow", "--interval", "0.5"]);
    let Reports { sent, received } = loads(&topology, &pairs, &tcp, secs);
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();
    let dests = [pairs[0].2.as_str(), pairs[1].2.as_str()];
    eprintln!(
        "sent: calls {} / {}, stime {} / {} = {:.2}",
        sent[0].calls,
        sent[1].calls,
        sent[0].stime_ns,
        sent[1].stime_ns,
        sent[0].stime_ns as f64 / sent[1].stime_ns as f64
    );
    assert_flows_pay_by_bytes(&snaps, dests, [sent[0].bytes, sent[1].bytes], &received);

    let stat = NettoStat::start(1, &["--by", "port", "--interval", "0.5"]);
    loads(&topology, &pairs, &tcp, scaled_secs(2));
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();
    assert_parts_add_up(&snaps);
    let ports = self::paid(&snaps);
    for port in ["5711/tcp in", "5711/tcp out", "5712/tcp in", "5712/tcp out"] {
        let p = ports
            .get(port)
            .unwrap_or_else(|| panic!("no {port} in {ports:?}"));
        assert!(p.ns > 0 && p.bytes_in + p.bytes_out > 0, "{port}: {p:?}");
    }
}

/// The same two connections at 3:1, from one process with two sockets
/// (one sending thread each): each socket's calls and packets go to its own
/// flow, as they do from two processes.
#[test]
fn one_process_two_sockets_pay_in_proportion_to_their_bytes() {
    let mut topology = Topology::new("o");
    let a = topology.namespace("a");
    let sinks = [("b1", 235, "300mbit", 5718), ("b2", 236, "100mbit", 5719)].map(
        |(name, net, rate, port)| {
            let b = topology.namespace(name);
            let ip = topology.shaped_link(&a, &b, net, rate);
            (b, format!("{ip}:{port}"))
        },
    );
    let secs = scaled_secs(6);

    let stat = NettoStat::start(1, &["--by", "flow", "--interval", "0.5"]);
    let servers: Vec<Server> = sinks
        .iter()
        .map(|(b, dest)| {
            Server::start(loadgen(
                &topology,
                b,
                0,
                &format!(
                    "discard --proto tcp --listen {dest} --duration {}",
                    secs + 2
                ),
            ))
        })
        .collect();
    let sent = run_client(loadgen(
        &topology,
        &a,
        0,
        &format!(
            "send --proto tcp --syscall write --dest {} --dest {} --duration {secs}",
            sinks[0].1, sinks[1].1
        ),
    ));
    let received: Vec<LoadReport> = servers.into_iter().map(|s| s.finish(0.0)).collect();
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();
    let dests = [sinks[0].1.as_str(), sinks[1].1.as_str()];
    let by_dest = dests.map(|d| sent.bytes_by_dest[d]);
    assert_eq!(by_dest.iter().sum::<u64>(), sent.bytes);
    assert_flows_pay_by_bytes(&snaps, dests, by_dest, &received);
}

/// What [`flows_pay_in_proportion_to_their_bytes`] asserts of two TCP
/// connections to `dests` at 3:1, whose senders sent `sent` bytes and
/// whose sinks reported `received`.
fn assert_flows_pay_by_bytes(
    snaps: &[Snapshot],
    dests: [&str; 2],
    sent: [u64; 2],
    received: &[LoadReport],
) {
    assert_parts_add_up(snaps);
    eprintln!("unattributed: {:?}", why(snaps));
    let paid = paid(snaps);
    let (fast_out, fast_in) = connection(&paid, dests[0], "tcp");
    let (slow_out, slow_in) = connection(&paid, dests[1], "tcp");
    let sending_ratios = send_cost_ratios(
        snaps,
        &connection_names(&paid, dests[0], "tcp").0,
        &connection_names(&paid, dests[1], "tcp").0,
    );
    assert_eq!(fast_out.bytes_out, sent[0], "the fast sender's bytes");
    assert_eq!(slow_out.bytes_out, sent[1], "the slow sender's bytes");
    assert_eq!(fast_in.bytes_in, received[0].bytes, "the fast sink's bytes");
    assert_eq!(slow_in.bytes_in, received[1].bytes, "the slow sink's bytes");

    eprintln!("fast {fast_out:?} {fast_in:?}\nslow {slow_out:?} {slow_in:?}");
    let r = received;
    eprintln!(
        "received: calls {} / {} = {:.2}, stime {} / {} = {:.2}",
        r[0].calls,
        r[1].calls,
        r[0].calls as f64 / r[1].calls as f64,
        r[0].stime_ns,
        r[1].stime_ns,
        r[0].stime_ns as f64 / r[1].stime_ns as f64
    );
    let (fast_ns, slow_ns) = (fast_out.ns + fast_in.ns, slow_out.ns + slow_in.ns);
    let bytes = sent[0] as f64 / sent[1] as f64;
    let calls = received[0].calls as f64 / received[1].calls as f64;
    let time = fast_ns as f64 / slow_ns as f64;
    let sending = |p: &Paid| p.events[&EventKey::SockSend];
    let send_time = sending(&fast_out) as f64 / sending(&slow_out) as f64;
    let per_kib = |ns: u64, bytes: u64| ns as f64 * 1024.0 / bytes as f64;
    let (fast_kib, slow_kib) = (
        per_kib(sending(&fast_out), sent[0]),
        per_kib(sending(&slow_out), sent[1]),
    );
    eprintln!(
        "time {fast_ns} / {slow_ns} ns = {time:.3}, bytes {bytes:.3}, sink calls {calls:.3}; \
         send calls' time {send_time:.3}, their ns/KiB {fast_kib:.0} / {slow_kib:.0}; \
         sender ns/KiB {:.0} / {:.0}, sink {:.0} / {:.0}",
        fast_out.ns_per_kib(),
        slow_out.ns_per_kib(),
        fast_in.ns_per_kib(),
        slow_in.ns_per_kib(),
    );
    let sending = median(&sending_ratios);
    eprintln!("send calls' ns/KiB, fast over slow, by interval: {sending_ratios:.2?}");
    assert!(
        (0.85..=1.15).contains(&sending),
        "send calls' ns/KiB, fast over slow, median {sending:.3} of intervals {sending_ratios:.2?}"
    );
    let (low, high) = (calls.min(bytes), calls.max(bytes));
    assert!(
        (low * 0.85..=high * 1.15).contains(&time),
        "time {time:.3} outside sink calls {calls:.3} .. bytes {bytes:.3}"
    );
}

/// A small-datagram UDP flow (64-byte payloads) against bulk TCP, both
/// shaped to the same bitrate: the UDP flow costs more per KiB, and by how
/// much is printed. The UDP sink is an unconnected socket: its flow is
/// named by the sender's address and port, with the sink's bytes, its
/// softirq time and its receive calls' time.
#[test]
fn small_datagrams_cost_more_per_byte_than_bulk() {
    let mut topology = Topology::new("u");
    let pairs = [
        shaped_pair(&mut topology, 3, "20mbit", 5713),
        shaped_pair(&mut topology, 4, "20mbit", 5714),
    ];
    let stat = NettoStat::start(1, &["--by", "flow", "--interval", "0.5"]);
    let Reports { sent, received } = loads(
        &topology,
        &pairs,
        &[("tcp", 65536), ("udp", 64)],
        scaled_secs(4),
    );
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();
    assert_parts_add_up(&snaps);
    let paid = paid(&snaps);
    let (tcp, _) = connection(&paid, &pairs[0].2, "tcp");
    let (udp, sink) = connection(&paid, &pairs[1].2, "udp");
    assert_eq!(udp.bytes_out, sent[1].bytes, "the UDP sender's bytes");
    let (out, inward) = connection_names(&paid, &pairs[1].2, "udp");
    let sender = out.split_once(" -> ").unwrap().0;
    assert_eq!(inward, format!("{} -> {sender} udp", pairs[1].2));
    assert_eq!(
        sink.bytes_in, received[1].bytes,
        "the UDP sink's bytes, by peer"
    );
    for event in [EventKey::NetRxSoftirq, EventKey::SockRecv] {
        assert!(
            sink.events.get(&event).is_some_and(|&ns| ns > 0),
            "{event:?}: {sink:?}"
        );
    }
    let unnamed = format!("{} -> * udp", pairs[1].2);
    if let Some(rest) = paid.get(&unnamed) {
        assert_eq!(rest.bytes_in, 0, "bytes without a peer: {rest:?}");
        eprintln!(
            "the sink's time before a datagram named its call: {} ns",
            rest.ns
        );
    }
    let (tcp_kib, udp_kib) = (tcp.ns_per_kib(), udp.ns_per_kib());
    eprintln!(
        "sender ns/KiB: bulk TCP {tcp_kib:.0}, 64-byte UDP {udp_kib:.0}: {:.1}x",
        udp_kib / tcp_kib
    );
    assert!(
        udp_kib > 2.0 * tcp_kib,
        "64-byte datagrams cost {udp_kib:.0} ns/KiB, bulk TCP {tcp_kib:.0}"
    );
}

/// A TCP connection over IPv6 (loopback in a namespace the test makes),
/// recorded: both ends are named in brackets and carry its time and bytes,
/// and `report --group` draws a flow's flame graph from the recording in
/// that flow's exact time.
#[test]
fn an_ipv6_flow_is_named_in_brackets_and_replays() {
    let mut topology = Topology::new("6");
    let ns = topology.namespace("v6");
    let dest = "[::1]:5715";
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let secs = scaled_secs(2);
    let duration = (secs + 4).to_string();
    let args = ["--by", "flow", "--interval", "0.5", "--duration", &duration];
    let mut record = start_record(&args, &json);
    let sink = Server::start(loadgen(
        &topology,
        &ns,
        0,
        &format!(
            "discard --proto tcp --listen {dest} --duration {}",
            secs + 1
        ),
    ));
    let sent = run_client(loadgen(
        &topology,
        &ns,
        0,
        &format!("send --proto tcp --syscall write --dest {dest} --duration {secs}"),
    ));
    let received = sink.finish(0.0);
    let status = record.0.wait().expect("waiting for netto record");
    assert!(status.success(), "netto record exited with {status}");
    let recording: Recording = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_parts_add_up(&recording.snapshots);
    let paid = paid(&recording.snapshots);
    let (out, inward) = connection(&paid, dest, "tcp");
    assert_eq!(out.bytes_out, sent.bytes);
    assert_eq!(inward.bytes_in, received.bytes);
    assert!(out.ns > 0 && inward.ns > 0, "{out:?} {inward:?}");

    let sender = paid
        .iter()
        .find(|(name, _)| name.ends_with(&format!("-> {dest} tcp")))
        .map(|(name, _)| name.clone())
        .unwrap();
    let folded = dir.path().join("flow.folded");
    let done = netto(&[
        "report",
        json.to_str().unwrap(),
        "--group",
        &sender,
        "-o",
        folded.to_str().unwrap(),
    ]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let stacks = parse_folded(fs::read(&folded).unwrap().as_slice()).unwrap();
    let width: u64 = stacks.iter().map(|f| f.count).sum();
    let mut by_context: BTreeMap<&str, u64> = BTreeMap::new();
    for f in &stacks {
        *by_context.entry(f.frames[0].as_str()).or_default() += f.count;
    }
    assert_eq!(
        width, out.ns,
        "{sender}'s graph {by_context:?} against its time {out:?}"
    );
}

/// TCP from `a` to `b` through a router namespace `r` that forwards it:
/// the router's share (its receive and transmit, with no socket there) goes
/// to the connection's tuple in the router's namespace, which carries the
/// payload bytes it forwarded: at least what the sender wrote, and no more
/// than a few retransmissions beyond.
#[test]
fn forwarded_packets_go_to_their_tuples() {
    let mut topology = Topology::new("f");
    let (a, b, r) = topology.routed(240);
    let dest = "198.18.241.1:5717";
    let secs = scaled_secs(3);
    let stat = NettoStat::start(1, &["--by", "flow", "--interval", "0.5"]);
    let sink = Server::start(loadgen(
        &topology,
        &b,
        0,
        &format!(
            "discard --proto tcp --listen {dest} --duration {}",
            secs + 2
        ),
    ));
    let sent = run_client(loadgen(
        &topology,
        &a,
        0,
        &format!("send --proto tcp --syscall write --dest {dest} --duration {secs}"),
    ));
    sink.finish(0.0);
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();
    assert_parts_add_up(&snaps);
    eprintln!("unattributed: {:?}", why(&snaps));

    // The router's groups, by name: labelled with its namespace.
    let mut routed: BTreeMap<String, Paid> = BTreeMap::new();
    for s in &snaps {
        for g in s.attribution.as_ref().unwrap().groups.iter() {
            if g.label == r {
                routed.entry(g.name.clone()).or_default().add(g);
            }
        }
    }
    let data = routed
        .iter()
        .find(|(name, _)| name.ends_with(&format!("-> {dest} tcp")))
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| panic!("no forwarded flow to {dest} in {routed:?}"));
    let acks = routed
        .iter()
        .find(|(name, _)| name.starts_with(&format!("{dest} -> ")))
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| panic!("no forwarded flow from {dest} in {routed:?}"));
    eprintln!(
        "forwarded: data {data:?}, acks {acks:?}; sent {} bytes",
        sent.bytes
    );
    assert!(data.ns > 0 && acks.ns > 0, "{data:?} {acks:?}");
    assert!(
        (sent.bytes..=sent.bytes + sent.bytes / 20).contains(&data.bytes_out),
        "forwarded {} bytes of {} sent",
        data.bytes_out,
        sent.bytes
    );
    assert_eq!(acks.bytes_out, 0, "ACKs carry no payload");
}

/// Ten thousand short connections a second (each a new flow at both ends)
/// fill the kernel's group map within an interval or two: the time it had
/// no room for is counted in `attribution_misses` and stays unattributed,
/// and every snapshot still adds up. Once the churn stops, its idle keys
/// make room within an interval, and a bulk connection that follows is
/// attributed in full: every byte its calls moved. At 1 s intervals the
/// map has room for about half its keys' worth of new connections a
/// second (4096), so the churn overflows it at anything over half its rate.
#[test]
fn short_connections_fill_the_group_map_and_it_makes_room() {
    let mut topology = Topology::new("c");
    let ns = topology.namespace("churn");
    let (churn_dest, bulk_dest) = ("127.0.0.1:5716", "127.0.0.1:5717");
    let secs = scaled_secs(3);

    let stat = NettoStat::start(1, &["--by", "flow", "--interval", "1"]);
    let closer = Server::start(loadgen(
        &topology,
        &ns,
        1,
        &format!("accept --listen {churn_dest} --duration {}", secs + 1),
    ));
    let churn = run_client(loadgen(
        &topology,
        &ns,
        0,
        &format!("connect --dest {churn_dest} --rate 10000 --duration {secs}"),
    ));
    let accepted = closer.finish(0.0);
    // The interval the churn ended in, then one with no new connection at
    // whose end the churn's keys are idle and go.
    thread::sleep(Duration::from_millis(2200));
    let sink = Server::start(loadgen(
        &topology,
        &ns,
        1,
        &format!("discard --proto tcp --listen {bulk_dest} --duration 2"),
    ));
    let sent = run_client(loadgen(
        &topology,
        &ns,
        0,
        &format!("send --proto tcp --syscall write --dest {bulk_dest} --duration 1"),
    ));
    let received = sink.finish(0.0);
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();

    let rate = churn.calls as f64 / secs as f64;
    let misses: Vec<u64> = snaps.iter().map(|s| s.losses.attribution_misses).collect();
    eprintln!(
        "{} connections ({rate:.0}/s), {} accepted; attribution misses by interval: {misses:?}; \
         unattributed: {:?}",
        churn.calls,
        accepted.calls,
        why(&snaps)
    );
    assert!(
        misses.iter().sum::<u64>() > 0,
        "{} connections ({rate:.0}/s, the map's room {} keys an interval) and no miss: \
         {misses:?}",
        churn.calls,
        NETTO_MAX_GROUPS / 2
    );
    assert_parts_add_up(&snaps);
    let paid = paid(&snaps);
    let (out, inward) = connection(&paid, bulk_dest, "tcp");
    assert_eq!(out.bytes_out, sent.bytes, "the bulk sender's bytes");
    assert_eq!(inward.bytes_in, received.bytes, "the bulk sink's bytes");
}
