use super::*;

#[test]
fn json_keys_are_the_documented_names() {
    for key in EventKey::ALL {
        assert_eq!(
            serde_json::to_value(key).unwrap(),
            serde_json::Value::String(key.name().into())
        );
    }
    for vector in SoftirqVector::ALL {
        assert_eq!(
            serde_json::to_value(vector).unwrap(),
            serde_json::Value::String(vector.name().into())
        );
    }
}

#[test]
fn merged_stacks_add_up_across_intervals() {
    let mut first = Snapshot::empty("tracepoint", 1);
    first.stacks = vec![
        StackCount::of(SampleContext::NetRx, &["a", "b"], 3),
        StackCount::of(SampleContext::NetTx, &["c"], 1),
    ];
    let mut second = Snapshot::empty("tracepoint", 1);
    second.stacks = vec![
        StackCount::of(SampleContext::NetRx, &["a"], 5),
        StackCount::of(SampleContext::NetRx, &["a", "b"], 4),
    ];
    assert_eq!(
        merge_stacks([&first, &second]),
        [
            StackCount::of(SampleContext::NetRx, &["a", "b"], 7),
            StackCount::of(SampleContext::NetRx, &["a"], 5),
            StackCount::of(SampleContext::NetTx, &["c"], 1),
        ]
    );
}

#[test]
fn loss_kinds_are_the_json_fields() {
    let losses = Losses {
        task_storage_failures: 1,
        recursion_misses: 2,
        dropped_halves: 3,
        attribution_misses: 4,
        missed_samples: 5,
        unsampled_cpus: 6,
    };
    let json = serde_json::to_value(losses).unwrap();
    let fields = json.as_object().unwrap();
    assert_eq!(fields.len(), Losses::KINDS.len());
    for kind in &Losses::KINDS {
        assert_eq!(json[kind.name], (kind.count)(&losses));
    }
    let none_but_one = Losses {
        recursion_misses: 7,
        ..Losses::default()
    };
    assert_eq!(none_but_one.describe(|k| k.short), ["7 BPF runs"]);
    let total: Losses = [losses, none_but_one].into_iter().sum();
    assert_eq!(
        (
            total.task_storage_failures,
            total.recursion_misses,
            total.dropped_halves,
            total.attribution_misses,
            total.missed_samples,
            total.unsampled_cpus
        ),
        (1, 9, 3, 4, 5, 6)
    );
}

#[test]
fn snapshots_recorded_before_losses_existed_still_load() {
    let mut json = serde_json::to_value(Snapshot::empty("tracepoint", 1)).unwrap();
    json.as_object_mut().unwrap().remove("losses").unwrap();
    let snapshot: Snapshot = serde_json::from_value(json).unwrap();
    assert!(!snapshot.losses.any());
}

#[test]
fn snapshots_recorded_before_agreement_and_net_timers_samples_still_load() {
    let mut snapshot = Snapshot::empty("tracepoint", 1);
    snapshot.sampling = Some(SamplingStats::default());
    snapshot.breakdown = vec![Breakdown {
        context: SampleContext::NetRx,
        samples: 0,
        agreement: Some(1.0),
        categories: Vec::new(),
    }];
    let mut json = serde_json::to_value(snapshot).unwrap();
    json["sampling"]
        .as_object_mut()
        .unwrap()
        .remove("softirq_loop")
        .unwrap();
    json["breakdown"][0]
        .as_object_mut()
        .unwrap()
        .remove("agreement")
        .unwrap();
    let old: Snapshot = serde_json::from_value(json).unwrap();
    assert_eq!(old.breakdown[0].agreement, None);
    assert_eq!(old.sampling.unwrap().softirq_loop, 0);
    assert_eq!(
        serde_json::to_value(SampleContext::NetTimers).unwrap(),
        "net_timers"
    );
}

#[test]
fn percent_of_one_cpu() {
    let t = CpuTime {
        total_ns: 250_000_000,
        per_cpu_ns: vec![250_000_000],
        count: 1,
        ..CpuTime::default()
    };
    assert!((t.percent_of_cpu(2.0) - 12.5).abs() < 1e-9);
    assert_eq!(t.percent_of_cpu(0.0), 0.0);
}

#[test]
fn network_programs_round_trip_and_a_snapshot_without_them_loads() {
    let mut s = Snapshot::empty("tracepoint", 1);
    s.network_programs = Some(NetworkPrograms {
        basis: Some(PriceBasis::WholeInterval),
        stats_held_s: 1.0,
        programs: vec![NetworkProgram {
            id: 3,
            name: "xdp_lb".into(),
            tag: "0011223344556677".into(),
            prog_type: "xdp".into(),
            hook: "xdp".into(),
            attach: vec![AttachPoint {
                hook: "xdp".into(),
                iface: Some("eth0".into()),
                mode: Some("driver".into()),
                cgroup_id: None,
                link: false,
            }],
            runs: 10,
            run_time_ns: 1_000,
            ns_per_run: Some(100.0),
            event: Some(EventKey::NetRxSoftirq),
            share_percent: Some(1.5),
            ..NetworkProgram::default()
        }],
        not_attached: 2,
    });
    let text = serde_json::to_string(&s).unwrap();
    assert!(text.contains(r#""basis":"whole_interval""#), "{text}");
    let back: Snapshot = serde_json::from_str(&text).unwrap();
    assert_eq!(back.network_programs, s.network_programs);
    // A snapshot from before netto looked at the host's programs.
    let mut old = serde_json::to_value(Snapshot::empty("tracepoint", 1)).unwrap();
    old.as_object_mut().unwrap().remove("network_programs");
    let old: Snapshot = serde_json::from_value(old).unwrap();
    assert_eq!(old.network_programs, None);
}
