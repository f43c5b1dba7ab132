//! When a run in a tier that estimates measures one interval exactly
//! (`--calibrate-every`). An estimate's stated error counts its samples
//! only; its bias on this host shows only against exact time
//! ([`crate::model::Calibration`]). A run that started in a lower tier has
//! no exact time to hold its samples against, and a long one (the budget
//! keeps `serve` in `sampled`) holds them against an old one. One exact
//! interval every so often gives every event a fresh agreement, for the
//! exact tier's cost during that interval alone (shown in its snapshot).

use crate::model::{Snapshot, Tier};

/// Intervals end on a fixed grid, but each snapshot's `ts` is read a
/// little after its tick: an age short of `every_s` by less than this is
/// taken as reached, so that a calibration is not put off by a whole
/// interval for a millisecond.
const TICK_SLACK_S: f64 = 0.01;

#[derive(Debug, Clone)]
pub struct CalibrationIntervals {
    every_s: f64,
    /// End of the newest interval delivered.
    latest_ts: Option<f64>,
    /// End of the newest calibration interval: an exact interval the
    /// sampler placed its samples in as an estimating tier does, which is
    /// what a calibration needs (`collect::calibrate`; an interval of a run
    /// in the exact tier calibrates nothing).
    exact_ts: Option<f64>,
}

impl CalibrationIntervals {
    /// At most `every_s` seconds between intervals that measure every
    /// event exactly.
    pub fn new(every_s: f64) -> CalibrationIntervals {
        CalibrationIntervals {
            every_s,
            latest_ts: None,
            exact_ts: None,
        }
    }

    /// Takes in a delivered interval.
    pub fn observe(&mut self, snapshot: &Snapshot) {
        self.latest_ts = Some(snapshot.ts);
        if snapshot.calibrating.is_some() && snapshot.sampling.is_some() {
            self.exact_ts = Some(snapshot.ts);
        }
    }

    /// Whether the next interval, in a run now in `in_force`, is to be a
    /// calibration interval: the tier estimates, and no interval measured
    /// every event exactly to calibrate in the last `every_s` (or ever,
    /// once one interval has run in the tier).
    pub fn due(&self, in_force: Tier) -> bool {
        let Some(latest) = self.latest_ts else {
            return false;
        };
        in_force != Tier::Exact
            && self
                .exact_ts
                .is_none_or(|exact| latest - exact + TICK_SLACK_S >= self.every_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SamplingStats;

    fn interval(ts: f64, tier: Tier) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.ts = ts;
        s.interval_s = 1.0;
        s.tier = tier;
        s.sampling = Some(SamplingStats::default());
        s
    }

    /// A calibration interval of a run in `sampled`.
    fn calibration(ts: f64) -> Snapshot {
        Snapshot {
            calibrating: Some(Tier::Sampled),
            ..interval(ts, Tier::Exact)
        }
    }

    #[test]
    fn a_run_started_in_a_lower_tier_calibrates_after_its_first_interval() {
        let mut intervals = CalibrationIntervals::new(60.0);
        assert!(!intervals.due(Tier::Sampled), "nothing has run yet");
        intervals.observe(&interval(1.0, Tier::Sampled));
        assert!(intervals.due(Tier::Sampled));
        assert!(intervals.due(Tier::Softirq));
        intervals.observe(&calibration(2.0));
        assert!(!intervals.due(Tier::Sampled));
    }

    #[test]
    fn calibrates_again_once_the_last_exact_interval_is_every_seconds_old() {
        let mut intervals = CalibrationIntervals::new(10.0);
        intervals.observe(&calibration(5.0));
        for ts in 6..15 {
            intervals.observe(&interval(f64::from(ts), Tier::Sampled));
            assert!(!intervals.due(Tier::Sampled), "{ts}");
        }
        intervals.observe(&interval(14.995, Tier::Sampled));
        assert!(intervals.due(Tier::Sampled), "a tick read late");
    }

    #[test]
    fn never_in_the_exact_tier_nor_from_an_interval_that_did_not_sample() {
        let mut intervals = CalibrationIntervals::new(1.0);
        intervals.observe(&calibration(1.0));
        intervals.observe(&calibration(9.0));
        assert!(!intervals.due(Tier::Exact));
        let mut unsampled = calibration(10.0);
        unsampled.sampling = None;
        intervals.observe(&unsampled);
        intervals.observe(&interval(11.0, Tier::Sampled));
        assert!(
            intervals.due(Tier::Sampled),
            "the last calibration that sampled was at 9 s"
        );
    }

    #[test]
    fn a_run_that_steps_down_from_exact_calibrates_at_once() {
        // Its exact intervals placed their samples as the exact tier does:
        // nothing for the lower tier's calibration.
        let mut intervals = CalibrationIntervals::new(600.0);
        intervals.observe(&interval(1.0, Tier::Exact));
        intervals.observe(&interval(2.0, Tier::Sampled));
        assert!(intervals.due(Tier::Sampled));
    }
}
