//! The events a tier does not measure, estimated from the interval's stack
//! samples: each sample of a context stands for one sampling period of its
//! CPU's time in that context.
//!
//! The sampler fires on each CPU at `frequency_hz` whatever runs there, so
//! the number of samples that land in a context over an interval is, to a
//! good approximation, Poisson with mean `time x frequency`: `n` samples
//! estimate `n / frequency` seconds, with a standard error of `sqrt(n) /
//! frequency`. With no sample at all the error is taken as one period
//! rather than zero: an event can run up to about one period unseen.

use std::collections::{BTreeMap, VecDeque};

/// The lowest sampling frequency the tiers that estimate run at (`stat
/// --tier`, which has no frequency option, and the budget's tier steps):
/// a second of an event busy on one CPU gets about a hundred samples, a
/// 10 % error.
pub const ESTIMATE_HZ: u64 = 99;

use crate::model::{Calibration, CpuTime, EventKey, Snapshot, StackCount};

/// How much measuring a [`Calibrator`] keeps for each event: its newest
/// intervals until they cover a minute, so that a calibration follows the
/// load of late rather than of the whole run.
pub const CALIBRATION_WINDOW_S: f64 = 60.0;

/// A calibration resting on fewer samples is not given: at this many its
/// standard error ([`Calibration::error`], shown beside it) is a fifth of
/// it, still enough to tell a bias such as the timer softirq's 0.6 here
/// from none. An event at a few percent of a CPU reaches it in a few
/// one-second calibration intervals at 99 Hz; 100 would take dozens.
pub const CALIBRATION_MIN_SAMPLES: u64 = 25;

/// Replaces every event of `snapshot` that its tier does not measure with
/// an estimate from `stacks`, sampled at `frequency_hz` on `snapshot.cpus`
/// CPUs, and drops what the tier does not measure at all (the softirq
/// vectors, hardirq time and net timer callbacks when no softirq hook
/// runs). Events the tier measures are left as they are.
pub fn estimate_unmeasured(snapshot: &mut Snapshot, stacks: &[StackCount], frequency_hz: u64) {
    let tier = snapshot.tier;
    if frequency_hz == 0 {
        return;
    }
    let period_ns = 1e9 / frequency_hz as f64;
    // A CPU cannot spend more than the interval in anything.
    let interval_ns = (snapshot.interval_s * 1e9) as u64;
    let mut samples: BTreeMap<EventKey, Vec<u64>> = BTreeMap::new();
    for stack in stacks {
        let per_cpu = samples
            .entry(stack.context.event())
            .or_insert_with(|| vec![0; snapshot.cpus]);
        for (&cpu, &n) in &stack.cpus {
            if let Some(slot) = per_cpu.get_mut(cpu as usize) {
                *slot += n;
            }
        }
    }
    for key in EventKey::ALL.into_iter().filter(|&key| !tier.measures(key)) {
        let per_cpu = samples
            .remove(&key)
            .unwrap_or_else(|| vec![0; snapshot.cpus]);
        let n: u64 = per_cpu.iter().sum();
        let per_cpu_ns: Vec<u64> = per_cpu
            .iter()
            .map(|&n| ((n as f64 * period_ns) as u64).min(interval_ns))
            .collect();
        snapshot.events.insert(
            key,
            CpuTime {
                total_ns: per_cpu_ns.iter().sum(),
                per_cpu_ns,
                count: 0,
                estimated: true,
                // No larger than all the CPUs' whole interval.
                error_ns: Some(
                    (((n.max(1) as f64).sqrt() * period_ns) as u64)
                        .min(interval_ns * snapshot.cpus as u64),
                ),
                // Put on by a `Calibrator`, which knows the run.
                calibration: None,
            },
        );
    }
    if !tier.measures(EventKey::NetRxSoftirq) {
        snapshot.softirq.clear();
        snapshot.hardirq = CpuTime::default();
        snapshot.net_timer_callbacks.clear();
    }
}

/// Keeps, per event, its samples against its exact time over the newest
/// intervals that measured it (in the exact tier every event; in
/// `softirq` all but the socket calls), and puts the agreement they make on
/// that event's estimates in a lower tier ([`Calibration`]). A run that
/// never measured an event while sampling has none to give.
#[derive(Debug, Default)]
pub struct Calibrator {
    events: BTreeMap<EventKey, VecDeque<Measured>>,
}

/// One interval's part of an event's calibration.
#[derive(Debug, Clone, Copy)]
struct Measured {
    ts: f64,
    interval_s: f64,
    samples: u64,
    /// Samples x period.
    sampled_ns: f64,
    exact_ns: u64,
}

impl Calibrator {
    /// Takes in the events `snapshot` measured, if it sampled (after its
    /// breakdown is made).
    pub fn observe(&mut self, snapshot: &Snapshot) {
        let hz = snapshot.sampling.as_ref().map_or(0, |s| s.frequency_hz);
        if hz == 0 {
            return;
        }
        let period_ns = 1e9 / hz as f64;
        for key in EventKey::ALL {
            let time = snapshot.event(key);
            if time.estimated {
                continue;
            }
            // An event no sample saw still had its exact time.
            let samples: u64 = snapshot
                .breakdown
                .iter()
                .filter(|b| b.context.event() == key)
                .map(|b| b.samples)
                .sum();
            let kept = self.events.entry(key).or_default();
            kept.push_back(Measured {
                ts: snapshot.ts,
                interval_s: snapshot.interval_s,
                samples,
                sampled_ns: samples as f64 * period_ns,
                exact_ns: time.total_ns,
            });
            // The newest intervals until they cover the calibration window.
            let mut covered_s = 0.0;
            let keep = kept
                .iter()
                .rev()
                .take_while(|m| {
                    let short = covered_s < CALIBRATION_WINDOW_S;
                    covered_s += m.interval_s;
                    short
                })
                .count();
            let old = kept.len() - keep;
            kept.drain(..old);
        }
    }

    /// Puts the calibration on each estimated event of `snapshot` that has
    /// one: exact time measured, and enough samples.
    pub fn apply(&self, snapshot: &mut Snapshot) {
        for (key, time) in snapshot.events.iter_mut() {
            if !time.estimated {
                continue;
            }
            time.calibration = self.events.get(key).and_then(|kept| {
                let newest = kept.back()?;
                let (samples, sampled_ns, exact_ns) =
                    kept.iter().fold((0, 0.0, 0), |(n, s, e), m| {
                        (n + m.samples, s + m.sampled_ns, e + m.exact_ns)
                    });
                (samples >= CALIBRATION_MIN_SAMPLES && exact_ns > 0).then(|| Calibration {
                    agreement: sampled_ns / exact_ns as f64,
                    samples,
                    ts: newest.ts,
                })
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Breakdown, SampleContext, SamplingStats, Tier};

    fn stack(context: SampleContext, cpus: &[(u32, u64)]) -> StackCount {
        StackCount {
            cpus: cpus.iter().copied().collect(),
            count: cpus.iter().map(|&(_, n)| n).sum(),
            ..StackCount::of(context, &["f"], 0)
        }
    }

    fn exact_snapshot(tier: Tier) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.interval_s = 1.0;
        s.tier = tier;
        for time in s.events.values_mut() {
            *time = CpuTime {
                total_ns: 300,
                per_cpu_ns: vec![100, 200],
                count: 7,
                ..CpuTime::default()
            };
        }
        s
    }

    #[test]
    fn the_softirq_tier_estimates_socket_calls_only() {
        let mut s = exact_snapshot(Tier::Softirq);
        let stacks = [
            stack(SampleContext::SockSend, &[(0, 30), (1, 70)]),
            stack(SampleContext::SockSend, &[(1, 4)]),
            stack(SampleContext::NetRx, &[(0, 50)]),
        ];
        estimate_unmeasured(&mut s, &stacks, 100);
        let send = s.event(EventKey::SockSend);
        assert!(send.estimated);
        // 104 samples of 10 ms: 1.04 s, but no CPU spends more than the
        // 1 s interval.
        assert_eq!(send.per_cpu_ns, [300_000_000, 740_000_000]);
        assert_eq!(send.total_ns, 1_040_000_000);
        assert_eq!(send.error_ns, Some(101_980_390));
        assert_eq!(send.count, 0);
        // Nothing sampled: zero, with one period's error.
        let recv = s.event(EventKey::SockRecv);
        assert_eq!((recv.total_ns, recv.error_ns), (0, Some(10_000_000)));
        assert!(recv.estimated);
        // Measured events stay exact, whatever their samples say.
        let rx = s.event(EventKey::NetRxSoftirq);
        assert_eq!((rx.total_ns, rx.count, rx.estimated), (300, 7, false));
        assert_eq!(rx.error_ns, None);
        assert_eq!(s.softirq.len(), 10, "softirq vectors stay measured");
    }

    #[test]
    fn the_sampled_tier_estimates_everything_and_drops_what_it_cannot_see() {
        let mut s = exact_snapshot(Tier::Sampled);
        let stacks = [stack(SampleContext::NetTimers, &[(1, 9)])];
        estimate_unmeasured(&mut s, &stacks, 1000);
        assert!(EventKey::ALL.iter().all(|&k| s.event(k).estimated));
        let timers = s.event(EventKey::NetTimers);
        assert_eq!(
            (timers.total_ns, timers.error_ns),
            (9_000_000, Some(3_000_000))
        );
        assert_eq!(timers.per_cpu_ns, [0, 9_000_000]);
        assert!(s.softirq.is_empty() && s.net_timer_callbacks.is_empty());
        assert_eq!(s.hardirq, CpuTime::default());
    }

    #[test]
    fn the_exact_tier_is_left_alone() {
        let mut s = exact_snapshot(Tier::Exact);
        let before = s.clone();
        estimate_unmeasured(&mut s, &[stack(SampleContext::SockRecv, &[(0, 5)])], 99);
        assert_eq!(s, before);
    }

    /// An exact interval of `interval_s` ending at `ts`, sampled at 100 Hz
    /// (10 ms a sample): each event's (samples, exact ns).
    fn measured(ts: f64, interval_s: f64, events: &[(EventKey, u64, u64)]) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 1);
        (s.ts, s.interval_s) = (ts, interval_s);
        s.sampling = Some(SamplingStats {
            frequency_hz: 100,
            ..SamplingStats::default()
        });
        for &(key, samples, exact_ns) in events {
            let context = SampleContext::ALL
                .into_iter()
                .find(|c| c.event() == key)
                .unwrap();
            s.breakdown.push(Breakdown {
                context,
                samples,
                agreement: None,
                categories: Vec::new(),
            });
            s.events.get_mut(&key).unwrap().total_ns = exact_ns;
        }
        s
    }

    /// A softirq-tier interval whose socket calls are estimated.
    fn estimating() -> Snapshot {
        let mut s = exact_snapshot(Tier::Softirq);
        estimate_unmeasured(&mut s, &[], 99);
        s
    }

    #[test]
    fn an_estimate_carries_the_exact_tiers_agreement() {
        let mut calibrator = Calibrator::default();
        calibrator.observe(&measured(
            10.0,
            1.0,
            &[
                (EventKey::SockSend, 60, 1_000_000_000),
                (EventKey::NetTimers, 10, 100_000_000),
            ],
        ));
        // No sample of NET_RX in this one: its exact time counts all the same.
        calibrator.observe(&measured(
            11.0,
            1.0,
            &[(EventKey::SockSend, 60, 500_000_000)],
        ));
        let mut s = estimating();
        calibrator.apply(&mut s);
        // 120 samples of 10 ms against 1.5 s exact.
        assert_eq!(
            s.event(EventKey::SockSend).calibration,
            Some(Calibration {
                agreement: 0.8,
                samples: 120,
                ts: 11.0
            })
        );
        // No exact time to agree with.
        assert_eq!(s.event(EventKey::SockRecv).calibration, None);
        // Measured in this tier: no calibration.
        assert_eq!(s.event(EventKey::NetRxSoftirq).calibration, None);

        // Ten samples are too few: no calibration for the timers.
        let mut s = exact_snapshot(Tier::Sampled);
        estimate_unmeasured(&mut s, &[], 99);
        calibrator.apply(&mut s);
        assert_eq!(s.event(EventKey::NetTimers).calibration, None);
        assert!(s.event(EventKey::SockSend).calibration.is_some());
    }

    #[test]
    fn a_calibration_keeps_the_newest_minute_of_exact_intervals() {
        let mut calibrator = Calibrator::default();
        // Ten seconds where samples read twice the time, then a minute
        // where they read it exactly: only the minute is kept.
        for i in 0..70 {
            let samples = if i < 10 { 200 } else { 100 };
            calibrator.observe(&measured(
                f64::from(i),
                1.0,
                &[(EventKey::SockSend, samples, 1_000_000_000)],
            ));
        }
        let mut s = estimating();
        calibrator.apply(&mut s);
        let calibration = s.event(EventKey::SockSend).calibration.unwrap();
        assert_eq!((calibration.samples, calibration.ts), (6000, 69.0));
        assert!((calibration.agreement - 1.0).abs() < 1e-12);
        // An interval longer than the calibration window is kept alone.
        calibrator.observe(&measured(
            200.0,
            120.0,
            &[(EventKey::SockSend, 3000, 60_000_000_000)],
        ));
        let mut s = estimating();
        calibrator.apply(&mut s);
        let calibration = s.event(EventKey::SockSend).calibration.unwrap();
        assert_eq!(calibration.samples, 3000);
        assert!((calibration.agreement - 0.5).abs() < 1e-12);
    }

    #[test]
    fn only_measured_and_sampled_intervals_calibrate() {
        let mut calibrator = Calibrator::default();
        let mut unsampled = measured(1.0, 1.0, &[(EventKey::SockSend, 500, 1_000_000_000)]);
        unsampled.sampling = None;
        calibrator.observe(&unsampled);
        // The softirq tier estimates the socket calls (from these very
        // samples: no agreement to learn) and measures NET_RX.
        let mut lower = measured(
            2.0,
            1.0,
            &[
                (EventKey::SockSend, 500, 0),
                (EventKey::NetRxSoftirq, 300, 2_000_000_000),
            ],
        );
        lower.tier = Tier::Softirq;
        estimate_unmeasured(&mut lower, &[], 100);
        calibrator.observe(&lower);
        let mut s = exact_snapshot(Tier::Sampled);
        estimate_unmeasured(&mut s, &[], 99);
        calibrator.apply(&mut s);
        assert_eq!(s.event(EventKey::SockSend).calibration, None);
        // NET_RX, measured in the softirq tier: 3 s of samples in 2 s.
        assert_eq!(
            s.event(EventKey::NetRxSoftirq).calibration,
            Some(Calibration {
                agreement: 1.5,
                samples: 300,
                ts: 2.0
            })
        );
    }
}
