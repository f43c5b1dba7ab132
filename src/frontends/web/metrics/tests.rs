use super::*;
use crate::model::{
    Breakdown, BudgetStatus, Calibration, CategoryShare, EventKey, SampleContext, SoftirqVector,
};

fn info() -> SourceInfo {
    SourceInfo {
        host: "box \"1\"".into(),
        kernel: "6.8".into(),
        backend: "tracepoint".into(),
        frequency_hz: Some(99),
        origin: Origin::Live,
        notes: vec![],
    }
}

fn snapshot() -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 2);
    s.ts = 100.0;
    s.interval_s = 1.0;
    let rx = s.events.get_mut(&EventKey::NetRxSoftirq).unwrap();
    rx.per_cpu_ns = vec![250_000_000, 500_000_000];
    rx.total_ns = 750_000_000;
    rx.count = 3;
    s.softirq.get_mut(&SoftirqVector::NetRx).unwrap().total_ns = 750_000_000;
    s.losses.recursion_misses = 1;
    s.overhead.process_cpu_ns = 2_000_000;
    s.overhead.bpf_stats = true;
    s.overhead.bpf_stats_held_s = 0.1;
    s.overhead.bpf_run_time_ns = 3_000_000;
    s.overhead.bpf_error_ns = 500_000;
    s.overhead.cost_percent = Some(0.5);
    s.overhead.estimated = true;
    s.breakdown = vec![Breakdown {
        context: SampleContext::NetRx,
        samples: 10,
        agreement: Some(1.0),
        categories: vec![CategoryShare {
            category: "local_tcp".into(),
            samples: 10,
            share: 1.0,
            cpu_ns: 750_000_000,
        }],
    }];
    s
}

/// The value of the sample line that starts with `series`.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn the_budget_and_its_steps_are_exposed() {
    let metrics = Metrics::new(&info()).unwrap();
    metrics.add(&snapshot());
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert_eq!(value(&text, "netto_budget_percent"), 0.0);
    assert!(!text.contains("netto_budget_steps_total{"));
    let mut s = snapshot();
    let mut status = BudgetStatus {
        percent: 1.0,
        over: true,
        at_floor: false,
        asked_frequency_hz: Some(99),
        asked_sketch_probability: None,
        change: Some(BudgetChange::Down {
            from_hz: 99,
            to_hz: 49,
        }),
        steps_down: 1,
        steps_up: 0,
        knobs: Vec::new(),
    };
    s.budget = Some(status.clone());
    metrics.add(&s);
    status.change = Some(BudgetChange::AttributionOff);
    s.budget = Some(status.clone());
    metrics.add(&s);
    status.change = Some(BudgetChange::Exceeded);
    status.at_floor = true;
    s.budget = Some(status);
    metrics.add(&s);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert_eq!(value(&text, "netto_budget_percent"), 1.0);
    assert_eq!(value(&text, "netto_budget_exceeded"), 1.0);
    let steps = |d: &str| {
        value(
            &text,
            &format!("netto_budget_steps_total{{direction=\"{d}\"}}"),
        )
    };
    assert_eq!((steps("down"), steps("up")), (2.0, 0.0));

    // A calibration interval, over by design and not judged, changes
    // neither way what the last judged interval said.
    let mut calibrating = s.clone();
    calibrating.calibrating = Some(Tier::Sampled);
    calibrating.budget.as_mut().unwrap().change = None;
    metrics.add(&calibrating);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert_eq!(value(&text, "netto_budget_exceeded"), 1.0);
    let mut kept = s.clone();
    kept.budget.as_mut().unwrap().over = false;
    kept.budget.as_mut().unwrap().change = Some(BudgetChange::Kept);
    metrics.add(&kept);
    metrics.add(&calibrating);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert_eq!(value(&text, "netto_budget_exceeded"), 0.0);
}

#[test]
fn estimates_count_in_the_event_series_and_are_marked_with_their_variance() {
    let metrics = Metrics::new(&info()).unwrap();
    metrics.add(&snapshot());
    let mut s = snapshot();
    s.tier = Tier::Softirq;
    let send = s.events.get_mut(&EventKey::SockSend).unwrap();
    send.per_cpu_ns = vec![0, 200_000_000];
    send.total_ns = 200_000_000;
    send.estimated = true;
    send.error_ns = Some(30_000_000);
    metrics.add(&s);
    metrics.add(&s);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    let estimated = r#"netto_estimated_cpu_seconds_total{cpu="1",event="sock_send"}"#;
    assert!((value(&text, estimated) - 0.4).abs() < 1e-9);
    let variance = r#"netto_estimated_cpu_seconds_variance_total{event="sock_send"}"#;
    assert!((value(&text, variance) - 2.0 * 0.03 * 0.03).abs() < 1e-12);
    // The event's series has its time however measured: the exact
    // first interval's (none on CPU 1) and both estimates.
    let all = r#"netto_cpu_seconds_total{cpu="1",event="sock_send"}"#;
    assert!((value(&text, all) - 0.4).abs() < 1e-9);
    assert_eq!(value(&text, r#"netto_estimated{event="sock_send"}"#), 1.0);
    assert_eq!(value(&text, r#"netto_estimated{event="sock_recv"}"#), 0.0);
    assert!(!text.contains(r#"netto_estimated_cpu_seconds_total{cpu="1",event="net_rx"#));
    assert_eq!(value(&text, r#"netto_tier{tier="softirq"}"#), 1.0);
    assert_eq!(value(&text, r#"netto_tier{tier="exact"}"#), 0.0);
    assert!(!text.contains("netto_estimate_agreement{"), "{text}");

    // The samples' agreement where the run measured the event: its
    // gauge, until an interval comes without it.
    s.events.get_mut(&EventKey::SockSend).unwrap().calibration = Some(Calibration {
        agreement: 0.85,
        samples: 200,
        ts: s.ts - 1.0,
        applied: true,
        ..Default::default()
    });
    metrics.add(&s);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    let agreement = r#"netto_estimate_agreement{event="sock_send"}"#;
    assert_eq!(value(&text, agreement), 0.85);
    let error = r#"netto_estimate_agreement_error{event="sock_send"}"#;
    assert!((value(&text, error) - 0.85 / 200f64.sqrt()).abs() < 1e-9);
    let at = r#"netto_estimate_calibration_timestamp_seconds{event="sock_send"}"#;
    assert_eq!(value(&text, at), s.ts - 1.0);
    let applied = r#"netto_estimate_calibration_applied{event="sock_send"}"#;
    assert_eq!(value(&text, applied), 1.0);
    assert!(!text.contains(r#"netto_estimate_agreement{event="sock_recv"}"#));
    metrics.add(&snapshot());
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert!(!text.contains("netto_estimate_agreement{"), "{text}");
    assert!(!text.contains("netto_estimate_agreement_error{"), "{text}");
    assert!(
        !text.contains("netto_estimate_calibration_applied{"),
        "{text}"
    );
    assert!(
        !text.contains("netto_estimate_calibration_timestamp_seconds{"),
        "{text}"
    );
    assert_eq!(value(&text, "netto_calibration_intervals_total"), 0.0);

    // A calibration interval is exact, and counted.
    let mut calibrating = snapshot();
    calibrating.calibrating = Some(Tier::Softirq);
    metrics.add(&calibrating);
    metrics.add(&s);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert_eq!(value(&text, "netto_calibration_intervals_total"), 1.0);
}

#[test]
fn counters_accumulate_in_seconds_with_labels() {
    let metrics = Metrics::new(&info()).unwrap();
    metrics.add(&snapshot());
    metrics.add(&snapshot());
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    let rx = r#"netto_cpu_seconds_total{cpu="1",event="net_rx_softirq"}"#;
    assert_eq!(value(&text, rx), 1.0);
    assert_eq!(
        value(&text, r#"netto_event_runs_total{event="net_rx_softirq"}"#),
        6.0
    );
    assert_eq!(
        value(&text, r#"netto_softirq_cpu_seconds_total{vector="NET_RX"}"#),
        1.5
    );
    assert_eq!(
        value(
            &text,
            r#"netto_samples_total{category="local_tcp",context="net_rx"}"#
        ),
        20.0
    );
    assert_eq!(value(&text, "netto_intervals_total"), 2.0);
    assert!((value(&text, "netto_own_cpu_seconds_total") - 0.010).abs() < 1e-12);
    assert!((value(&text, "netto_own_cpu_error_seconds_total") - 0.001).abs() < 1e-12);
    assert!((value(&text, "netto_bpf_stats_held_seconds_total") - 0.2).abs() < 1e-12);
    assert_eq!(value(&text, "netto_overhead_cpu_percent"), 0.5);
    assert_eq!(
        value(&text, r#"netto_losses_total{kind="recursion_misses"}"#),
        2.0
    );
    assert_eq!(
        value(&text, r#"netto_losses_total{kind="task_storage_failures"}"#),
        0.0
    );
    assert!(text.contains("# TYPE netto_cpu_seconds_total counter"));
    assert!(text.contains("# HELP netto_cpu_seconds_total CPU time"));
    // Label values are escaped, not cut.
    assert!(text.contains(r#"host="box \"1\"""#), "{text}");
}

#[test]
fn groups_have_series_while_shown_and_add_up_to_the_events() {
    use crate::model::Group;
    let metrics = Metrics::new(&info()).unwrap();
    let group = |name: &str, label: &str, rx: u64| {
        let mut events = Attribution::zero_events();
        events.insert(EventKey::NetRxSoftirq, rx);
        Group {
            name: name.into(),
            label: label.into(),
            events,
            traffic: None,
        }
    };
    let attributed = |groups: Vec<Group>| {
        let mut s = snapshot();
        let claimed: u64 = groups
            .iter()
            .map(|g| g.events[&EventKey::NetRxSoftirq])
            .sum();
        let mut unattributed = Attribution::zero_events();
        unattributed.insert(EventKey::NetRxSoftirq, 750_000_000 - claimed);
        s.attribution = Some(Attribution {
            by: GroupBy::Cgroup,
            on: true,
            groups,
            unattributed,
            unattributed_why: std::collections::BTreeMap::new(),
        });
        s
    };
    metrics.add(&attributed(vec![
        group("/a.service", "a.service", 500_000_000),
        group("/b", "b", 100_000_000),
    ]));
    metrics.add(&attributed(vec![group(
        "/a.service",
        "a.service",
        250_000_000,
    )]));
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    let series = |cgroup: &str, label: &str| {
        format!(
            r#"netto_cgroup_cpu_seconds_total{{cgroup="{cgroup}",event="net_rx_softirq",label="{label}"}}"#
        )
    };
    assert_eq!(value(&text, &series("/a.service", "a.service")), 0.75);
    assert_eq!(value(&text, &series("unattributed", "unattributed")), 0.65);
    assert!(
        !text.contains(r#"cgroup="/b""#),
        "a group no longer shown has no series:\n{text}"
    );
    assert_eq!(value(&text, "netto_attribution_on"), 1.0);
    assert!(text.contains("# TYPE netto_cgroup_cpu_seconds_total counter"));
}

#[test]
fn stream_clients_gauge_and_dropped_counter() {
    let metrics = Metrics::new(&info()).unwrap();
    metrics.set_stream_clients(5, 0);
    metrics.set_stream_clients(3, 2);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    assert_eq!(value(&text, "netto_stream_clients"), 3.0);
    assert_eq!(value(&text, "netto_stream_clients_dropped_total"), 2.0);
}

#[test]
fn network_programs_are_bounded_series_by_name_hook_and_interface() {
    use crate::model::{AttachPoint, NetworkProgram, NetworkPrograms};
    let program = |i: usize| NetworkProgram {
        id: i as u32,
        name: format!("prog{i}"),
        hook: "tc_ingress".into(),
        attach: vec![AttachPoint {
            hook: "tc_ingress".into(),
            iface: Some("veth0".into()),
            mode: None,
            cgroup_id: None,
            link: true,
        }],
        runs: 1_000,
        run_time_ns: 500_000_000,
        ..NetworkProgram::default()
    };
    let mut s = snapshot();
    s.network_programs = Some(NetworkPrograms {
        programs: (0..MAX_PROGRAM_SERIES + 3).map(program).collect(),
        ..NetworkPrograms::default()
    });
    let metrics = Metrics::new(&info()).unwrap();
    metrics.add(&s);
    metrics.add(&s);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    let series = r#"netto_ebpf_program_cpu_seconds_total{attach="tc_ingress",iface="veth0",program="prog0"}"#;
    assert_eq!(value(&text, series), 1.0, "two intervals of 0.5 s");
    let runs =
        r#"netto_ebpf_program_runs_total{attach="tc_ingress",iface="veth0",program="prog0"}"#;
    assert_eq!(value(&text, runs), 2_000.0);
    let other = r#"netto_ebpf_program_cpu_seconds_total{attach="other",iface="",program="other"}"#;
    assert_eq!(
        value(&text, other),
        3.0,
        "three programs beyond the bound, twice"
    );
    let count = text
        .lines()
        .filter(|l| l.starts_with("netto_ebpf_program_cpu_seconds_total{"))
        .count();
    assert_eq!(count, MAX_PROGRAM_SERIES + 1);
}

/// Each program's stage is a series of its family, whatever its name: the
/// label stays the closed set the reference lists.
#[test]
fn bpf_program_stages_are_one_category_series() {
    let metrics = Metrics::new(&info()).unwrap();
    let mut s = snapshot();
    s.breakdown[0].categories = ["bpf:xdp_fw", "bpf:xdp_lb"]
        .into_iter()
        .map(|name| CategoryShare {
            category: name.into(),
            samples: 5,
            share: 0.5,
            cpu_ns: 375_000_000,
        })
        .collect();
    metrics.add(&s);
    let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
    let series = r#"netto_category_cpu_seconds_total{category="bpf_program",context="net_rx"}"#;
    assert_eq!(value(&text, series), 0.75);
    assert!(!text.contains("bpf:"), "{text}");
}
