use super::*;

fn stats(run_count: u64, run_time_ns: u64) -> RunStats {
    RunStats {
        run_count,
        run_time_ns,
        recursion_misses: 0,
    }
}

fn read(at: Instant, stats: &[(u32, RunStats)]) -> Option<Read> {
    Some(Read {
        at,
        stats: stats.iter().copied().collect(),
    })
}

fn found(id: u32, hook: &'static str, iface: Option<&str>) -> Found {
    Found {
        id,
        name: format!("p{id}"),
        tag: "00".repeat(8),
        prog_type: "xdp",
        own: false,
        attach: vec![Attachment {
            hook,
            iface: iface.map(str::to_owned),
            mode: None,
            cgroup_id: None,
            link: true,
        }],
        fallback_hook: hook,
    }
}

fn events(net_rx_ns: u64) -> BTreeMap<EventKey, CpuTime> {
    let mut events = BTreeMap::new();
    events.insert(
        EventKey::NetRxSoftirq,
        CpuTime {
            total_ns: net_rx_ns,
            ..CpuTime::default()
        },
    );
    events
}

/// A watch with one interval's reads: the previous slice's end at 0,
/// this slice from 0.9 s to 1.0 s.
fn watch(
    previous: &[(u32, RunStats)],
    before: &[(u32, RunStats)],
    after: &[(u32, RunStats)],
) -> ProgramWatch {
    let t0 = Instant::now();
    ProgramWatch {
        found: vec![
            found(1, "xdp", Some("veth0")),
            found(2, "tc_egress", Some("veth1")),
        ],
        previous: read(t0, previous),
        before: read(t0 + Duration::from_millis(900), before),
        after: read(t0 + Duration::from_millis(1000), after),
        held: Duration::from_millis(100),
        ..ProgramWatch::default()
    }
}

#[test]
fn a_slice_is_scaled_to_the_interval() {
    // 1000 runs at 50 ns in the 0.1 s slice; none between slices.
    let mut w = watch(
        &[(1, stats(5, 250)), (2, stats(0, 0))],
        &[(1, stats(5, 250)), (2, stats(0, 0))],
        &[(1, stats(1005, 50_250)), (2, stats(10, 2_000))],
    );
    let priced = w.price(1.0, &events(5_000_000), false);
    assert_eq!(priced.basis, Some(PriceBasis::Slice));
    let xdp = &priced.programs[0];
    assert_eq!((xdp.runs, xdp.run_time_ns), (10_000, 500_000));
    assert_eq!(xdp.ns_per_run, Some(50.0));
    assert_eq!(xdp.event, Some(EventKey::NetRxSoftirq));
    assert!(
        (xdp.share_percent.unwrap() - 10.0).abs() < 1e-9,
        "0.5 ms of 5 ms"
    );
    let tc = &priced.programs[1];
    assert_eq!((tc.runs, tc.ns_per_run), (100, Some(200.0)));
    assert_eq!(tc.event, Some(EventKey::NetTxSoftirq));
    assert_eq!(tc.share_percent, None, "no NET_TX time to take a share of");
}

#[test]
fn statistics_held_elsewhere_count_the_whole_interval() {
    // 9000 runs in the 0.9 s gap, 1000 in the 0.1 s slice: on throughout.
    let mut w = watch(
        &[(1, stats(0, 0)), (2, stats(0, 0))],
        &[(1, stats(9_000, 450_000)), (2, stats(0, 0))],
        &[(1, stats(10_000, 500_000)), (2, stats(0, 0))],
    );
    let priced = w.price(1.0, &events(0), false);
    assert_eq!(priced.basis, Some(PriceBasis::WholeInterval));
    assert_eq!(priced.programs[0].runs, 10_000);
    assert_eq!(priced.programs[0].run_time_ns, 500_000);
    // A few runs in flight at the switch-off are not statistics held on.
    let mut w = watch(
        &[(1, stats(0, 0))],
        &[(1, stats(3, 150)), (2, stats(0, 0))],
        &[(1, stats(1_003, 50_150)), (2, stats(0, 0))],
    );
    assert_eq!(
        w.price(1.0, &events(0), false).basis,
        Some(PriceBasis::Slice)
    );
    // netto's own cost saw statistics on throughout: counted whole, even
    // when the programs ran only in the slice.
    let mut w = watch(
        &[(1, stats(0, 0))],
        &[(1, stats(0, 0)), (2, stats(0, 0))],
        &[(1, stats(1_000, 50_000)), (2, stats(0, 0))],
    );
    let priced = w.price(1.0, &events(0), true);
    assert_eq!(priced.basis, Some(PriceBasis::WholeInterval));
    assert_eq!(priced.programs[0].runs, 1_000);
}

#[test]
fn a_program_new_in_the_interval_is_priced_from_its_slice_and_a_gone_one_left_out() {
    // Program 2 appeared after the previous read; program 1 went before
    // the read after the slice.
    let mut w = watch(
        &[],
        &[(1, stats(0, 0)), (2, stats(0, 0))],
        &[(2, stats(10, 1_000))],
    );
    let priced = w.price(1.0, &events(0), false);
    assert_eq!(priced.programs[0].runs, 0, "gone: nothing counted");
    assert_eq!(priced.programs[1].runs, 100);
}

#[test]
fn a_program_found_nowhere_is_listed_only_when_it_ran() {
    let unlocated = |id| Found {
        attach: Vec::new(),
        fallback_hook: "tc",
        ..found(id, "tc", None)
    };
    let t0 = Instant::now();
    let mut w = ProgramWatch {
        found: vec![unlocated(1), unlocated(2)],
        before: read(t0, &[(1, stats(0, 0)), (2, stats(0, 0))]),
        after: read(t0, &[(1, stats(4, 400)), (2, stats(0, 0))]),
        held: Duration::from_millis(100),
        ..ProgramWatch::default()
    };
    let priced = w.price(1.0, &events(0), false);
    assert_eq!(priced.programs.len(), 1);
    assert_eq!(
        (priced.programs[0].hook.as_str(), priced.programs[0].event),
        ("tc", None)
    );
    assert_eq!(
        priced.not_attached, 1,
        "a tail-call target, or not yet attached"
    );
}

#[test]
fn netfilter_programs_count_toward_the_event_of_their_hook() {
    assert_eq!(
        event_of("netfilter", Some("prerouting")),
        Some(EventKey::NetRxSoftirq)
    );
    assert_eq!(
        event_of("netfilter", Some("output")),
        Some(EventKey::SockSend)
    );
    assert_eq!(event_of("cgroup_sock_create", None), None);
}
