//! Calibration of the estimating tiers: in a calibration interval every
//! event is measured exactly while the sampler places its samples as the
//! tier that goes on after it does (`Measure::switch_tier` keeps the
//! sampler in that tier), so the estimate those samples make can be held
//! against the exact time of the same interval. Their ratio, pooled over
//! the newest calibration intervals, then corrects that tier's estimates:
//! a ratio estimator, which follows the load between calibrations (the
//! samples do) and takes out the samples' bias on this host (the timer
//! softirq read low by a timer-driven sampler, the receive path's skid).
//!
//! The corrected estimate's error combines the samples' own with the
//! calibration's. The calibration's is the larger of two: the Poisson error
//! of its pooled samples, and, over three intervals or more, the ratio
//! estimator's error from how the intervals' ratios scatter (which also
//! holds what the samples' count does not: a bias that varies with the
//! load).
//!
//! The samples' own error is the larger of their Poisson count's and how
//! far the calibration intervals' estimates scattered about ratio x exact,
//! per second of interval (over three intervals or more). The second holds
//! what a Poisson count does not: samples that come in bursts. The timer
//! softirq, run by hrtimers like the sampler, is seen in some intervals
//! and missed in others as their phases drift, so its count varies more
//! than a Poisson count's, and an error from the count alone would cover
//! its exact time in too few intervals (the manual, "Calibrated
//! estimates"; `tests/calibration_coverage.rs`).

use std::collections::{BTreeMap, VecDeque};

use crate::model::{Calibration, CpuTime, EventKey, Snapshot, Tier};

/// A calibration resting on fewer samples is shown but not applied: at
/// this many its relative error is about a third, and dividing by a ratio
/// read from fewer samples biases the estimate up by about one over their
/// count. An event at a few percent of one CPU reaches it in one or two
/// one-second calibration intervals at 99 Hz.
pub const CALIBRATION_MIN_SAMPLES: u64 = 10;

/// The pool stops growing once it holds this many samples of the event (a
/// 5 % error): older intervals, from another load, add bias sooner than
/// they take out noise.
pub const POOL_SAMPLES: u64 = 400;

/// And it holds at most this many calibration intervals, however few
/// samples they hold (an event near zero).
pub const POOL_INTERVALS: usize = 10;

/// Keeps, per estimating tier and event, the newest calibration intervals'
/// samples against exact time, and corrects that tier's estimates by them.
#[derive(Debug, Default)]
pub struct Calibrator {
    pools: BTreeMap<(Tier, EventKey), VecDeque<Measured>>,
}

/// One calibration interval's part of an event's calibration.
#[derive(Debug, Clone, Copy)]
struct Measured {
    ts: f64,
    interval_s: f64,
    samples: u64,
    period_ns: f64,
    /// Samples x period: the tier's raw estimate.
    estimate_ns: f64,
    exact_ns: f64,
}

/// A pool taken together.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pooled {
    ratio: f64,
    error: f64,
    /// Variance of one interval's estimate about ratio x exact, per
    /// second of interval (ns squared per second); 0 under three intervals.
    scatter_ns2_per_s: f64,
    samples: u64,
    ts: f64,
}

impl Calibrator {
    /// Takes in a calibration interval, from its stacks (the samples as
    /// the estimating tier placed them); any other snapshot is left out.
    pub fn observe(&mut self, snapshot: &Snapshot) {
        let Some(tier) = snapshot.calibrating else {
            return;
        };
        let hz = snapshot.sampling.as_ref().map_or(0, |s| s.frequency_hz);
        if hz == 0 || snapshot.tier != Tier::Exact {
            return;
        }
        let period_ns = 1e9 / hz as f64;
        for key in EventKey::ALL.into_iter().filter(|&k| !tier.measures(k)) {
            // An event no sample saw still had its exact time.
            let samples: u64 = snapshot
                .stacks
                .iter()
                .filter(|s| s.context.event() == key)
                .map(|s| s.count)
                .sum();
            let pool = self.pools.entry((tier, key)).or_default();
            pool.push_back(Measured {
                ts: snapshot.ts,
                interval_s: snapshot.interval_s,
                samples,
                period_ns,
                estimate_ns: samples as f64 * period_ns,
                exact_ns: snapshot.event(key).total_ns as f64,
            });
            let mut pooled = 0;
            let keep = pool
                .iter()
                .rev()
                .take_while(|m| {
                    let more = pooled < POOL_SAMPLES;
                    pooled += m.samples;
                    more
                })
                .count()
                .min(POOL_INTERVALS);
            let old = pool.len() - keep;
            pool.drain(..old);
        }
    }

    /// The pooled calibration of `key` in `tier`, if its intervals had
    /// exact time.
    fn pooled(&self, tier: Tier, key: EventKey) -> Option<Pooled> {
        let pool = self.pools.get(&(tier, key))?;
        let newest = pool.back()?;
        let (samples, estimate_ns, exact_ns) = pool.iter().fold((0, 0.0, 0.0), |(n, y, x), m| {
            (n + m.samples, y + m.estimate_ns, x + m.exact_ns)
        });
        if exact_ns <= 0.0 {
            return None;
        }
        let ratio = estimate_ns / exact_ns;
        // The samples are a Poisson count: each interval's estimate has a
        // variance of samples x period squared. With no sample at all the
        // event may still have run up to a period unseen, so the error is
        // never less than one sample's (a ratio of 0 +- 0 would claim too
        // much).
        let variance = pool
            .iter()
            .map(|m| m.samples as f64 * m.period_ns * m.period_ns)
            .sum::<f64>()
            .max(newest.period_ns * newest.period_ns);
        let poisson = variance / (exact_ns * exact_ns);
        let m = pool.len() as f64;
        let residual = |p: &Measured| (p.estimate_ns - ratio * p.exact_ns).powi(2);
        let (scatter, scatter_ns2_per_s) = if pool.len() >= 3 {
            let residuals: f64 = pool.iter().map(residual).sum();
            let per_s: f64 = pool
                .iter()
                .map(|p| residual(p) / p.interval_s.max(f64::EPSILON))
                .sum();
            (
                m / (m - 1.0) * residuals / (exact_ns * exact_ns),
                per_s / (m - 1.0),
            )
        } else {
            (0.0, 0.0)
        };
        Some(Pooled {
            ratio,
            error: poisson.max(scatter).sqrt(),
            scatter_ns2_per_s,
            samples,
            ts: newest.ts,
        })
    }

    /// Puts its calibration on each estimated event of `snapshot` that has
    /// one, and corrects the estimate by it where it rests on enough
    /// samples ([`CALIBRATION_MIN_SAMPLES`]).
    pub fn apply(&self, snapshot: &mut Snapshot) {
        let (tier, ts, interval_ns) = (snapshot.tier, snapshot.ts, snapshot.interval_s * 1e9);
        let cpus = snapshot.cpus as f64;
        for (&key, time) in snapshot.events.iter_mut() {
            if !time.estimated {
                continue;
            }
            let Some(pooled) = self.pooled(tier, key) else {
                time.calibration = None;
                continue;
            };
            let applied = pooled.samples >= CALIBRATION_MIN_SAMPLES && pooled.ratio > 0.0;
            if applied {
                correct(time, pooled, interval_ns, cpus);
            }
            time.calibration = Some(Calibration {
                agreement: pooled.ratio,
                samples: pooled.samples,
                ts: pooled.ts,
                agreement_error: Some(pooled.error),
                applied,
                age_s: (ts - pooled.ts).max(0.0),
            });
        }
    }
}

/// Divides the estimate `time` by the pooled ratio; its error becomes
/// that of a quotient of two independent estimates, the samples' being at
/// least as large as the calibration intervals' scatter. No CPU spends
/// more than the interval in anything.
fn correct(time: &mut CpuTime, pooled: Pooled, interval_ns: f64, cpus: f64) {
    let raw = time.total_ns;
    for ns in &mut time.per_cpu_ns {
        *ns = (*ns as f64 / pooled.ratio).min(interval_ns) as u64;
    }
    time.total_ns = time.per_cpu_ns.iter().sum();
    let counted = time.error_ns.unwrap_or(0) as f64;
    let scattered = (pooled.scatter_ns2_per_s * interval_ns / 1e9).sqrt();
    let sampling = counted.max(scattered) / pooled.ratio;
    let calibration = time.total_ns as f64 * pooled.error / pooled.ratio;
    let error = sampling.hypot(calibration).min(interval_ns * cpus);
    time.error_ns = Some(error as u64);
    time.raw_ns = Some(raw);
}

#[cfg(test)]
mod tests;
