use super::*;
use crate::collect::estimate::estimate_unmeasured;
use crate::model::{SampleContext, SamplingStats, StackCount};

/// 100 Hz: a sample is 10 ms.
const HZ: u64 = 100;

fn samples(context: SampleContext, n: u64) -> StackCount {
    StackCount {
        cpus: [(0, n)].into(),
        count: n,
        ..StackCount::of(context, &["f"], 0)
    }
}

fn context_of(key: EventKey) -> SampleContext {
    SampleContext::ALL
        .into_iter()
        .find(|c| c.event() == key)
        .unwrap()
}

/// A calibration interval of a run in `tier`, one second ending at `ts`,
/// on one CPU: each event's (samples as the tier placed them, exact ns).
fn calibration(ts: f64, tier: Tier, events: &[(EventKey, u64, u64)]) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 1);
    (s.ts, s.interval_s, s.calibrating) = (ts, 1.0, Some(tier));
    s.sampling = Some(SamplingStats {
        frequency_hz: HZ,
        ..SamplingStats::default()
    });
    for &(key, n, exact_ns) in events {
        s.stacks.push(samples(context_of(key), n));
        s.events.get_mut(&key).unwrap().total_ns = exact_ns;
    }
    s
}

/// An interval of `tier` ending at `ts` whose samples are `events`' (event,
/// samples).
fn estimating(ts: f64, tier: Tier, events: &[(EventKey, u64)]) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 1);
    (s.ts, s.interval_s, s.tier) = (ts, 1.0, tier);
    let stacks: Vec<StackCount> = events
        .iter()
        .map(|&(key, n)| samples(context_of(key), n))
        .collect();
    estimate_unmeasured(&mut s, &stacks, HZ);
    s
}

#[test]
fn an_estimate_is_divided_by_its_tiers_own_ratio_with_both_errors() {
    let mut calibrator = Calibrator::default();
    // Timer samples read 0.4 of the exact time: 40 and 40 samples (0.4 s
    // each) against 1 s each.
    for ts in [10.0, 20.0] {
        calibrator.observe(&calibration(
            ts,
            Tier::Sampled,
            &[(EventKey::NetTimers, 40, 1_000_000_000)],
        ));
    }
    let mut s = estimating(25.0, Tier::Sampled, &[(EventKey::NetTimers, 20)]);
    calibrator.apply(&mut s);
    let timers = s.event(EventKey::NetTimers);
    // 20 samples, 0.2 s raw: 0.5 s calibrated.
    assert_eq!(timers.raw_ns, Some(200_000_000));
    assert_eq!(timers.total_ns, 500_000_000);
    assert_eq!(timers.per_cpu_ns, [500_000_000]);
    let c = timers.calibration.unwrap();
    assert!(c.applied);
    assert!((c.agreement - 0.4).abs() < 1e-12);
    assert_eq!((c.samples, c.ts, c.age_s), (80, 20.0, 5.0));
    // Two intervals: the Poisson error of 80 samples, 0.4 / sqrt(80).
    let ratio_error = 0.4 / 80f64.sqrt();
    assert!((c.error() - ratio_error).abs() < 1e-12);
    // sqrt(20) samples' error over the ratio, beside the calibrated value's
    // relative calibration error.
    let sampling = 20f64.sqrt() * 1e7 / 0.4;
    let calibrating = 5e8 * ratio_error / 0.4;
    let error = timers.error_ns.unwrap() as f64;
    assert!((error - sampling.hypot(calibrating)).abs() < 5.0, "{error}");
    // Events no calibration interval measured with time: as they were.
    let send = s.event(EventKey::SockSend);
    assert_eq!((send.raw_ns, send.calibration), (None, None));
}

#[test]
fn too_few_samples_are_shown_not_applied() {
    let mut calibrator = Calibrator::default();
    calibrator.observe(&calibration(
        1.0,
        Tier::Sampled,
        &[(EventKey::NetTimers, CALIBRATION_MIN_SAMPLES - 1, 50_000_000)],
    ));
    let mut s = estimating(2.0, Tier::Sampled, &[(EventKey::NetTimers, 3)]);
    let before = s.event(EventKey::NetTimers).clone();
    calibrator.apply(&mut s);
    let timers = s.event(EventKey::NetTimers);
    let c = timers.calibration.unwrap();
    assert!(!c.applied);
    assert_eq!(
        (timers.total_ns, timers.error_ns, timers.raw_ns),
        (before.total_ns, before.error_ns, None)
    );
}

#[test]
fn each_tier_has_its_own_calibration_and_only_calibration_intervals_count() {
    let mut calibrator = Calibrator::default();
    // The softirq tier measures NET_RX: only the socket calls calibrate.
    calibrator.observe(&calibration(
        1.0,
        Tier::Softirq,
        &[
            (EventKey::SockRecv, 130, 1_000_000_000),
            (EventKey::NetRxSoftirq, 50, 1_000_000_000),
        ],
    ));
    // An exact interval that is no calibration interval: the exact tier
    // placed its samples.
    let mut exact = calibration(2.0, Tier::Sampled, &[(EventKey::SockRecv, 500, 1)]);
    exact.calibrating = None;
    calibrator.observe(&exact);
    let mut softirq = estimating(3.0, Tier::Softirq, &[(EventKey::SockRecv, 26)]);
    calibrator.apply(&mut softirq);
    let recv = softirq.event(EventKey::SockRecv);
    assert!((recv.calibration.unwrap().agreement - 1.3).abs() < 1e-12);
    assert_eq!(recv.total_ns, 200_000_000);
    let mut sampled = estimating(3.0, Tier::Sampled, &[(EventKey::SockRecv, 26)]);
    calibrator.apply(&mut sampled);
    assert!(EventKey::ALL
        .iter()
        .all(|&k| sampled.event(k).calibration.is_none()));
}

#[test]
fn the_pool_keeps_the_newest_intervals_up_to_enough_samples() {
    let mut calibrator = Calibrator::default();
    // Ten intervals where samples read twice the time, then five where
    // they read it exactly with 100 samples each: the newest four hold
    // the 400 samples the pool needs, so only they count.
    for i in 0..15 {
        let n = if i < 10 { 200 } else { 100 };
        calibrator.observe(&calibration(
            f64::from(i),
            Tier::Sampled,
            &[(EventKey::SockSend, n, 1_000_000_000)],
        ));
    }
    let mut s = estimating(15.0, Tier::Sampled, &[(EventKey::SockSend, 100)]);
    calibrator.apply(&mut s);
    let c = s.event(EventKey::SockSend).calibration.unwrap();
    assert_eq!(c.samples, 400);
    assert!((c.agreement - 1.0).abs() < 1e-12);
    // An event that is hardly sampled keeps at most POOL_INTERVALS.
    for i in 0..20 {
        calibrator.observe(&calibration(
            f64::from(100 + i),
            Tier::Sampled,
            &[(EventKey::NetTxSoftirq, 1, 10_000_000)],
        ));
    }
    let mut s = estimating(200.0, Tier::Sampled, &[]);
    calibrator.apply(&mut s);
    let c = s.event(EventKey::NetTxSoftirq).calibration.unwrap();
    assert_eq!(c.samples, POOL_INTERVALS as u64);
}

#[test]
fn a_ratio_that_scatters_between_intervals_states_the_larger_error() {
    let mut calibrator = Calibrator::default();
    // 60, 140, 60, 140 samples against the same exact second: the Poisson
    // error of 400 samples is 5 %, the scatter says far more.
    for (i, n) in [60, 140, 60, 140].into_iter().enumerate() {
        calibrator.observe(&calibration(
            i as f64,
            Tier::Sampled,
            &[(EventKey::SockSend, n, 1_000_000_000)],
        ));
    }
    let mut s = estimating(5.0, Tier::Sampled, &[(EventKey::SockSend, 100)]);
    calibrator.apply(&mut s);
    let c = s.event(EventKey::SockSend).calibration.unwrap();
    assert!((c.agreement - 1.0).abs() < 1e-12);
    // Residuals of 0.4 s each: sqrt(4/3 x 4 x 0.16 / 16) = 0.231.
    assert!((c.error() - (4.0 / 3.0 * 0.64f64 / 16.0).sqrt()).abs() < 1e-12);
    // One interval's estimate scatters by sqrt(4 x 0.16 / 3) = 0.462 s, far
    // more than its 100 samples' 0.1 s: that is its samples' error.
    let send = s.event(EventKey::SockSend);
    let scattered = (0.64f64 / 3.0).sqrt() * 1e9;
    let expected = scattered.hypot(1e9 * c.error());
    assert!(
        (send.error_ns.unwrap() as f64 - expected).abs() < 10.0,
        "{send:?}"
    );
}

/// Item 5 of issue 34: between two calibrations the load halves. The
/// calibrated estimate follows the samples, within its stated error of the
/// new exact time; holding the last calibration's exact time would not.
#[test]
fn the_calibrated_estimate_follows_the_load_between_calibrations() {
    let mut calibrator = Calibrator::default();
    // Samples read 1.3 of the receive path's time at 600 ms/s.
    for ts in 0..3 {
        calibrator.observe(&calibration(
            f64::from(ts),
            Tier::Sampled,
            &[(EventKey::SockRecv, 78, 600_000_000)],
        ));
    }
    // Now 300 ms/s: 39 samples an interval.
    let truth = 300_000_000f64;
    let mut s = estimating(30.0, Tier::Sampled, &[(EventKey::SockRecv, 39)]);
    calibrator.apply(&mut s);
    let recv = s.event(EventKey::SockRecv);
    let error = recv.error_ns.unwrap() as f64;
    assert!((recv.total_ns as f64 - truth).abs() <= 2.0 * error);
    let held = 600_000_000f64;
    assert!((held - truth).abs() > 2.0 * error, "holding would not pass");
}

#[test]
fn an_event_no_sample_saw_is_not_calibrated_to_nothing_for_sure() {
    let mut calibrator = Calibrator::default();
    // 20 ms of timer work and no sample (10 ms each) in two intervals.
    for ts in [1.0, 2.0] {
        calibrator.observe(&calibration(
            ts,
            Tier::Sampled,
            &[(EventKey::NetTimers, 0, 10_000_000)],
        ));
    }
    let mut s = estimating(3.0, Tier::Sampled, &[]);
    calibrator.apply(&mut s);
    let c = s.event(EventKey::NetTimers).calibration.unwrap();
    assert_eq!((c.agreement, c.applied), (0.0, false));
    // One sample's worth unseen: 10 ms against 20 ms.
    assert!((c.error() - 0.5).abs() < 1e-12, "{c:?}");
}
