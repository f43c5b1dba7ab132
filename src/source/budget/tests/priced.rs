//! With each part's cost known, the steps that save the most, as many
//! as it takes to fit.

use super::*;

/// A 1 s interval in `tier` whose parts cost these percentages of one
/// CPU (by hook; `process` for the measuring process), at `load`.
fn priced(tier: Tier, parts: &[(&str, f64)], load: f64) -> Snapshot {
    let ns = |percent: f64| (percent * 1e7) as u64;
    let programs: Vec<ProgramCost> = parts
        .iter()
        .filter(|(hook, _)| *hook != "process")
        .map(|&(hook, percent)| ProgramCost {
            name: format!("netto_{hook}"),
            hook: hook.to_owned(),
            run_count: 1_000,
            run_time_ns: ns(percent),
        })
        .collect();
    let process = parts
        .iter()
        .find(|(h, _)| *h == "process")
        .map_or(0.0, |p| p.1);
    let total: f64 = parts.iter().map(|p| p.1).sum();
    let mut snapshot = loaded(
        Overhead {
            process_cpu_ns: ns(process),
            bpf_stats: true,
            cost_percent: Some(total),
            error_percent: 0.01,
            programs,
            ..Overhead::default()
        },
        load,
    );
    snapshot.tier = tier;
    snapshot
}

/// Given what each part costs, over the budget for two intervals: the
/// knobs turned, all at once, and the steps that took.
#[test]
fn over_the_budget_it_turns_the_knobs_that_save_the_most_until_it_fits() {
    struct Case {
        what: &'static str,
        budget: f64,
        hz: u64,
        attributing: bool,
        parts: &'static [(&'static str, f64)],
        knobs: &'static [Knob],
        change: Option<BudgetChange>,
        steps: u64,
    }
    let cases = [
        Case {
            what: "a loaded host: the exact hooks, not the sampler",
            budget: 1.0,
            hz: 99,
            attributing: false,
            parts: &[
                ("process", 0.3),
                ("window", 3.0),
                ("softirq", 0.8),
                ("sample", 0.1),
            ],
            knobs: &[Knob::Tier(Tier::Sampled, 99)],
            change: Some(tier_down(Tier::Exact, Tier::Sampled)),
            steps: 2,
        },
        Case {
            what: "the window hooks alone are enough",
            budget: 1.0,
            hz: 99,
            attributing: true,
            parts: &[
                ("process", 0.2),
                ("window", 0.9),
                ("softirq", 0.1),
                ("sample", 0.1),
            ],
            knobs: &[Knob::Attribution(false), Knob::Tier(Tier::Softirq, 99)],
            change: Some(tier_down(Tier::Exact, Tier::Softirq)),
            steps: 1,
        },
        Case {
            what: "a fast sampler: halve it once",
            budget: 1.0,
            hz: 400,
            attributing: false,
            parts: &[
                ("process", 0.2),
                ("window", 0.1),
                ("softirq", 0.1),
                ("sample", 1.2),
            ],
            knobs: &[Knob::Frequency(200)],
            change: down(400, 200),
            steps: 1,
        },
        Case {
            what: "below what estimates need, a lower tier would sample faster",
            budget: 0.5,
            hz: 12,
            attributing: false,
            parts: &[
                ("process", 0.1),
                ("window", 0.05),
                ("softirq", 0.05),
                ("sample", 0.6),
            ],
            knobs: &[Knob::Frequency(6)],
            change: down(12, 6),
            steps: 1,
        },
        Case {
            what: "an idle host stays exact",
            budget: 1.0,
            hz: 99,
            attributing: true,
            parts: &[
                ("process", 0.2),
                ("window", 0.1),
                ("softirq", 0.1),
                ("sample", 0.1),
            ],
            knobs: &[],
            change: None,
            steps: 0,
        },
    ];
    for case in cases {
        let mut budget = Budget::new(case.budget, Some(case.hz), case.attributing, Tier::Exact);
        let interval = priced(Tier::Exact, case.parts, 20.0);
        let (status, knobs) = budget.observe(&interval);
        assert_eq!(status.knobs.len(), 4, "{}: {:?}", case.what, status.knobs);
        assert!(status.knobs.iter().all(|k| k.basis == CostBasis::Measured));
        assert_eq!(knobs, case.knobs, "{}", case.what);
        assert_eq!(status.change, case.change, "{}", case.what);
        assert_eq!(status.steps_down, case.steps, "{}", case.what);
    }
}

/// A run's first interval, priced, is enough to step on; once the run
/// has been judged, a change of load waits for a second interval over;
/// and an unpriced first interval waits too (its step is a guess).
#[test]
fn the_first_priced_interval_steps_at_once_a_later_change_after_two() {
    let idle = [("process", 0.2), ("window", 0.1), ("softirq", 0.1)];
    let busy = [("process", 0.3), ("window", 3.0), ("softirq", 0.8)];
    let mut loaded_at_start = Budget::new(1.0, Some(99), false, Tier::Exact);
    let (_, knobs) = loaded_at_start.observe(&priced(Tier::Exact, &busy, 20.0));
    assert_eq!(knobs, [Knob::Tier(Tier::Sampled, 99)]);

    let mut loaded_later = Budget::new(1.0, Some(99), false, Tier::Exact);
    for _ in 0..3 {
        let (_, knobs) = loaded_later.observe(&priced(Tier::Exact, &idle, 0.1));
        assert_eq!(knobs, []);
    }
    let (status, knobs) = loaded_later.observe(&priced(Tier::Exact, &busy, 20.0));
    assert!(status.over && knobs.is_empty(), "one interval over");
    let (_, knobs) = loaded_later.observe(&priced(Tier::Exact, &busy, 20.0));
    assert_eq!(knobs, [Knob::Tier(Tier::Sampled, 99)]);

    let mut unpriced = Budget::new(1.0, Some(99), false, Tier::Exact);
    assert_eq!(unpriced.observe(&cost(3.0, 0.01)).1, []);
    assert_eq!(unpriced.observe(&cost(3.0, 0.01)).1, [Knob::Frequency(49)]);
}

#[test]
fn an_off_knob_is_predicted_from_its_last_cost_and_the_load_since() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    let parts = [
        ("process", 0.2),
        ("window", 2.0),
        ("softirq", 0.2),
        ("sample", 0.1),
    ];
    let (_, knobs) = budget.observe(&priced(Tier::Exact, &parts, 20.0));
    assert_eq!(knobs, [Knob::Tier(Tier::Softirq, 99)]);
    // In the softirq tier, at half the load: the window hooks would
    // cost half what they did.
    let softirq = [("process", 0.2), ("softirq", 0.1), ("sample", 0.1)];
    let (status, _) = budget.observe(&priced(Tier::Softirq, &softirq, 10.0));
    let window = status
        .knobs
        .iter()
        .find(|k| k.knob == KnobName::SocketWindow)
        .unwrap();
    assert_eq!(window.basis, CostBasis::Predicted);
    assert!((window.cost_percent - 1.0).abs() < 1e-9, "{window:?}");
    // Room by the measured cost, but not for the hooks a step up
    // would bring back: it stays, however long.
    for _ in 0..40 {
        let (status, knobs) = budget.observe(&priced(Tier::Softirq, &softirq, 10.0));
        assert_eq!((knobs, status.change), (vec![], None));
    }
    // Once the load is gone, back to exact.
    let idle: Vec<_> = (0..10)
        .flat_map(|_| budget.observe(&priced(Tier::Softirq, &softirq, 0.1)).1)
        .collect();
    assert_eq!(idle, [Knob::Tier(Tier::Exact, 99)]);
}

#[test]
fn start_up_counts_in_the_cost_but_not_in_the_judgement() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    let mut first = priced(Tier::Exact, &[("process", 14.2), ("window", 0.2)], 0.0);
    first.overhead.startup_cpu_ns = 140_000_000;
    for _ in 0..3 {
        let (status, knobs) = budget.observe(&first);
        assert!(!status.over, "14.4 % with 14 % of it start-up");
        assert_eq!(knobs, []);
        let process = status.knobs.iter().find(|k| k.knob == KnobName::Process);
        assert!((process.unwrap().cost_percent - 0.2).abs() < 1e-9);
    }
}
