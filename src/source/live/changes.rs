//! What changes between two intervals of a live run, decided without
//! touching BPF: a step of the budget or a front end's request waits for
//! the interval in progress to end, so that every interval is wholly in
//! one tier and priced at one sampling frequency; a calibration interval
//! measures exactly and then goes back.

use crate::model::Tier;
use crate::source::budget::Knob;

#[derive(Debug, Default, PartialEq)]
pub(super) struct Changes {
    /// What turns when the interval in progress ends, in order: the
    /// budget's steps, or a front end's frequency in a tier that estimates
    /// (an interval's estimates are priced at one sampling frequency).
    pub next_knobs: Vec<Knob>,
    /// The tier asked for, put in force when the interval in progress
    /// ends.
    pub next_tier: Option<Tier>,
    /// While a calibration interval runs: the tier to go back to.
    pub calibrating: Option<Tier>,
}

impl Changes {
    /// A run starting in `tier`: any tier but exact is put in force once
    /// the programs are attached (they attach for the exact tier).
    pub fn new(tier: Tier) -> Changes {
        Changes {
            next_tier: (tier != Tier::Exact).then_some(tier),
            ..Changes::default()
        }
    }

    /// A front end asked for the sampling frequency `hz` while `in_force`
    /// is the tier: `Some(hz)` to change it now, or it waits for the end
    /// of the interval, in a tier that estimates and while calibrating.
    pub fn frequency_asked(&mut self, hz: u64, in_force: Tier) -> Option<u64> {
        if in_force != Tier::Exact || self.calibrating.is_some() {
            self.next_knobs = vec![Knob::Frequency(hz)];
            None
        } else {
            Some(hz)
        }
    }

    /// The interval in progress ended: after a calibration interval the
    /// tier goes back to the one it interrupted, unless a front end asked
    /// for another meanwhile.
    pub fn interval_ended(&mut self) {
        if let Some(back) = self.calibrating.take() {
            self.next_tier.get_or_insert(back);
        }
    }

    /// Makes the next interval a calibration interval if one is `due`, the
    /// run samples, and nothing else is to change between these two
    /// intervals (a knob's step waits for the interval after it). Returns
    /// whether it did: the exact tier is then asked for.
    pub fn calibrate(&mut self, due: bool, sampling: bool, in_force: Tier) -> bool {
        let calibrate = due && sampling && self.next_knobs.is_empty();
        if calibrate {
            self.calibrating = Some(in_force);
            self.next_tier = Some(Tier::Exact);
        }
        calibrate
    }

    /// Whether the budget judges the interval that ended: not the `last`
    /// of a run (nothing changes after it), nor a calibration interval,
    /// which costs the exact tier's by design.
    pub fn judged(&self, last: bool) -> bool {
        !last && self.calibrating.is_none()
    }

    /// The budget judged an interval and may step: its own steps win over
    /// a front end's request, which it has judged already
    /// ([`crate::source::budget::Budget::asked`]).
    pub fn budget_stepped(&mut self, steps: Vec<Knob>) {
        if !steps.is_empty() {
            self.next_knobs = steps;
        }
    }
}

/// Whether the sampler hears of a tier change before the accounting
/// programs change: it trusts only what stays attached, so it is told
/// before programs go (a lower tier) and after they come back.
pub(super) fn sampler_first(from: Tier, to: Tier) -> bool {
    to > from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_starts_exact_and_then_goes_to_its_tier() {
        assert_eq!(Changes::new(Tier::Exact), Changes::default());
        assert_eq!(Changes::new(Tier::Sampled).next_tier, Some(Tier::Sampled));
    }

    #[test]
    fn a_frequency_waits_for_the_interval_where_estimates_are_priced() {
        let mut changes = Changes::default();
        assert_eq!(changes.frequency_asked(99, Tier::Exact), Some(99));
        assert_eq!(changes.next_knobs, []);
        assert_eq!(changes.frequency_asked(49, Tier::Softirq), None);
        assert_eq!(changes.next_knobs, [Knob::Frequency(49)]);
        let mut calibrating = Changes {
            calibrating: Some(Tier::Sampled),
            ..Changes::default()
        };
        assert_eq!(calibrating.frequency_asked(199, Tier::Exact), None);
        assert_eq!(calibrating.next_knobs, [Knob::Frequency(199)]);
    }

    #[test]
    fn a_calibration_interval_goes_back_unless_another_tier_was_asked() {
        let mut changes = Changes::default();
        assert!(changes.calibrate(true, true, Tier::Softirq));
        assert_eq!(changes.next_tier, Some(Tier::Exact));
        changes.next_tier = None; // put in force
        assert!(
            !changes.judged(false),
            "a calibration interval is not judged"
        );
        changes.interval_ended();
        assert_eq!(changes.next_tier, Some(Tier::Softirq));
        assert_eq!(changes.calibrating, None);

        let mut asked = Changes::default();
        asked.calibrate(true, true, Tier::Softirq);
        asked.next_tier = Some(Tier::Sampled);
        asked.interval_ended();
        assert_eq!(asked.next_tier, Some(Tier::Sampled));
    }

    #[test]
    fn no_calibration_beside_another_change_or_without_samples() {
        let mut pending = Changes {
            next_knobs: vec![Knob::Attribution(false)],
            ..Changes::default()
        };
        assert!(!pending.calibrate(true, true, Tier::Softirq));
        assert_eq!(pending.calibrating, None);
        let mut unsampled = Changes::default();
        assert!(!unsampled.calibrate(true, false, Tier::Softirq));
        let mut not_due = Changes::default();
        assert!(!not_due.calibrate(false, true, Tier::Softirq));
        assert_eq!(not_due, Changes::default());
    }

    #[test]
    fn the_budget_judges_every_interval_but_the_last_and_its_step_wins() {
        let mut changes = Changes::default();
        assert!(changes.judged(false));
        assert!(!changes.judged(true));
        changes.next_knobs = vec![Knob::Frequency(49)];
        changes.budget_stepped(Vec::new());
        assert_eq!(changes.next_knobs, [Knob::Frequency(49)]);
        let steps = vec![Knob::Attribution(false), Knob::Tier(Tier::Softirq, 99)];
        changes.budget_stepped(steps.clone());
        assert_eq!(changes.next_knobs, steps);
    }

    #[test]
    fn the_sampler_hears_first_when_programs_go() {
        assert!(sampler_first(Tier::Exact, Tier::Softirq));
        assert!(sampler_first(Tier::Softirq, Tier::Sampled));
        assert!(!sampler_first(Tier::Sampled, Tier::Exact));
        assert!(!sampler_first(Tier::Exact, Tier::Exact));
    }
}
