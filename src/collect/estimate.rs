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

use std::collections::BTreeMap;

/// The lowest sampling frequency the tiers that estimate run at (`stat
/// --tier`, which has no frequency option, and the budget's tier steps):
/// a second of an event busy on one CPU gets about a hundred samples, a
/// 10 % error.
pub const ESTIMATE_HZ: u64 = 99;

use crate::model::{CpuTime, EventKey, Snapshot, StackCount};

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
                raw_ns: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SampleContext, Tier};

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
}
