use super::*;
use crate::model::ProgramCost;

/// A 1 s interval of `cost` with `load` percent of one CPU of network
/// time.
fn loaded(cost: Overhead, load: f64) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 2);
    s.interval_s = 1.0;
    s.overhead = cost;
    s.events
        .get_mut(&crate::model::EventKey::NetRxSoftirq)
        .unwrap()
        .total_ns = (load * 1e7) as u64;
    s
}

/// An idle 1 s interval that cost `percent` with `error`.
fn cost(percent: f64, error: f64) -> Snapshot {
    loaded(
        Overhead {
            cost_percent: Some(percent),
            error_percent: error,
            ..Overhead::default()
        },
        0.0,
    )
}

/// Feeds `intervals` snapshots of one cost; returns each change made.
fn run(budget: &mut Budget, percent: f64, intervals: usize) -> Vec<Option<BudgetChange>> {
    (0..intervals)
        .map(|_| budget.observe(&cost(percent, 0.01)).0.change)
        .collect()
}

fn down(from_hz: u64, to_hz: u64) -> Option<BudgetChange> {
    Some(BudgetChange::Down { from_hz, to_hz })
}

fn tier_down(from: Tier, to: Tier) -> BudgetChange {
    BudgetChange::TierDown { from, to }
}

fn up(from_hz: u64, to_hz: u64) -> Option<BudgetChange> {
    Some(BudgetChange::Up { from_hz, to_hz })
}

/// Serving's cost (the HTTP server's) is netto's, but not measuring's:
/// however much clients ask, the budget never steps measuring down.
#[test]
fn serving_never_makes_measuring_step_down() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    for _ in 0..20 {
        let serving = loaded(
            Overhead {
                cost_percent: Some(9.2),
                measuring_percent: Some(0.4),
                serving_percent: Some(8.8),
                error_percent: 0.01,
                ..Overhead::default()
            },
            0.0,
        );
        let (status, knob) = budget.observe(&serving);
        assert!(!status.over && status.change.is_none() && knob.is_empty());
    }
    assert_eq!(budget.tier(), Tier::Exact);
    assert_eq!(budget.frequency_hz(), Some(99));
}

#[test]
fn steps_down_after_two_intervals_over_and_lets_each_step_settle() {
    let mut budget = Budget::new(1.0, Some(1000), false, Tier::Exact);
    // Over, over: down; the next two intervals pay for the new
    // sampler and are not judged; then two more over: down again.
    let changes = run(&mut budget, 1.5, 6);
    assert_eq!(
        changes,
        [None, down(1000, 500), None, None, None, down(500, 250)]
    );
    assert_eq!(budget.frequency_hz(), Some(250));
    let (status, to) = budget.observe(&cost(1.5, 0.0));
    assert_eq!(to, []);
    assert!(status.over && !status.at_floor);
    assert_eq!((status.steps_down, status.steps_up), (2, 0));
    assert_eq!(status.asked_frequency_hz, Some(1000));
}

/// A step up undone under load is not tried again while that load
/// lasts (it would cost what it cost before), and is once it falls.
#[test]
fn an_undone_step_up_waits_for_the_load_that_makes_room_for_it() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Softirq);
    // What each tier costs under a load (percent of one CPU).
    let cost_of = |tier: Tier, load: f64| match tier {
        Tier::Sampled => 0.4,
        _ => 0.3 + 0.04 * load,
    };
    // The steps taken over `intervals` at `load`.
    let feed = |budget: &mut Budget, load: f64, intervals: usize| {
        let mut steps = Vec::new();
        for _ in 0..intervals {
            let interval = loaded(
                Overhead {
                    cost_percent: Some(cost_of(budget.tier(), load)),
                    error_percent: 0.01,
                    ..Overhead::default()
                },
                load,
            );
            steps.extend(budget.observe(&interval).0.change);
        }
        steps
    };
    let steps = feed(&mut budget, 60.0, 200);
    let tier_up = BudgetChange::TierUp {
        from: Tier::Sampled,
        to: Tier::Softirq,
    };
    // Down, one try up, undone; then nothing for the rest of the load.
    assert_eq!(
        steps,
        [
            tier_down(Tier::Softirq, Tier::Sampled),
            tier_up,
            tier_down(Tier::Softirq, Tier::Sampled)
        ]
    );
    // 2.7 % against 0.4 % at 60 % of load.
    let learned = budget
        .up_cost_per_load
        .expect("learned from the undone step");
    assert!((learned - 2.3 / 60.0).abs() < 1e-9, "{learned}");
    // The load falls to 5 %: 0.4 + 0.19, with twice the error, has no
    // room under 0.6 either.
    assert_eq!(feed(&mut budget, 5.0, 100), []);
    // At 2 %, 0.48 has: up again, and it holds.
    assert_eq!(feed(&mut budget, 2.0, 100), [tier_up]);
    assert_eq!(budget.tier(), Tier::Softirq);
    assert_eq!(
        budget.up_cost_per_load, None,
        "a step that held is new ground"
    );
}

#[test]
fn one_interval_over_or_a_cost_between_room_and_budget_holds() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    for percent in [1.5, 0.9, 1.5, 0.7, 2.0, 0.61] {
        assert_eq!(budget.observe(&cost(percent, 0.0)).1, [], "{percent}");
    }
    budget.level = 1;
    // Between 0.6 and 1 % of the budget: no room, not over.
    assert_eq!(run(&mut budget, 0.8, 20), vec![None; 20]);
    // Room by the estimate, but not with twice its error.
    let (_, to) = budget.observe(&cost(0.5, 0.1));
    assert_eq!(to, []);
    assert_eq!(budget.room_for, 0);
}

#[test]
fn steps_back_up_to_the_asked_frequency_when_there_is_room() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    run(&mut budget, 3.0, 6);
    assert_eq!(budget.frequency_hz(), Some(24));
    let changes = run(&mut budget, 0.2, 30);
    let steps: Vec<_> = changes.into_iter().flatten().collect();
    assert_eq!(steps, [up(24, 49).unwrap(), up(49, 99).unwrap()]);
    assert_eq!(budget.frequency_hz(), Some(99));
    // Never above the asked frequency.
    assert_eq!(run(&mut budget, 0.0, 20), vec![None; 20]);
}

#[test]
fn a_step_up_undone_at_once_doubles_the_wait_for_the_next() {
    let mut budget = Budget::new(1.0, Some(400), false, Tier::Exact);
    run(&mut budget, 2.0, 2);
    assert_eq!(budget.frequency_hz(), Some(200));
    // Room at 200 Hz, over at 400 Hz: up after 5 (and the settling
    // intervals), straight back down.
    let mut changes = run(&mut budget, 0.3, 7);
    changes.extend(run(&mut budget, 2.0, 4));
    assert_eq!(changes[6], up(200, 400));
    assert_eq!(changes[10], down(400, 200));
    assert_eq!(budget.up_wait, 2 * UP_AFTER);
    // The next step up waits 10 intervals with room (after settling).
    let changes = run(&mut budget, 0.3, 12);
    assert_eq!(changes[..11], vec![None; 11]);
    assert_eq!(changes[11], up(200, 400));
    // A step up that holds keeps the wait.
    run(&mut budget, 0.8, 10);
    assert_eq!(budget.up_wait, 2 * UP_AFTER);
}

#[test]
fn at_the_floor_it_says_the_budget_is_exceeded_once_and_when_kept_again() {
    let mut budget = Budget::new(0.05, Some(4), false, Tier::Exact);
    let changes = run(&mut budget, 1.0, 20);
    let steps: Vec<_> = changes.iter().flatten().copied().collect();
    assert_eq!(
        steps,
        [
            down(4, 2).unwrap(),
            down(2, 1).unwrap(),
            tier_down(Tier::Exact, Tier::Softirq),
            tier_down(Tier::Softirq, Tier::Sampled),
            BudgetChange::Exceeded
        ]
    );
    // The estimates need samples: the first tier step brought the
    // frequency back up to what they need.
    assert_eq!(budget.frequency_hz(), Some(ESTIMATE_HZ));
    assert_eq!(budget.tier(), Tier::Sampled);
    let (status, _) = budget.observe(&cost(1.0, 0.0));
    assert!(status.over && status.at_floor && status.change.is_none());
    let (status, _) = budget.observe(&cost(0.04, 0.0));
    assert_eq!(status.change, Some(BudgetChange::Kept));
    assert!(status.change_line().unwrap().contains("kept again"));
}

#[test]
fn without_sampling_there_is_no_knob_only_the_report() {
    let mut budget = Budget::new(0.5, None, false, Tier::Exact);
    let changes = run(&mut budget, 0.9, 3);
    assert_eq!(changes, [None, Some(BudgetChange::Exceeded), None]);
    // A front end's frequency means nothing to a source that does not
    // sample.
    budget.asked(99);
    assert_eq!(budget.frequency_hz(), None);
    let line = budget.observe(&cost(0.9, 0.0)).0;
    assert!(line.at_floor);
}

#[test]
fn an_asked_frequency_is_the_new_ceiling_and_in_force_at_once() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    run(&mut budget, 2.0, 2);
    assert_eq!(budget.frequency_hz(), Some(49));
    budget.asked(999);
    assert_eq!(budget.frequency_hz(), Some(999));
    // Settling first, then two over: down from the new ceiling.
    let changes = run(&mut budget, 2.0, 4);
    assert_eq!(changes, [None, None, None, down(999, 499)]);
    assert_eq!(budget.observe(&cost(2.0, 0.0)).0.steps_down, 2);
}

#[test]
fn the_last_interval_reports_and_changes_nothing() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    budget.observe(&cost(2.0, 0.0));
    let status = budget.unjudged(&cost(2.0, 0.0));
    assert!(status.over && status.change.is_none());
    assert_eq!((budget.frequency_hz(), status.steps_down), (Some(99), 0));
}

#[test]
fn no_cost_figure_no_judgement() {
    let mut budget = Budget::new(1.0, Some(99), false, Tier::Exact);
    for _ in 0..10 {
        let (status, to) = budget.observe(&loaded(Overhead::default(), 0.0));
        assert!(!status.over && to.is_empty());
    }
}

#[test]
fn attribution_goes_after_the_frequency_floor_and_comes_back_first() {
    let mut budget = Budget::new(0.05, Some(4), true, Tier::Exact);
    let steps: Vec<_> = run(&mut budget, 1.0, 24).into_iter().flatten().collect();
    assert_eq!(
        steps,
        [
            down(4, 2).unwrap(),
            down(2, 1).unwrap(),
            BudgetChange::AttributionOff,
            tier_down(Tier::Exact, Tier::Softirq),
            tier_down(Tier::Softirq, Tier::Sampled),
            BudgetChange::Exceeded
        ]
    );
    let (status, _) = budget.observe(&cost(1.0, 0.0));
    assert!(status.at_floor && status.steps_down == 5);
    // Room again: the tiers come back first, each with its frequency,
    // then attribution, then up the frequency ladder.
    let mut knobs = Vec::new();
    for _ in 0..60 {
        knobs.extend(budget.observe(&cost(0.001, 0.0)).1);
    }
    assert_eq!(
        knobs,
        [
            Knob::Tier(Tier::Softirq, ESTIMATE_HZ),
            Knob::Tier(Tier::Exact, 1),
            Knob::Attribution(true),
            Knob::Frequency(2),
            Knob::Frequency(4)
        ]
    );
    assert!(!budget.attribution_off);
}

#[test]
fn the_asked_tier_is_the_ceiling_and_an_estimating_tier_samples_at_99_hz_or_more() {
    let mut budget = Budget::new(0.05, Some(400), false, Tier::Softirq);
    assert_eq!(budget.frequency_hz(), Some(400));
    let steps: Vec<_> = run(&mut budget, 1.0, 20).into_iter().flatten().collect();
    assert_eq!(
        steps,
        [
            down(400, 200).unwrap(),
            down(200, 100).unwrap(),
            down(100, ESTIMATE_HZ).unwrap(),
            tier_down(Tier::Softirq, Tier::Sampled),
            BudgetChange::Exceeded
        ]
    );
    let changes: Vec<_> = run(&mut budget, 0.001, 40).into_iter().flatten().collect();
    assert_eq!(
        changes[..2],
        [
            BudgetChange::Kept,
            BudgetChange::TierUp {
                from: Tier::Sampled,
                to: Tier::Softirq
            }
        ]
    );
    assert!(changes[2..]
        .iter()
        .all(|c| matches!(c, BudgetChange::Up { .. })));
    assert_eq!(budget.tier(), Tier::Softirq, "never above the asked tier");
    assert_eq!(budget.frequency_hz(), Some(400));
    // Not sampling, there is no tier to go down to.
    let mut blind = Budget::new(0.05, None, false, Tier::Exact);
    let steps: Vec<_> = run(&mut blind, 1.0, 6).into_iter().flatten().collect();
    assert_eq!(steps, [BudgetChange::Exceeded]);
    assert_eq!(blind.tier(), Tier::Exact);
}

fn sketch_down(from: f64, to: f64) -> BudgetChange {
    BudgetChange::SketchDown { from, to }
}

#[test]
fn the_sketch_goes_after_attribution_and_before_the_tier_and_comes_back_between() {
    let mut budget = Budget::new(0.05, Some(4), true, Tier::Exact).with_sketch(Some(0.01));
    let steps: Vec<_> = run(&mut budget, 1.0, 36).into_iter().flatten().collect();
    assert_eq!(
        steps,
        [
            down(4, 2).unwrap(),
            down(2, 1).unwrap(),
            BudgetChange::AttributionOff,
            sketch_down(0.01, 0.0025),
            sketch_down(0.0025, SKETCH_FLOOR),
            tier_down(Tier::Exact, Tier::Softirq),
            tier_down(Tier::Softirq, Tier::Sampled),
            BudgetChange::Exceeded
        ]
    );
    let (status, _) = budget.observe(&cost(1.0, 0.0));
    assert!(status.at_floor);
    assert_eq!(status.asked_sketch_probability, Some(0.01));
    // A front end's frequency leaves the sketch where the budget put it.
    budget.asked(4);
    assert_eq!(budget.sketch_probability(), Some(SKETCH_FLOOR));
    let mut knobs = Vec::new();
    for _ in 0..100 {
        knobs.extend(budget.observe(&cost(0.001, 0.0)).1);
    }
    assert_eq!(
        knobs,
        [
            Knob::Tier(Tier::Softirq, ESTIMATE_HZ),
            Knob::Tier(Tier::Exact, 4),
            Knob::Sketch(0.0025),
            Knob::Sketch(0.01),
            Knob::Attribution(true)
        ]
    );
    assert_eq!(
        budget.sketch_probability(),
        Some(0.01),
        "never above the asked"
    );
}

#[test]
fn without_sampling_the_sketch_steps_by_quarters_to_its_floor() {
    let mut budget = Budget::new(0.5, None, false, Tier::Exact).with_sketch(Some(1.0));
    let steps: Vec<_> = run(&mut budget, 0.9, 30).into_iter().flatten().collect();
    let mut expected: Vec<_> = [1.0, 0.25, 0.0625, 0.015625, 0.00390625]
        .windows(2)
        .map(|p| sketch_down(p[0], p[1]))
        .collect();
    expected.extend([
        sketch_down(0.00390625, SKETCH_FLOOR),
        BudgetChange::Exceeded,
    ]);
    assert_eq!(steps, expected);
    let line = budget.observe(&cost(0.9, 0.0)).0;
    assert!(line.at_floor);
    // Asked at or below the floor, the sketch is no knob.
    let mut low = Budget::new(0.5, None, false, Tier::Exact).with_sketch(Some(0.0005));
    let steps: Vec<_> = run(&mut low, 0.9, 4).into_iter().flatten().collect();
    assert_eq!(steps, [BudgetChange::Exceeded]);
    assert_eq!(low.sketch_probability(), Some(0.0005));
    let mut status = Budget::new(1.0, None, false, Tier::Exact)
        .with_sketch(Some(0.01))
        .unjudged(&cost(0.1, 0.0));
    status.change = Some(sketch_down(0.01, 0.0025));
    assert!(status
        .change_line()
        .unwrap()
        .contains("over it, XDP sketch probability 0.01 -> 0.0025"));
}

#[test]
fn without_sampling_attribution_is_the_only_knob() {
    let mut budget = Budget::new(0.5, None, true, Tier::Exact);
    let (status, _) = budget.observe(&cost(0.9, 0.0));
    assert!(!status.at_floor, "attribution is still on");
    let (status, knob) = budget.observe(&cost(0.9, 0.0));
    assert_eq!(status.change, Some(BudgetChange::AttributionOff));
    assert_eq!(knob, [Knob::Attribution(false)]);
    assert!(status.change_line().unwrap().contains("attribution off"));
    let changes = run(&mut budget, 0.9, 4);
    assert_eq!(changes, [None, None, None, Some(BudgetChange::Exceeded)]);
    // A front end's frequency does not turn attribution back on.
    budget.asked(99);
    assert!(budget.attribution_off && budget.at_floor());
}

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
        let (first, knobs) = budget.observe(&interval);
        assert_eq!(knobs, [], "{}: one interval over is not enough", case.what);
        assert_eq!(first.knobs.len(), 4, "{}: {:?}", case.what, first.knobs);
        assert!(first.knobs.iter().all(|k| k.basis == CostBasis::Measured));
        let (status, knobs) = budget.observe(&interval);
        assert_eq!(knobs, case.knobs, "{}", case.what);
        assert_eq!(status.change, case.change, "{}", case.what);
        assert_eq!(status.steps_down, case.steps, "{}", case.what);
    }
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
    budget.observe(&priced(Tier::Exact, &parts, 20.0));
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
