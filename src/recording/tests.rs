use std::collections::BTreeMap;

use super::check::{frame_problem, MAX_GROUP_NAME};
use super::*;
use crate::kernel::sampler::MAX_FREQUENCY_HZ;
use crate::model::{Attribution, EventKey, RecordingHeader, StackCount, Tier};

fn recording(cpus: usize, interval_s: f64) -> Recording {
    let snapshot = |i: usize| Snapshot {
        ts: 100.0 + i as f64,
        interval_s,
        ..Snapshot::empty("tracepoint", cpus)
    };
    Recording {
        header: RecordingHeader {
            schema_version: crate::model::SchemaVersion,
            netto_version: "0".into(),
            host: "h".into(),
            kernel: "k".into(),
            started: 99.0,
            duration_s: 3.0,
            frequency_hz: 99,
            backend: "tracepoint".into(),
            transport: "mmap".into(),
        },
        snapshots: (0..3).map(snapshot).collect(),
    }
}

/// `netto stat --json` output is the file most likely to be taken for
/// a recording: it is named as what it is.
#[test]
fn stat_output_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stat.jsonl");
    let mut lines = Vec::new();
    for snapshot in &recording(2, 1.0).snapshots {
        crate::frontends::stat::write_json(&mut lines, snapshot).unwrap();
    }
    std::fs::write(&path, &lines).unwrap();
    let err = load(&path).unwrap_err();
    assert!(err.is_bad_input());
    assert_eq!(
        err.to_string(),
        format!(
            "{} is `netto stat --json` output (a snapshot per line), not a recording; \
                 `netto record --duration SECONDS -o FILE.json` records one",
            path.display()
        )
    );
    // Other JSON is just not a recording.
    std::fs::write(&path, "{}").unwrap();
    assert!(load(&path)
        .unwrap_err()
        .to_string()
        .contains("is not a netto recording: the file: missing field `header`"));
    // Nor is a file that is not JSON at all, which says only that.
    std::fs::write(&path, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
    assert_eq!(
        load(&path).unwrap_err().to_string(),
        format!(
            "{} is not a netto recording: not JSON: expected value at line 1 column 1",
            path.display()
        )
    );
}

#[test]
fn stack_cpus_are_cpus_of_the_snapshot_adding_up_to_the_count() {
    let with_cpus = |cpus: &[(u32, u64)]| {
        let mut recording = recording(2, 1.0);
        recording.snapshots[0].stacks = vec![StackCount {
            context: crate::model::SampleContext::NetRx,
            frames: vec!["net_rx_action".into()],
            count: 3,
            cpus: cpus.iter().copied().collect(),
            group: None,
        }];
        validate(&recording)
    };
    assert_eq!(with_cpus(&[]), Ok(()));
    assert_eq!(with_cpus(&[(0, 1), (1, 2)]), Ok(()));
    let err = with_cpus(&[(0, 1), (1, 1)]).unwrap_err();
    assert_eq!(err.at, "snapshots[0].stacks[0].cpus");
    assert!(err.problem.contains("add up"), "{err}");
    let err = with_cpus(&[(7, 3)]).unwrap_err();
    assert!(err.problem.contains("CPU 7"), "{err}");
}

#[test]
fn frames_are_names_not_addresses() {
    for name in [
        "tcp_v4_rcv",
        "[unknown]",
        "netto_sketch",
        // An unnamed BPF program keeps its tag: 16 hex digits, no address.
        "bpf_prog_ffff0123456789ab",
        "foo+0x1a/0x40",
        "ffffabcd",
    ] {
        assert_eq!(frame_problem(name), None, "{name}");
    }
    for address in [
        "ffffffff81a0b0c0",
        "0xffffffff81a0b0c0",
        "tcp_v4_rcv+0xffffffffc0a00000",
        "FFFF888003a0b0c0",
    ] {
        assert!(
            frame_problem(address).unwrap().contains("address"),
            "{address}"
        );
    }
    for bad in ["", "a b", "a;b", "a\tb", "a\u{7}b"] {
        assert!(frame_problem(bad).is_some(), "{bad:?}");
    }
}

#[test]
fn a_cpu_may_overrun_its_interval_by_the_slack_and_no_more() {
    let interval_s = 2.0;
    let most = ((interval_s * (1.0 + OVERRUN_SHARE) + OVERRUN_S) * 1e9) as u64;
    let mut r = recording(4, interval_s);
    let rx = r.snapshots[1]
        .events
        .get_mut(&EventKey::NetRxSoftirq)
        .unwrap();
    rx.per_cpu_ns[3] = most;
    rx.total_ns = most;
    validate(&r).unwrap();
    let rx = r.snapshots[1]
        .events
        .get_mut(&EventKey::NetRxSoftirq)
        .unwrap();
    rx.per_cpu_ns[3] = most + 1;
    rx.total_ns = most + 1;
    let err = validate(&r).unwrap_err();
    assert_eq!(err.at, "snapshots[1].events.net_rx_softirq.per_cpu_ns[3]");
}

#[test]
fn a_calibration_interval_is_an_exact_one_of_a_run_that_estimates() {
    let mut r = recording(2, 1.0);
    r.snapshots[1].calibrating = Some(Tier::Sampled);
    validate(&r).unwrap();
    // A recording's JSON round trip keeps it.
    let json = serde_json::to_string(&r.snapshots[1]).unwrap();
    assert!(json.contains(r#""calibrating":"sampled""#), "{json}");
    let back: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(back.calibrating, Some(Tier::Sampled));
    assert!(!serde_json::to_string(&r.snapshots[0])
        .unwrap()
        .contains("calibrating"));
}

#[test]
fn cpus_up_to_the_kernel_limit() {
    validate(&recording(MAX_CPUS, 1.0)).unwrap();
    let mut r = recording(1, 1.0);
    r.snapshots[0] = Snapshot::empty("tracepoint", MAX_CPUS + 1);
    let err = validate(&r).unwrap_err();
    assert_eq!(err.to_string(), "snapshots[0].cpus: 8193 is outside 1-8192");
    r.snapshots[0] = Snapshot::empty("tracepoint", 0);
    assert_eq!(validate(&r).unwrap_err().at, "snapshots[0].cpus");
}

#[test]
fn an_empty_recording_is_valid_and_equal_timestamps_are_in_order() {
    let mut r = recording(2, 1.0);
    r.snapshots[2].ts = r.snapshots[1].ts;
    validate(&r).unwrap();
    r.snapshots.clear();
    validate(&r).unwrap();
}

/// An interval lasts as long as netto was stopped (Ctrl-Z) or its host
/// paused, far beyond any interval asked for; not beyond a century,
/// alone or together.
#[test]
fn intervals_as_long_as_a_stall_and_no_longer_than_a_century() {
    let stalled = 3.0 * 86400.0;
    validate(&recording(1, stalled)).unwrap();
    validate(&recording(1, 0.0)).unwrap();
    let err = validate(&recording(1, MAX_MEASURED_S * 1.01)).unwrap_err();
    assert_eq!(err.at, "snapshots[0].interval_s");
    let err = validate(&recording(1, MAX_MEASURED_S / 2.5)).unwrap_err();
    assert_eq!(err.at, "snapshots[2].interval_s");
    assert!(err.problem.contains("add up"), "{err}");
    let mut r = recording(1, 1.0);
    r.header.duration_s = stalled;
    validate(&r).unwrap();
    r.header.duration_s = f64::INFINITY;
    assert_eq!(validate(&r).unwrap_err().at, "header.duration_s");
}

/// Sums that do not fit 64 bits are refused, not saturated: a breakdown
/// whose categories wrap to its count, per-CPU times that wrap to the
/// total, stack samples beyond what the sampler takes.
#[test]
fn sums_that_overflow_are_refused_where_they_are() {
    use crate::model::{Breakdown, CategoryShare, SampleContext};
    let category = |samples| CategoryShare {
        category: "tcp".into(),
        samples,
        share: 0.5,
        cpu_ns: 0,
    };
    let mut r = recording(1, 1.0);
    // 2^64 - 1 + 2 wraps to 1.
    r.snapshots[0].breakdown = vec![Breakdown {
        context: SampleContext::NetRx,
        samples: 1,
        agreement: None,
        categories: vec![category(u64::MAX), category(2)],
    }];
    let err = validate(&r).unwrap_err();
    assert_eq!(err.at, "snapshots[0].breakdown[0].categories");
    assert!(err.problem.contains("2^64"), "{err}");
    // Each context within itself, together beyond what 1 CPU samples.
    let most = (1.0 + OVERRUN_SHARE + OVERRUN_S) * MAX_FREQUENCY_HZ as f64;
    let context = |context, samples| Breakdown {
        context,
        samples,
        agreement: None,
        categories: vec![category(samples)],
    };
    r.snapshots[0].breakdown = vec![
        context(SampleContext::NetRx, most as u64),
        context(SampleContext::NetTx, most as u64),
    ];
    let err = validate(&r).unwrap_err();
    assert_eq!(err.at, "snapshots[0].breakdown");

    let mut r = recording(2, 1.0);
    let rx = r.snapshots[0]
        .events
        .get_mut(&EventKey::NetRxSoftirq)
        .unwrap();
    rx.per_cpu_ns = vec![u64::MAX, 2];
    rx.total_ns = 1;
    let err = validate(&r).unwrap_err();
    assert_eq!(err.at, "snapshots[0].events.net_rx_softirq.per_cpu_ns[0]");

    // Stack samples that wrap to a few.
    let mut r = recording(1, 1.0);
    let stack = |count| StackCount::of(SampleContext::NetRx, &["net_rx_action"], count);
    r.snapshots[0].stacks = vec![stack(u64::MAX), stack(2)];
    let err = validate(&r).unwrap_err();
    assert_eq!(err.at, "snapshots[0].stacks");
    assert!(err.problem.contains("2^64"), "{err}");
}

/// A flow's share is an estimate over an exact total: one above 1 (as
/// netto wrote them before it kept shares within the total) loads.
#[test]
fn a_flow_share_above_one_is_an_estimate_that_loads() {
    use crate::model::{FiveTuple, FlowEstimate, SketchCost, SketchSnapshot, XdpMode};
    let mut r = recording(1, 1.0);
    let flow = |share| FlowEstimate {
        flow: FiveTuple {
            src: "10.0.0.1".into(),
            dst: "10.0.0.2".into(),
            sport: 1,
            dport: 2,
            proto: "udp".into(),
        },
        packets: 3,
        bytes: 300,
        share,
        flows: Vec::new(),
    };
    let mut sketch = SketchSnapshot {
        ts: 100.0,
        interval_s: 1.0,
        iface: "lo".into(),
        mode: XdpMode::Generic,
        probability: 0.5,
        rows: 4,
        columns: 256,
        packet_unit: Default::default(),
        packets: 2,
        bytes: 200,
        gaps_reused: 0,
        top: vec![flow(1.5)],
        other_protocols: BTreeMap::new(),
        cost: SketchCost::default(),
    };
    r.snapshots[0].sketch = Some(sketch.clone());
    validate(&r).unwrap();
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        sketch.top = vec![flow(bad)];
        r.snapshots[0].sketch = Some(sketch.clone());
        assert_eq!(
            validate(&r).unwrap_err().at,
            "snapshots[0].sketch.top[0].share"
        );
    }
}

#[test]
fn attribution_adds_up_to_every_event() {
    use crate::model::{Group, GroupBy};
    let with = |edit: fn(&mut Attribution)| {
        let mut r = recording(1, 1.0);
        let rx = r.snapshots[0]
            .events
            .get_mut(&EventKey::NetRxSoftirq)
            .unwrap();
        rx.per_cpu_ns = vec![100];
        rx.total_ns = 100;
        let mut events = Attribution::zero_events();
        events.insert(EventKey::NetRxSoftirq, 60);
        let mut unattributed = Attribution::zero_events();
        unattributed.insert(EventKey::NetRxSoftirq, 40);
        let mut a = Attribution {
            by: GroupBy::Cgroup,
            on: true,
            groups: vec![Group {
                name: "/a".into(),
                label: "a".into(),
                events,
                traffic: None,
            }],
            unattributed,
            unattributed_why: BTreeMap::new(),
        };
        edit(&mut a);
        r.snapshots[0].attribution = Some(a);
        validate(&r)
    };
    assert_eq!(with(|_| {}), Ok(()));
    let err = with(|a| {
        a.unattributed.insert(EventKey::NetRxSoftirq, 41);
    })
    .unwrap_err();
    assert_eq!(
        err.at,
        "snapshots[0].attribution.unattributed.net_rx_softirq"
    );
    assert!(
        err.problem.contains("101 ns, not the event's 100 ns"),
        "{err}"
    );
    let err = with(|a| {
        a.groups[0].events.remove(&EventKey::SockSend);
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "snapshots[0].attribution.groups[0].events: lacks sock_send"
    );
    // A process names itself: escape sequences, blanks, nothing.
    assert_eq!(with(|a| a.groups[0].label = "\u{1b}[2J".into()), Ok(()));
    assert_eq!(with(|a| a.groups[0].label = "   ".into()), Ok(()));
    assert_eq!(with(|a| a.groups[0].label = String::new()), Ok(()));
    assert_eq!(
        with(|a| a.groups[0].name = "/a\u{1b}]0;x\u{7}".into()),
        Ok(())
    );
    let err = with(|a| a.groups[0].name = String::new()).unwrap_err();
    assert_eq!(err.at, "snapshots[0].attribution.groups[0].name");
    let err = with(|a| a.groups[0].label = "x".repeat(MAX_GROUP_NAME + 1)).unwrap_err();
    assert_eq!(err.at, "snapshots[0].attribution.groups[0].label");
    let err = with(|a| {
        let twin = a.groups[0].clone();
        a.groups.push(twin);
    })
    .unwrap_err();
    assert!(err.problem.contains("twice"), "{err}");
    let err = with(|a| a.on = false).unwrap_err();
    assert!(err.problem.contains("off"), "{err}");
}

#[test]
fn a_stacks_group_is_a_group_of_its_snapshot() {
    use crate::model::{Group, GroupBy, SampleContext};
    let with = |attributed: bool, group: &str| {
        let mut r = recording(1, 1.0);
        r.snapshots[0].stacks =
            vec![StackCount::of(SampleContext::NetRx, &["net_rx_action"], 1).for_group(group)];
        r.snapshots[0].attribution = attributed.then(|| Attribution {
            by: GroupBy::Cgroup,
            on: true,
            groups: vec![Group {
                name: "/a".into(),
                label: "a".into(),
                events: Attribution::zero_events(),
                traffic: None,
            }],
            unattributed: Attribution::zero_events(),
            unattributed_why: BTreeMap::new(),
        });
        validate(&r)
    };
    assert_eq!(with(true, "/a"), Ok(()));
    let err = with(true, "/b").unwrap_err();
    assert_eq!(err.at, "snapshots[0].stacks[0].group");
    assert_eq!(with(false, "/a").unwrap_err().at, err.at);
}

#[test]
fn parse_errors_say_where() {
    let err = parse(br#"{"header": {"netto_version": 1}}"#).unwrap_err();
    assert_eq!(err.at, "header.netto_version");
    assert!(
        err.problem.starts_with("invalid type: integer `1`"),
        "{err}"
    );
}
