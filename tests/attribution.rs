//! Who pays, end to end: `netto stat --by` while loads run in real cgroup v2
//! groups and namespaces the tests make (and remove on every exit path).
//! Each group's share follows its traffic, a process moved between groups is
//! charged to each for its time there, forwarded traffic lands on the
//! router's namespace, and every snapshot's groups and unattributed part add
//! up to each event's total exactly. Needs root and BPF.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use common::topology::{run, Topology};
use common::*;
use netto::groups::resolve::v2_hierarchy;
use netto::model::{EventKey, Snapshot};

/// A cgroup made under the v2 root; on drop, whatever still runs in it goes
/// back to the root and the directory is removed.
struct Cgroup {
    dir: PathBuf,
    /// Its path under the v2 root, as `--by cgroup` names it.
    path: String,
}

impl Cgroup {
    fn new(tag: &str) -> Cgroup {
        let root = v2_hierarchy().expect("a cgroup v2 hierarchy is mounted");
        let name = format!("netto-attr-{}-{tag}", std::process::id());
        let dir = root.join(&name);
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Cgroup {
            dir,
            path: format!("/{name}"),
        }
    }

    fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    fn adopt(&self, pid: u32) {
        fs::write(self.procs(), pid.to_string())
            .unwrap_or_else(|e| panic!("moving {pid} to {}: {e}", self.path));
    }

    /// `ip netns exec NS netto-loadgen ARGS`, started inside this group (the
    /// shell joins it, then execs; `ip netns exec` execs too, so the
    /// child's pid is the load's).
    fn loadgen_in(&self, ns: &str, args: &str) -> Command {
        let mut command = Command::new("sh");
        command
            .args(["-c", r#"echo $$ > "$0" && exec "$@""#])
            .arg(self.procs())
            .args(["ip", "netns", "exec", ns, LOADGEN])
            .args(args.split_whitespace());
        command
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let root = self.dir.parent().unwrap().join("cgroup.procs");
        for _ in 0..50 {
            for pid in fs::read_to_string(self.procs()).unwrap_or_default().lines() {
                let _ = fs::write(&root, pid);
            }
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            thread::sleep(Duration::from_millis(100));
        }
        eprintln!("could not remove {}", self.dir.display());
    }
}

/// Every snapshot's groups and unattributed time add up to each event's
/// total, exactly, and attribution ran throughout.
fn assert_parts_add_up(snaps: &[Snapshot]) {
    assert!(snaps.len() >= 3, "only {} snapshots", snaps.len());
    for s in snaps {
        let a = s
            .attribution
            .as_ref()
            .expect("every snapshot has --by's groups");
        assert!(a.on, "attribution was off at {}", s.ts);
        for key in EventKey::ALL {
            let parts: u64 =
                a.groups.iter().map(|g| g.events[&key]).sum::<u64>() + a.unattributed[&key];
            assert_eq!(parts, s.event(key).total_ns, "{key:?} at {}", s.ts);
        }
    }
}

/// Each group's time per event over `snaps`, by group name.
fn group_totals(snaps: &[&Snapshot]) -> BTreeMap<String, BTreeMap<EventKey, u64>> {
    let mut totals: BTreeMap<String, BTreeMap<EventKey, u64>> = BTreeMap::new();
    for s in snaps {
        for g in &s.attribution.as_ref().unwrap().groups {
            let group = totals.entry(g.name.clone()).or_default();
            for (key, ns) in &g.events {
                *group.entry(*key).or_default() += ns;
            }
        }
    }
    totals
}

fn sum(events: Option<&BTreeMap<EventKey, u64>>, keys: &[EventKey]) -> u64 {
    events.map_or(0, |e| {
        keys.iter().map(|k| e.get(k).copied().unwrap_or(0)).sum()
    })
}

fn all_events(events: Option<&BTreeMap<EventKey, u64>>) -> u64 {
    sum(events, &EventKey::ALL)
}

const SOCKET_CALLS: [EventKey; 2] = [EventKey::SockSend, EventKey::SockRecv];

/// A TCP stream from namespace `a{i}` to a discard server in `b{i}`, the
/// sender's egress shaped to `rate` (tbf, with room for everything TCP's
/// small queues let it queue, so it paces rather than drops).
fn shaped_pair(topology: &mut Topology, i: u8, rate: &str) -> (String, String, String) {
    let a = topology.namespace(&format!("a{i}"));
    let b = topology.namespace(&format!("b{i}"));
    let (ia, ib) = topology.link(&a, &b);
    topology.addr(&a, &ia, &format!("198.18.22{i}.1/24"));
    topology.addr(&b, &ib, &format!("198.18.22{i}.2/24"));
    run(
        "tc",
        &format!("-n {a} qdisc add dev {ia} root tbf rate {rate} burst 256kb limit 32mb"),
    );
    (a, b, format!("198.18.22{i}.2:57{i}0"))
}

/// Two groups at 3:1 bitrates: three shaped TCP pairs against one, so
/// that every byte costs the same in both (one stream at three times the
/// rate would batch better). Their network time is in that ratio, their
/// socket-call time most of their processes' system time, and every
/// snapshot adds up.
#[test]
fn groups_pay_in_proportion_to_their_traffic() {
    let fast = Cgroup::new("fast");
    let slow = Cgroup::new("slow");
    let mut topology = Topology::new("g");
    let pairs: Vec<(&Cgroup, (String, String, String))> = (1..=4)
        .map(|i| {
            let group = if i < 4 { &fast } else { &slow };
            (group, shaped_pair(&mut topology, i, "400mbit"))
        })
        .collect();
    let stat = NettoStat::start(1, &["--by", "cgroup", "--interval", "0.5"]);

    let send_secs = scaled_secs(6);
    let sinks: Vec<(&Cgroup, Server)> = pairs
        .iter()
        .map(|(group, (_, b, dest))| {
            let args = format!(
                "discard --proto tcp --listen {dest} --duration {}",
                send_secs + 2
            );
            (*group, Server::start(group.loadgen_in(b, &args)))
        })
        .collect();
    let senders: Vec<(&Cgroup, thread::JoinHandle<LoadReport>)> = pairs
        .iter()
        .map(|(group, (a, _, dest))| {
            let command = group.loadgen_in(
                a,
                &format!("send --proto tcp --syscall write --dest {dest} --duration {send_secs}"),
            );
            (*group, thread::spawn(move || run_client(command)))
        })
        .collect();
    let mut stime: BTreeMap<String, u64> = BTreeMap::new();
    let mut bytes: BTreeMap<String, u64> = BTreeMap::new();
    for (group, sender) in senders {
        let report = sender.join().unwrap();
        *stime.entry(group.path.clone()).or_default() += report.stime_ns;
        *bytes.entry(group.path.clone()).or_default() += report.bytes;
    }
    for (group, sink) in sinks {
        *stime.entry(group.path.clone()).or_default() += sink.finish(0.0).stime_ns;
    }
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();

    assert_parts_add_up(&snaps);
    let totals = group_totals(&snaps.iter().collect::<Vec<_>>());
    let time = |g: &Cgroup| all_events(totals.get(&g.path));
    let ratio = time(&fast) as f64 / time(&slow) as f64;
    let sent = bytes[&fast.path] as f64 / bytes[&slow.path] as f64;
    eprintln!(
        "network time {} / {} ns = {ratio:.2}, bytes {sent:.2}; groups {totals:?}",
        time(&fast),
        time(&slow)
    );
    assert!(
        (2.55..=3.45).contains(&ratio),
        "fast/slow network time {ratio:.2}, not 3 within 15 % (bytes {sent:.2})"
    );
    for group in [&fast, &slow] {
        let calls = sum(totals.get(&group.path), &SOCKET_CALLS) as f64;
        let share = calls / stime[&group.path] as f64;
        eprintln!(
            "{}: socket calls {calls} ns, system time {} ns: {share:.2}",
            group.path, stime[&group.path]
        );
        assert!(
            (0.60..=1.05).contains(&share),
            "{}: socket calls {share:.2} of its processes' system time",
            group.path
        );
    }
}

/// A sender moved from one group to another halfway: each is charged only
/// while it was there, and about half each.
#[test]
fn a_moved_process_is_charged_to_each_group_for_its_time_there() {
    let before = Cgroup::new("before");
    let after = Cgroup::new("after");
    let sink_group = Cgroup::new("sink");
    let mut topology = Topology::new("m");
    let a = topology.namespace("a");
    let b = topology.namespace("b");
    let (ia, ib) = topology.link(&a, &b);
    topology.addr(&a, &ia, "198.18.225.1/24");
    topology.addr(&b, &ib, "198.18.225.2/24");
    let dest = "198.18.225.2:5750";
    let stat = NettoStat::start(1, &["--by", "cgroup", "--interval", "0.5"]);

    let half = scaled(Duration::from_secs(2));
    let _sink = Server::start(sink_group.loadgen_in(
        &b,
        &format!(
            "discard --proto tcp --listen {dest} --duration {}",
            2 * half.as_secs() + 3
        ),
    ));
    let mut sender = before
        .loadgen_in(
            &a,
            &format!(
                "send --proto tcp --syscall write --dest {dest} --duration {}",
                2 * half.as_secs()
            ),
        )
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = now_unix();
    thread::sleep(half);
    let moved = now_unix();
    after.adopt(sender.id());
    let status = sender.wait().unwrap();
    let ended = now_unix();
    assert!(status.success(), "sender failed: {status}");
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();

    assert_parts_add_up(&snaps);
    let only_before = overlapping(&snaps, started, moved - 0.05)
        .into_iter()
        .filter(|s| s.ts < moved - 0.05)
        .collect::<Vec<_>>();
    let only_after = overlapping(&snaps, moved + 0.05, ended)
        .into_iter()
        .filter(|s| s.ts - s.interval_s > moved + 0.05)
        .collect::<Vec<_>>();
    assert!(only_before.len() >= 2 && only_after.len() >= 2);
    let early = group_totals(&only_before);
    let late = group_totals(&only_after);
    eprintln!("before the move {early:?}\nafter it {late:?}");
    assert!(all_events(early.get(&before.path)) > 0);
    assert_eq!(
        all_events(early.get(&after.path)),
        0,
        "charged before it came"
    );
    assert!(all_events(late.get(&after.path)) > 0);
    assert_eq!(
        all_events(late.get(&before.path)),
        0,
        "charged after it left"
    );

    let totals = group_totals(&snaps.iter().collect::<Vec<_>>());
    let sends = |g: &Cgroup| sum(totals.get(&g.path), &[EventKey::SockSend]) as f64;
    let share = sends(&before) / (sends(&before) + sends(&after));
    eprintln!("share of the sends before the move: {share:.2}");
    assert!(
        (0.3..=0.7).contains(&share),
        "{share:.2} of the sends charged to the first group"
    );
}

/// Traffic forwarded by a router namespace: the router's forwarding work is
/// charged to its namespace, not to a process that happens to be running
/// (a busy loop on the host, in the host's namespace).
#[test]
fn forwarded_traffic_lands_on_the_router_namespace() {
    let mut topology = Topology::new("f");
    let (a, b, r) = topology.routed(226);
    let inode = |ns: &str| {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(format!("/run/netns/{ns}"))
            .unwrap()
            .ino()
            .to_string()
    };
    let host = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata("/proc/self/ns/net").unwrap().ino().to_string()
    };
    let stat = NettoStat::start(1, &["--by", "netns", "--interval", "0.5"]);

    let secs = scaled_secs(3);
    let dest = "198.18.227.1:5760";
    let mut sink = topology.exec(&b, LOADGEN);
    sink.args(
        format!(
            "discard --proto tcp --listen {dest} --duration {}",
            secs + 2
        )
        .split_whitespace(),
    );
    let _sink = Server::start(sink);
    let _bystander = Guarded(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let mut sender = topology.exec(&a, LOADGEN);
    sender.args(
        format!("send --proto tcp --syscall write --dest {dest} --duration {secs}")
            .split_whitespace(),
    );
    run_client(sender);
    thread::sleep(Duration::from_millis(700));
    let snaps = stat.stop();

    assert_parts_add_up(&snaps);
    let totals = group_totals(&snaps.iter().collect::<Vec<_>>());
    let rx: u64 = snaps
        .iter()
        .map(|s| s.event(EventKey::NetRxSoftirq).total_ns)
        .sum();
    let all: u64 = snaps
        .iter()
        .map(|s| {
            EventKey::ALL
                .iter()
                .map(|k| s.event(*k).total_ns)
                .sum::<u64>()
        })
        .sum();
    let router_rx = sum(totals.get(&inode(&r)), &[EventKey::NetRxSoftirq]) as f64 / rx as f64;
    let on_host = all_events(totals.get(&host)) as f64 / all as f64;
    eprintln!("router {router_rx:.3} of NET_RX, host {on_host:.4} of all; {totals:?}");
    assert!(
        router_rx >= 0.15,
        "the router's namespace has only {router_rx:.3} of NET_RX"
    );
    assert!(
        on_host <= 0.01,
        "the host's namespace (the busy loop's) has {on_host:.4} of all network time"
    );
}
