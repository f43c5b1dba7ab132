//! When a run under a budget can afford a calibration interval. One
//! interval in the exact tier costs what every exact hook costs under the
//! load there is, tens of times what `sampled` costs; the interval waits
//! until measuring's average since the run began has room for it.
//! Start-up is left out, as the budget's judgement leaves it out: no knob
//! gets it back, and counting it would put the first calibration off by
//! minutes.

use crate::model::{KnobCost, Overhead, Snapshot};

/// Measuring's CPU time (start-up left out) and the run's length, from its
/// start.
#[derive(Debug, Clone, Default)]
pub struct Spent {
    cpu_s: f64,
    elapsed_s: f64,
    /// The cost of an interval with every knob on, in percent of one CPU:
    /// the measured and predicted parts of the newest priced interval.
    all_on_percent: Option<f64>,
}

impl Spent {
    /// Counts one delivered interval, whatever the budget made of it;
    /// `overhead`: its cost with start-up left out.
    pub fn count(&mut self, snapshot: &Snapshot, overhead: &Overhead, knobs: &[KnobCost]) {
        if let Some(percent) = overhead.budgeted_percent() {
            self.cpu_s += percent / 100.0 * snapshot.interval_s;
        }
        self.elapsed_s += snapshot.interval_s;
        if !knobs.is_empty() {
            self.all_on_percent = Some(knobs.iter().map(|k| k.cost_percent).sum());
        }
    }

    /// Whether one more interval of `interval_s` with every knob on keeps
    /// the average from the start within `budget_percent`. Without prices
    /// the cost of such an interval is unknown, and it is afforded.
    pub fn affords_all_on(&self, interval_s: f64, budget_percent: f64) -> bool {
        let Some(all_on) = self.all_on_percent else {
            return true;
        };
        let after = self.cpu_s + all_on / 100.0 * interval_s;
        after <= budget_percent / 100.0 * (self.elapsed_s + interval_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CostBasis, KnobName};

    fn interval(measuring_percent: f64, interval_s: f64) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.interval_s = interval_s;
        s.overhead.measuring_percent = Some(measuring_percent);
        s
    }

    fn count(spent: &mut Spent, snapshot: &Snapshot, knobs: &[KnobCost]) {
        spent.count(snapshot, &snapshot.overhead, knobs);
    }

    fn knob(knob: KnobName, cost_percent: f64, basis: CostBasis) -> KnobCost {
        KnobCost {
            knob,
            cost_percent,
            basis,
        }
    }

    #[test]
    fn an_exact_interval_waits_until_the_average_has_room_for_it() {
        let priced = [
            knob(KnobName::Process, 0.3, CostBasis::Measured),
            knob(KnobName::Sampler, 0.3, CostBasis::Measured),
            knob(KnobName::ExactHooks, 2.0, CostBasis::Predicted),
            knob(KnobName::SocketWindow, 3.4, CostBasis::Predicted),
        ];
        let mut spent = Spent::default();
        // A first interval in exact under load at 8 %.
        count(&mut spent, &interval(8.0, 1.0), &priced);
        assert!(!spent.affords_all_on(1.0, 1.0));
        // Then 0.6 % a second: 0.4 % of room a second pays the first
        // interval's 7 % over and the 6 % interval in about 32 s.
        let mut seconds = 0;
        while !spent.affords_all_on(1.0, 1.0) {
            count(&mut spent, &interval(0.6, 1.0), &priced);
            seconds += 1;
        }
        assert!((30..=34).contains(&seconds), "{seconds} s");
    }

    #[test]
    fn without_prices_nothing_is_put_off() {
        let mut spent = Spent::default();
        count(&mut spent, &interval(50.0, 1.0), &[]);
        assert!(spent.affords_all_on(1.0, 1.0));
    }
}
