//! When the budget steps, and how long it waits before the next step.

use super::*;

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
