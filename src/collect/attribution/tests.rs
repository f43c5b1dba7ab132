use super::*;
use crate::abi::netto_event;
use proptest::prelude::*;

/// Names every group by its id.
struct ById;

impl Namer for ById {
    fn names(&mut self, ids: &[GroupId]) -> Vec<(String, String)> {
        ids.iter()
            .map(|id| (format!("{id:?}"), "label".to_owned()))
            .collect()
    }
}

const RX: usize = netto_event::NETTO_EV_NET_RX_SOFTIRQ as usize;
const SEND: usize = netto_event::NETTO_EV_SOCK_SEND as usize;

fn key(cgroup: u64, tgid: u32, netns: u32) -> netto_group_key {
    netto_group_key {
        cgroup,
        tgid,
        netns,
        ..netto_group_key::default()
    }
}

fn time(pairs: &[(usize, u64)]) -> netto_group_time {
    let mut t = netto_group_time::default();
    for &(event, ns) in pairs {
        t.ns[event] = ns;
    }
    t
}

fn events(pairs: &[(EventKey, u64)]) -> BTreeMap<EventKey, CpuTime> {
    EventKey::ALL
        .iter()
        .map(|&k| {
            let ns = pairs.iter().find(|(e, _)| *e == k).map_or(0, |p| p.1);
            (
                k,
                CpuTime {
                    total_ns: ns,
                    per_cpu_ns: vec![ns],
                    count: 0,
                    ..CpuTime::default()
                },
            )
        })
        .collect()
}

fn ledger(by: GroupBy, max_groups: usize) -> Ledger {
    let kubelet_logs = crate::collect::groups::kubelet::DEFAULT_ROOT.into();
    Ledger::new(
        Config {
            by,
            max_groups,
            kubelet_logs,
        },
        &[],
    )
}

/// Every event's groups and unattributed add up to its total.
fn assert_adds_up(a: &Attribution, totals: &BTreeMap<EventKey, CpuTime>) {
    for (key, t) in totals {
        let groups: u64 = a.groups.iter().map(|g| g.events[key]).sum();
        assert_eq!(groups + a.unattributed[key], t.total_ns, "{key:?} in {a:?}");
    }
}

#[test]
fn groups_by_one_field_and_the_rest_is_unattributed() {
    let mut ledger = ledger(GroupBy::Cgroup, 20);
    let reading = [
        (key(10, 100, 1), time(&[(RX, 300), (SEND, 50)])),
        (key(10, 101, 1), time(&[(RX, 100)])),
        (key(20, 200, 2), time(&[(RX, 200)])),
        // Forwarded: no cgroup, so unattributed under --by cgroup.
        (key(0, 0, 3), time(&[(RX, 150)])),
    ];
    let totals = events(&[(EventKey::NetRxSoftirq, 1000), (EventKey::SockSend, 50)]);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    assert_eq!(a.by, GroupBy::Cgroup);
    let names: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["Cgroup(10)", "Cgroup(20)"], "heaviest first");
    assert_eq!(a.groups[0].events[&EventKey::NetRxSoftirq], 400);
    assert_eq!(a.groups[0].events[&EventKey::SockSend], 50);
    assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 1000 - 600);
    assert_eq!(a.unattributed[&EventKey::SockSend], 0);

    // The same map under --by netns: the forwarded part has an owner.
    let mut ledger = self::ledger(GroupBy::Netns, 20);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 1000 - 750);
}

/// A key of `--by flow|port`: the socket `local -> remote` (TCP).
fn conn_key(tgid: u32, local: &str, remote: &str) -> netto_group_key {
    Key {
        cgroup: 10,
        tgid,
        netns: 7,
        conn: Some(Conn {
            proto: 6,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
        }),
        no_conn: None,
    }
    .into()
}

fn with_bytes(mut t: netto_group_time, bytes_in: u64, bytes_out: u64) -> netto_group_time {
    t.bytes = [bytes_in, bytes_out];
    t
}

#[test]
fn keys_keep_their_connection_through_the_kernel_layout() {
    for (local, remote) in [
        ("10.0.0.1:40000", "10.0.0.2:5201"),
        ("[fd00::1]:443", "[fd00::2]:50000"),
        ("0.0.0.0:53", "0.0.0.0:0"),
    ] {
        let raw = conn_key(1, local, remote);
        let back = Key::from(&raw);
        let conn = back.conn.unwrap();
        assert_eq!(conn.local, local.parse().unwrap());
        assert_eq!(conn.remote, remote.parse().unwrap());
        assert_eq!(Key::from(&netto_group_key::from(back)), back);
    }
    assert_eq!(Key::from(&key(1, 2, 3)).conn, None);
}

#[test]
fn flows_carry_their_bytes_and_cost_per_kib() {
    let mut ledger = ledger(GroupBy::Flow, 20);
    let reading = [
        // One connection used by two processes: one flow.
        (
            conn_key(100, "10.0.0.1:40000", "10.0.0.2:5201"),
            with_bytes(time(&[(RX, 300), (SEND, 100)]), 0, 3072),
        ),
        (
            conn_key(101, "10.0.0.1:40000", "10.0.0.2:5201"),
            with_bytes(time(&[(SEND, 112)]), 0, 1024),
        ),
        (
            conn_key(100, "[fd00::1]:443", "[fd00::2]:50000"),
            with_bytes(time(&[(RX, 100)]), 1024, 0),
        ),
        // A task's time before its call named a socket: no connection.
        (key(10, 100, 7), time(&[(SEND, 38)])),
    ];
    let totals = events(&[(EventKey::NetRxSoftirq, 500), (EventKey::SockSend, 250)]);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    assert_eq!(a.groups.len(), 2);
    let bulk = a.groups[0].traffic.unwrap();
    assert_eq!((bulk.bytes_in, bulk.bytes_out), (0, 4096));
    assert_eq!(bulk.ns_per_kib, Some(512 * 1024 / 4096));
    assert_eq!(a.groups[1].traffic.unwrap().ns_per_kib, Some(100));
    assert_eq!(a.unattributed[&EventKey::SockSend], 38);
    assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 100);
    // Why: the call before it named its socket, the rest of NET_RX no
    // point claimed.
    let why: Vec<u64> = a.unattributed_why.values().copied().collect();
    assert_eq!(
        a.unattributed_why.keys().copied().collect::<Vec<_>>(),
        [
            Unattributed::SocketNotNamed,
            Unattributed::NoSocket,
            Unattributed::NotIp,
            Unattributed::Fragment,
            Unattributed::NoPoint
        ]
    );
    assert_eq!(why, [38, 0, 0, 0, 100]);

    // The same map by service: both ends' ports fold into their service.
    let mut ledger = self::ledger(GroupBy::Port, 20);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    let ports: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        ports,
        [
            "Port(Service { port: 5201, proto: 6, inbound: false })",
            "Port(Service { port: 443, proto: 6, inbound: true })"
        ]
    );

    // Under the other keys, groups carry no traffic, and no reasons.
    let mut ledger = self::ledger(GroupBy::Process, 20);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    assert!(a.groups.iter().all(|g| g.traffic.is_none()));
    assert!(a.unattributed_why.is_empty());

    // Forwarded packets: a device's key carries the packet's connection,
    // or why it has none.
    let mut ledger = self::ledger(GroupBy::Flow, 20);
    let unreadable = |no_conn| Key {
        no_conn,
        ..Key::from(&key(0, 0, 9))
    };
    let forwarded = [
        (
            conn_key(0, "10.1.0.1:40000", "10.2.0.1:80"),
            time(&[(RX, 200)]),
        ),
        (unreadable(Some(NoConn::NotIp)).into(), time(&[(RX, 70)])),
        (unreadable(Some(NoConn::Fragment)).into(), time(&[(RX, 30)])),
        (unreadable(None).into(), time(&[(RX, 5)])),
    ];
    let a = ledger.interval(&forwarded, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    assert_eq!(a.groups.len(), 1);
    assert_eq!(a.groups[0].events[&EventKey::NetRxSoftirq], 200);
    assert_eq!(a.unattributed_why[&Unattributed::NotIp], 70);
    assert_eq!(a.unattributed_why[&Unattributed::Fragment], 30);
    assert_eq!(a.unattributed_why[&Unattributed::NoSocket], 5);
    // The rest of NET_RX, and every send (no key had any).
    assert_eq!(a.unattributed_why[&Unattributed::NoPoint], 195 + 250);
    let why: u64 = a.unattributed_why.values().sum();
    assert_eq!(why, a.unattributed_total_ns());
}

#[test]
fn why_keys_without_a_connection_survive_the_kernel_layout() {
    for no_conn in [None, Some(NoConn::NotIp), Some(NoConn::Fragment)] {
        let k = Key {
            no_conn,
            ..Key::from(&key(0, 0, 9))
        };
        assert_eq!(Key::from(&netto_group_key::from(k)), k);
    }
}

#[test]
fn only_the_interval_counts() {
    let start = [(key(10, 1, 1), time(&[(RX, 5000)]))];
    let mut ledger = Ledger::new(
        Config {
            by: GroupBy::Process,
            max_groups: 20,
            kubelet_logs: crate::collect::groups::kubelet::DEFAULT_ROOT.into(),
        },
        &start,
    );
    let reading = [
        (key(10, 1, 1), time(&[(RX, 5300)])),
        // Removed (idle) and created again: all of it is new.
        (key(10, 2, 1), time(&[(RX, 40)])),
    ];
    let totals = events(&[(EventKey::NetRxSoftirq, 400)]);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    let rx: Vec<u64> = a
        .groups
        .iter()
        .map(|g| g.events[&EventKey::NetRxSoftirq])
        .collect();
    assert_eq!(rx, [300, 40]);
    assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 60);
}

#[test]
fn more_than_the_total_is_shown_in_the_next_interval() {
    let mut ledger = ledger(GroupBy::Process, 20);
    // A window open at the previous reading was settled since: its
    // group got 900 of which only 600 were charged in this interval.
    let first = [
        (key(1, 7, 1), time(&[(SEND, 600)])),
        (key(1, 8, 1), time(&[(SEND, 300)])),
    ];
    let totals = events(&[(EventKey::SockSend, 600)]);
    let a = ledger.interval(&first, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    assert_eq!(a.unattributed[&EventKey::SockSend], 0);
    let shown: Vec<u64> = a
        .groups
        .iter()
        .map(|g| g.events[&EventKey::SockSend])
        .collect();
    assert_eq!(shown, [400, 200], "in proportion");
    // Next interval: 500 more charged, 200 more given; the 300 carried
    // fit now.
    let second = [
        (key(1, 7, 1), time(&[(SEND, 800)])),
        (key(1, 8, 1), time(&[(SEND, 300)])),
    ];
    let totals = events(&[(EventKey::SockSend, 500)]);
    let a = ledger.interval(&second, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    let shown: Vec<u64> = a
        .groups
        .iter()
        .map(|g| g.events[&EventKey::SockSend])
        .collect();
    assert_eq!(shown, [400, 100]);
    assert_eq!(a.unattributed[&EventKey::SockSend], 0);
}

#[test]
fn the_lightest_groups_are_folded_into_other() {
    let mut ledger = ledger(GroupBy::Process, 2);
    let reading = [
        (key(1, 1, 1), time(&[(RX, 100)])),
        (key(1, 2, 1), time(&[(RX, 300)])),
        (key(1, 3, 1), time(&[(RX, 200)])),
        (key(1, 4, 1), time(&[(RX, 50)])),
    ];
    let totals = events(&[(EventKey::NetRxSoftirq, 700)]);
    let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
    assert_adds_up(&a, &totals);
    let names: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["Process(2)", "Process(3)", OTHER_GROUP]);
    assert_eq!(a.groups[2].events[&EventKey::NetRxSoftirq], 150);
    assert_eq!(a.groups[2].label, "2 more");
    // Samples are named as the interval's groups are.
    let name = |k| ledger.name_of(&Key::from(&k));
    assert_eq!(name(key(9, 2, 9)).as_deref(), Some("Process(2)"));
    assert_eq!(name(key(1, 4, 1)).as_deref(), Some(OTHER_GROUP));
    assert_eq!(name(key(1, 0, 1)), None, "no process known");
    // A quiet interval: the heaviest stay shown, at zero; nothing to fold.
    let a = ledger.interval(&reading, &events(&[]), 1.0, true, &mut ById);
    let names: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["Process(2)", "Process(3)"]);
    assert!(a.groups.iter().all(|g| g.total_ns() == 0));
    assert_eq!(ledger.name_of(&Key::from(&key(1, 4, 1))), None);
    // Off: nobody.
    ledger.interval(&reading, &events(&[]), 1.0, false, &mut ById);
    assert_eq!(ledger.name_of(&Key::from(&key(1, 2, 1))), None);
}

#[test]
fn off_means_no_groups_and_all_unattributed() {
    let mut ledger = ledger(GroupBy::Cgroup, 20);
    let reading = [(key(1, 1, 1), time(&[(RX, 100)]))];
    let totals = events(&[(EventKey::NetRxSoftirq, 700)]);
    let a = ledger.interval(&reading, &totals, 1.0, false, &mut ById);
    assert!(!a.on && a.groups.is_empty());
    assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 700);
    assert_adds_up(&a, &totals);
}

#[test]
fn idle_keys_only_when_the_map_fills() {
    let few: Vec<_> = (0..10)
        .map(|i| (key(1, i + 1, 1), time(&[(RX, 1)])))
        .collect();
    let mut ledger = ledger(GroupBy::Process, 20);
    ledger.interval(&few, &events(&[]), 1.0, true, &mut ById);
    ledger.interval(&few, &events(&[]), IDLE_S, true, &mut ById);
    assert!(ledger.idle_keys().is_empty(), "the map is far from full");
}

/// `n` keys of process ids from `first`, each with `ns` of receive time.
fn keys(first: u32, n: u32, ns: u64) -> Vec<(netto_group_key, netto_group_time)> {
    (first..first + n)
        .map(|tgid| (key(1, tgid, 1), time(&[(RX, ns)])))
        .collect()
}

#[test]
fn a_full_map_sheds_the_least_recently_grown_down_to_half() {
    let half = NETTO_MAX_GROUPS / 2;
    let mut ledger = ledger(GroupBy::Process, 20);
    // Reading 1: every key new. Reading 2: all but the first 100 grow.
    // Reading 3: all but the first 300 grow.
    let all = half + 150;
    ledger.interval(&keys(1, all, 1), &events(&[]), 1.0, true, &mut ById);
    let mut second = keys(1, 100, 1);
    second.extend(keys(101, all - 100, 2));
    ledger.interval(&second, &events(&[]), 1.0, true, &mut ById);
    let mut third = keys(1, 100, 1);
    third.extend(keys(101, 200, 2));
    third.extend(keys(301, all - 300, 3));
    ledger.interval(&third, &events(&[]), 1.0, true, &mut ById);

    let idle = ledger.idle_keys();
    assert_eq!(idle.len(), 150, "down to half");
    let tgids: Vec<u32> = idle.iter().map(|k| k.tgid).collect();
    assert!(
        (1..=100).all(|tgid| tgids.contains(&tgid)),
        "the least recently grown go first"
    );
    assert!(tgids.iter().all(|&tgid| tgid <= 300), "{tgids:?}");

    // A minute on, every idle key goes, beyond half.
    ledger.interval(&third, &events(&[]), IDLE_S, true, &mut ById);
    assert_eq!(ledger.idle_keys().len(), all as usize);
}

#[test]
fn what_a_key_gains_before_its_removal_counts_next_interval() {
    let mut ledger = ledger(GroupBy::Process, 20);
    let totals = events(&[(EventKey::NetRxSoftirq, 1000)]);
    let first = [(key(1, 7, 1), time(&[(RX, 100)]))];
    let a = ledger.interval(&first, &totals, 1.0, true, &mut ById);
    assert_eq!(a.groups[0].events[&EventKey::NetRxSoftirq], 100);
    // Removed holding 150: 50 more than it was read with.
    let removed = [Key::from(&first[0].0)];
    ledger.forgotten(&removed, &[(first[0].0, time(&[(RX, 150)]))]);
    // Back, from zero, with 30.
    let again = [(key(1, 7, 1), time(&[(RX, 30)]))];
    let a = ledger.interval(&again, &totals, 1.0, true, &mut ById);
    assert_eq!(a.groups[0].events[&EventKey::NetRxSoftirq], 80);
    assert_adds_up(&a, &totals);
    // Nothing twice.
    let a = ledger.interval(&again, &totals, 1.0, true, &mut ById);
    assert!(a
        .groups
        .iter()
        .all(|g| g.events[&EventKey::NetRxSoftirq] == 0));
}

#[test]
fn shares_add_up_to_the_total() {
    assert_eq!(share_out(&[1, 1, 1], 2), [1, 1, 0]);
    assert_eq!(share_out(&[600, 300], 600), [400, 200]);
    assert_eq!(share_out(&[0, 0], 5), [0, 0]);
    assert_eq!(
        share_out(&[u64::MAX, u64::MAX], u64::MAX)
            .iter()
            .map(|&s| u128::from(s))
            .sum::<u128>(),
        u128::from(u64::MAX)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the readings (groups growing by anything, the totals
    /// smaller or larger than what they claim), every interval adds up
    /// exactly, and groups never get more than they earned.
    #[test]
    fn every_interval_adds_up(
        steps in proptest::collection::vec(
            (proptest::collection::vec((0u64..4, 0u32..4, 0u64..2_000), 0..6), 0u64..5_000),
            1..8,
        ),
        max_groups in 1usize..4,
    ) {
        let mut ledger = ledger(GroupBy::Cgroup, max_groups);
        let mut cumulative: BTreeMap<(u64, u32), u64> = BTreeMap::new();
        let (mut earned, mut shown) = (0u64, 0u64);
        for (growth, total) in steps {
            for (cgroup, tgid, ns) in growth {
                *cumulative.entry((cgroup, tgid)).or_default() += ns;
                if cgroup != 0 {
                    earned += ns;
                }
            }
            let reading: Vec<_> = cumulative
                .iter()
                .map(|(&(cgroup, tgid), &ns)| (key(cgroup, tgid, 1), time(&[(RX, ns)])))
                .collect();
            let totals = events(&[(EventKey::NetRxSoftirq, total)]);
            let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
            let groups: u64 = a.groups.iter().map(|g| g.events[&EventKey::NetRxSoftirq]).sum();
            prop_assert_eq!(groups + a.unattributed[&EventKey::NetRxSoftirq], total);
            prop_assert!(a.groups.len() <= max_groups + 1);
            shown += groups;
            prop_assert!(shown <= earned);
        }
    }
}
