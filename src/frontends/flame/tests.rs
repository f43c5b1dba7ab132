use super::*;
use crate::model::RecordingHeader;

#[test]
fn recording_labels_name_host_kernel_duration_frequency_backend() {
    let header = RecordingHeader {
        schema_version: crate::model::SchemaVersion,
        netto_version: "0.1.0".into(),
        host: "box1".into(),
        kernel: "6.8.0-31-generic".into(),
        started: 1_700_000_000.0,
        duration_s: 12.04,
        frequency_hz: 99,
        backend: "tracepoint".into(),
        transport: "mmap".into(),
    };
    let mut recording = Recording {
        header,
        snapshots: vec![Snapshot::empty("tracepoint", 1)],
    };
    let labels = Labels::for_recording(&recording);
    assert_eq!(labels.title, "Kernel network stack CPU on box1");
    assert_eq!(
        labels.subtitle,
        "kernel 6.8.0-31-generic, 12.0 s sampled at 99 Hz, tracepoint backend"
    );
    assert!(!labels.estimated);
    let widths = inferno_options(&labels, Weight::Time).subtitle.unwrap();
    assert!(widths.ends_with("widths: exact time"), "{widths}");
    // One interval in a tier that estimates, and the widths say so.
    recording.snapshots.push(Snapshot {
        tier: Tier::Softirq,
        ..Snapshot::empty("tracepoint", 1)
    });
    let labels = Labels::for_recording(&recording);
    let widths = inferno_options(&labels, Weight::Time).subtitle.unwrap();
    assert!(widths.contains("estimated from samples"), "{widths}");
}

fn interval(net_rx_ns: u64, timers_ns: u64, stacks: Vec<StackCount>) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 1);
    for (key, ns) in [
        (crate::model::EventKey::NetRxSoftirq, net_rx_ns),
        (crate::model::EventKey::NetTimers, timers_ns),
    ] {
        let time = s.events.get_mut(&key).unwrap();
        time.total_ns = ns;
        time.per_cpu_ns = vec![ns];
    }
    s.stacks = stacks;
    s
}

#[test]
fn exact_time_scales_each_interval_to_its_context_time() {
    let tcp = ["net_rx_action", "tcp_v4_rcv"];
    let gro = ["net_rx_action", "napi_gro_receive"];
    let pace = ["hrtimer_run_softirq", "tcp_pace_kick"];
    // Interval 1: 3 samples stand for 900 ns of NET_RX; interval 2: 1
    // sample for 1000 ns; the timers were sampled in interval 2 only.
    let snapshots = [
        interval(
            900,
            50,
            vec![
                StackCount::of(SampleContext::NetRx, &tcp, 2),
                StackCount::of(SampleContext::NetRx, &gro, 1),
            ],
        ),
        interval(
            1_000,
            70,
            vec![
                StackCount::of(SampleContext::NetRx, &gro, 1),
                StackCount::of(SampleContext::NetTimers, &pace, 4),
            ],
        ),
    ];
    let towers = |weight| -> Vec<(SampleContext, String, u64)> {
        flame_stacks(&snapshots, weight, Scope::All)
            .into_iter()
            .map(|t| (t.context, t.frames.join(";"), t.width))
            .collect()
    };
    assert_eq!(
        towers(Weight::Time),
        [
            (SampleContext::NetRx, gro.join(";"), 300 + 1_000),
            (SampleContext::NetRx, tcp.join(";"), 600),
            (SampleContext::NetTimers, pace.join(";"), 70),
            (SampleContext::NetTimers, NOT_SAMPLED.to_owned(), 50),
        ]
    );
    let total: u64 = towers(Weight::Time).iter().map(|t| t.2).sum();
    assert_eq!(total, 900 + 50 + 1_000 + 70, "every nanosecond measured");
    assert_eq!(
        towers(Weight::Samples),
        [
            (SampleContext::NetRx, gro.join(";"), 2),
            (SampleContext::NetRx, tcp.join(";"), 2),
            (SampleContext::NetTimers, pace.join(";"), 4),
        ]
    );
}

/// An interval of NET_RX time 1000 ns and net_timers 100 ns, 600 and
/// 60 of it for cgroup /a, 300 and 0 for /b, the rest for nobody known;
/// sampled 3:1:1 (/a, /b, nobody) in NET_RX and once, for /a, in the
/// timers.
fn attributed() -> Snapshot {
    use crate::model::{Attribution, Group, GroupBy};
    let tcp = ["net_rx_action", "tcp_v4_rcv"];
    let gro = ["net_rx_action", "napi_gro_receive"];
    let pace = ["hrtimer_run_softirq", "tcp_pace_kick"];
    let mut s = interval(
        1_000,
        100,
        vec![
            StackCount::of(SampleContext::NetRx, &tcp, 2).for_group("/a"),
            StackCount::of(SampleContext::NetRx, &gro, 1).for_group("/a"),
            StackCount::of(SampleContext::NetRx, &tcp, 1).for_group("/b"),
            StackCount::of(SampleContext::NetRx, &gro, 1),
            StackCount::of(SampleContext::NetTimers, &pace, 1).for_group("/a"),
        ],
    );
    let events = |rx, timers| {
        let mut events = Attribution::zero_events();
        events.insert(EventKey::NetRxSoftirq, rx);
        events.insert(EventKey::NetTimers, timers);
        events
    };
    let group = |name: &str, rx, timers| Group {
        name: name.into(),
        label: name.into(),
        events: events(rx, timers),
        traffic: None,
    };
    s.attribution = Some(Attribution {
        by: GroupBy::Cgroup,
        on: true,
        groups: vec![group("/a", 600, 60), group("/b", 300, 0)],
        unattributed: events(100, 40),
        unattributed_why: BTreeMap::new(),
    });
    s
}

fn towers(
    snapshots: &[Snapshot],
    weight: Weight,
    scope: Scope<'_>,
) -> Vec<(Option<String>, String, u64)> {
    flame_stacks(snapshots, weight, scope)
        .into_iter()
        .map(|t| {
            let frames = format!("{};{}", t.context.name(), t.frames.join(";"));
            (t.root, frames, t.width)
        })
        .collect()
}

#[test]
fn a_groups_graph_shares_out_its_own_time() {
    let snapshots = [attributed(), attributed()];
    let tower = |frames: &str, width| (None, frames.to_owned(), width);
    // Per interval /a's 600 ns of NET_RX over its 2 + 1 samples, its
    // 60 ns of timers over its one.
    assert_eq!(
        towers(&snapshots, Weight::Time, Scope::Group("/a")),
        [
            tower("net_rx;net_rx_action;tcp_v4_rcv", 800),
            tower("net_rx;net_rx_action;napi_gro_receive", 400),
            tower("net_timers;hrtimer_run_softirq;tcp_pace_kick", 120),
        ]
    );
    // /b had timer time in no interval: nothing to draw there; its
    // NET_RX time is all its one stack's.
    assert_eq!(
        towers(&snapshots, Weight::Time, Scope::Group("/b")),
        [tower("net_rx;net_rx_action;tcp_v4_rcv", 600)]
    );
    assert_eq!(
        towers(&snapshots, Weight::Samples, Scope::Group("/a")),
        [
            tower("net_rx;net_rx_action;tcp_v4_rcv", 4),
            tower("net_rx;net_rx_action;napi_gro_receive", 2),
            tower("net_timers;hrtimer_run_softirq;tcp_pace_kick", 2),
        ]
    );
    // A group a snapshot does not have took no time in it.
    assert!(towers(&snapshots, Weight::Time, Scope::Group("/c")).is_empty());
}

#[test]
fn a_group_with_time_and_no_samples_is_not_sampled() {
    let mut s = attributed();
    s.stacks
        .retain(|stack| stack.group.as_deref() != Some("/b"));
    assert_eq!(
        towers(&[s], Weight::Time, Scope::Group("/b")),
        [(None, format!("net_rx;{NOT_SAMPLED}"), 300)]
    );
}

#[test]
fn every_group_under_its_own_root_adds_up_to_the_whole() {
    let snapshots = [attributed()];
    let got = towers(&snapshots, Weight::Time, Scope::EachGroup);
    let root = |name: &str| Some(name.to_owned());
    assert_eq!(
        got,
        [
            (root("[/a]"), "net_rx;net_rx_action;tcp_v4_rcv".into(), 400),
            (root("[/b]"), "net_rx;net_rx_action;tcp_v4_rcv".into(), 300),
            (
                root("[/a]"),
                "net_rx;net_rx_action;napi_gro_receive".into(),
                200
            ),
            (
                root(UNATTRIBUTED_FRAME),
                "net_rx;net_rx_action;napi_gro_receive".into(),
                100
            ),
            (
                root("[/a]"),
                "net_timers;hrtimer_run_softirq;tcp_pace_kick".into(),
                60
            ),
            (
                root(UNATTRIBUTED_FRAME),
                format!("net_timers;{NOT_SAMPLED}"),
                40
            ),
        ]
    );
    let total: u64 = got.iter().map(|t| t.2).sum();
    assert_eq!(total, 1_000 + 100, "every nanosecond measured");
    // The same as all stacks in the whole time, but for the roots.
    let all: u64 = towers(&snapshots, Weight::Time, Scope::All)
        .iter()
        .map(|t| t.2)
        .sum();
    assert_eq!(all, total);
    let folded = folded::fold(&flame_stacks(&snapshots, Weight::Time, Scope::EachGroup));
    assert_eq!(
        folded.get("[/b];net_rx;net_rx_action;tcp_v4_rcv"),
        Some(&300)
    );
}

#[test]
fn without_a_scope_groups_change_nothing() {
    let mut plain = attributed();
    for stack in &mut plain.stacks {
        stack.group = None;
    }
    plain.attribution = None;
    let fold = |s: Snapshot| folded::fold(&flame_stacks(&[s], Weight::Time, Scope::All));
    assert_eq!(fold(attributed()), fold(plain));
}

#[test]
fn scopes_need_attribution_and_a_known_group() {
    let snapshots = [attributed()];
    assert_eq!(check_scope(&snapshots, Scope::Group("/a")), Ok(()));
    assert_eq!(check_scope(&snapshots, Scope::EachGroup), Ok(()));
    let err = check_scope(&snapshots, Scope::Group("/nope")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no group \"/nope\" (by cgroup); groups: /a, /b"
    );
    let mut bare = attributed();
    bare.attribution = None;
    assert_eq!(check_scope(&[bare.clone()], Scope::All), Ok(()));
    for scope in [Scope::Group("/a"), Scope::EachGroup] {
        assert_eq!(
            check_scope(&[bare.clone()], scope),
            Err(ScopeError::NoAttribution)
        );
    }
}

#[test]
fn an_unknown_groups_error_lists_the_heaviest_few() {
    use crate::model::{Attribution, Group};
    let mut s = attributed();
    let attribution = s.attribution.as_mut().unwrap();
    for i in 0..7u64 {
        let mut events = Attribution::zero_events();
        events.insert(EventKey::SockSend, 1_000 * (i + 1));
        attribution.groups.push(Group {
            name: format!("/g{i}"),
            label: String::new(),
            events,
            traffic: None,
        });
    }
    let err = check_scope(&[s], Scope::Group("/nope")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no group \"/nope\" (by cgroup); groups: /g6, /g5, /g4, /g3, /g2, and 4 more"
    );
}

#[test]
fn no_samples_becomes_invalid_data_for_io_callers() {
    let err: io::Error = FlameError::NoSamples.into();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("no stack samples"));
}
