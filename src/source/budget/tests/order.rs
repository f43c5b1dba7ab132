//! The order the knobs go down in and come back up: the frequency,
//! attribution, the sketch, the tier.

use super::*;

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
