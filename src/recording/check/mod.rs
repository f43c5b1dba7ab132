//! The one check of a recording, snapshot by snapshot: everything the front
//! ends rely on, each problem named with where it is. `attribution.rs`
//! checks the groups, `stacks.rs` the breakdown and the stacks.

mod attribution;
mod stacks;

use super::{invalid, with_overrun, Invalid, MAX_CPUS, MAX_MEASURED_S};
use crate::kernel::sampler::MAX_FREQUENCY_HZ;
use crate::model::{
    BudgetChange, CpuTime, EventKey, Recording, RecordingHeader, Snapshot, SoftirqVector, Tier,
    MAX_BUDGET_PERCENT,
};
use attribution::check_attribution;
use stacks::{check_breakdown, check_stacks};

#[cfg(test)]
pub(super) use attribution::MAX_GROUP_NAME;
#[cfg(test)]
pub(super) use stacks::frame_problem;

/// Everything the front ends rely on: the header in range; per snapshot
/// every event and softirq vector present with one value per CPU, totals
/// that are the sums of those values, times a CPU could have spent in the
/// interval, timestamps in order, breakdown shares in [0, 1], stack
/// frames that are names (no kernel address, nothing that would break
/// the folded format).
pub fn validate(recording: &Recording) -> Result<(), Invalid> {
    let mut checker = Checker::new(&recording.header)?;
    recording
        .snapshots
        .iter()
        .try_for_each(|snapshot| checker.next(snapshot))
}

/// [`validate`] one snapshot at a time, for a writer that makes a
/// recording as it goes (the agent's recording endpoint) rather than
/// holding all of it.
pub struct Checker<'h> {
    header: &'h RecordingHeader,
    /// Snapshots checked so far.
    count: usize,
    previous_ts: f64,
    /// What the intervals add up to: bounded, it bounds what the front
    /// ends add up over any range of snapshots (the stack samples of a
    /// century on MAX_CPUS at MAX_FREQUENCY_HZ fit 64 bits).
    measured_s: f64,
}

impl<'h> Checker<'h> {
    /// Checks the header.
    pub fn new(header: &'h RecordingHeader) -> Result<Checker<'h>, Invalid> {
        check_frequency("header.frequency_hz", header.frequency_hz)?;
        check_seconds("header.started", header.started, f64::MAX)?;
        check_seconds("header.duration_s", header.duration_s, MAX_MEASURED_S)?;
        Ok(Checker {
            header,
            count: 0,
            previous_ts: f64::NEG_INFINITY,
            measured_s: 0.0,
        })
    }

    /// Checks the recording's next snapshot.
    pub fn next(&mut self, snapshot: &Snapshot) -> Result<(), Invalid> {
        let header = self.header;
        let at = format!("snapshots[{}]", self.count);
        self.count += 1;
        let transport = snapshot.sampling.as_ref().map(|s| &s.transport);
        for (field, value, header_value) in [
            ("backend", Some(&snapshot.backend), &header.backend),
            ("sampling.transport", transport, &header.transport),
        ] {
            if let Some(value) = value.filter(|&v| v != header_value) {
                return Err(invalid(
                    format!("{at}.{field}"),
                    format!("{value:?} differs from the header's {header_value:?}"),
                ));
            }
        }
        check_snapshot(&at, snapshot)?;
        if snapshot.ts < self.previous_ts {
            return Err(invalid(
                format!("{at}.ts"),
                format!(
                    "{} is before the previous snapshot's {}",
                    snapshot.ts, self.previous_ts
                ),
            ));
        }
        self.previous_ts = snapshot.ts;
        self.measured_s += snapshot.interval_s;
        if self.measured_s > MAX_MEASURED_S {
            return Err(invalid(
                format!("{at}.interval_s"),
                "the intervals up to here add up to more than a century",
            ));
        }
        Ok(())
    }
}

fn check_snapshot(at: &str, s: &Snapshot) -> Result<(), Invalid> {
    check_seconds(&format!("{at}.ts"), s.ts, f64::MAX)?;
    check_seconds(&format!("{at}.interval_s"), s.interval_s, MAX_MEASURED_S)?;
    if !(1..=MAX_CPUS).contains(&s.cpus) {
        return Err(invalid(
            format!("{at}.cpus"),
            format!("{} is outside 1-{MAX_CPUS}", s.cpus),
        ));
    }
    if let Some(back) = s
        .calibrating
        .filter(|&back| s.tier != Tier::Exact || back == Tier::Exact)
    {
        return Err(invalid(
            format!("{at}.calibrating"),
            format!(
                "is {} in the {} tier: a calibration interval is exact, for a run in a tier \
                 that estimates",
                back.name(),
                s.tier.name()
            ),
        ));
    }
    // Nanoseconds one CPU can have spent in the interval.
    let cpu_ns = with_overrun(s.interval_s) * 1e9;
    for key in EventKey::ALL {
        let time = s
            .events
            .get(&key)
            .ok_or_else(|| invalid(format!("{at}.events"), format!("lacks {}", key.name())))?;
        check_time(&format!("{at}.events.{}", key.name()), time, s.cpus, cpu_ns)?;
        check_estimate(&format!("{at}.events.{}", key.name()), time, s, key)?;
    }
    // The sampled tier measures no vector and no hardirq time: it has none.
    let vectors = if s.tier.measures(EventKey::NetRxSoftirq) {
        &SoftirqVector::ALL[..]
    } else {
        &[]
    };
    for &vector in vectors {
        let time = s
            .softirq
            .get(&vector)
            .ok_or_else(|| invalid(format!("{at}.softirq"), format!("lacks {}", vector.name())))?;
        check_time(
            &format!("{at}.softirq.{}", vector.name()),
            time,
            s.cpus,
            cpu_ns,
        )?;
    }
    if !vectors.is_empty() {
        check_time(&format!("{at}.hardirq"), &s.hardirq, s.cpus, cpu_ns)?;
    }
    // The front ends add events up, and vectors.
    let events = checked_sum(0, s.events.values().map(|t| t.total_ns));
    let vectors = checked_sum(0, s.softirq.values().map(|t| t.total_ns));
    for (field, sum) in [("events", events), ("softirq", vectors)] {
        sum.ok_or_else(|| invalid(format!("{at}.{field}"), OVERFLOW))?;
    }
    // What all CPUs together can have spent.
    let host_ns = cpu_ns * s.cpus as f64;
    let callbacks = s.net_timer_callbacks.values().map(|&ns| ns as f64).sum();
    check_at_most(&format!("{at}.net_timer_callbacks"), callbacks, host_ns)?;
    check_at_most(
        &format!("{at}.overhead.process_cpu_ns"),
        s.overhead.process_cpu_ns as f64,
        host_ns,
    )?;
    check_at_most(
        &format!("{at}.overhead.serving_cpu_ns"),
        (s.overhead.serving_cpu_ns + s.overhead.export_cpu_ns) as f64,
        s.overhead.process_cpu_ns as f64,
    )?;
    check_at_most(
        &format!("{at}.overhead.bpf_run_time_ns"),
        s.overhead.bpf_run_time_ns as f64,
        host_ns,
    )?;
    check_at_most(
        &format!("{at}.overhead.bpf_error_ns"),
        s.overhead.bpf_error_ns as f64,
        host_ns,
    )?;
    check_seconds(
        &format!("{at}.overhead.bpf_stats_held_s"),
        s.overhead.bpf_stats_held_s,
        with_overrun(s.interval_s),
    )?;
    // In percent of one CPU over the interval.
    let host_percent = if s.interval_s > 0.0 {
        host_ns / (s.interval_s * 1e9) * 100.0
    } else {
        0.0
    };
    for (field, value) in [
        ("cost_percent", s.overhead.cost_percent),
        ("measuring_percent", s.overhead.measuring_percent),
        ("serving_percent", s.overhead.serving_percent),
        ("export_percent", s.overhead.export_percent),
    ] {
        if let Some(value) = value {
            check_percent(&format!("{at}.overhead.{field}"), value, host_percent)?;
        }
    }
    check_percent(
        &format!("{at}.overhead.error_percent"),
        s.overhead.error_percent,
        host_percent,
    )?;
    if let Some(budget) = &s.budget {
        check_percent(
            &format!("{at}.budget.percent"),
            budget.percent,
            MAX_BUDGET_PERCENT,
        )?;
        if let Some(hz) = budget.asked_frequency_hz {
            check_frequency(&format!("{at}.budget.asked_frequency_hz"), hz)?;
        }
        if let Some(p) = budget.asked_sketch_probability {
            check_probability(&format!("{at}.budget.asked_sketch_probability"), p)?;
        }
        if let Some(BudgetChange::SketchDown { from, to } | BudgetChange::SketchUp { from, to }) =
            budget.change
        {
            check_probability(&format!("{at}.budget.change.from"), from)?;
            check_probability(&format!("{at}.budget.change.to"), to)?;
        }
    }
    if let Some(sampling) = &s.sampling {
        check_frequency(
            &format!("{at}.sampling.frequency_hz"),
            sampling.frequency_hz,
        )?;
        check_at_most(
            &format!("{at}.sampling.softirq_loop"),
            sampling.softirq_loop as f64,
            sampling.samples as f64,
        )?;
    }
    // The sampler takes at most one sample per period per CPU.
    let most_samples = host_ns / 1e9 * MAX_FREQUENCY_HZ as f64;
    check_breakdown(at, s, most_samples)?;
    check_stacks(at, s, most_samples)?;
    if let Some(attribution) = &s.attribution {
        check_attribution(&format!("{at}.attribution"), attribution, s)?;
    }
    if let Some(sketch) = &s.sketch {
        let at = format!("{at}.sketch");
        check_seconds(
            &format!("{at}.interval_s"),
            sketch.interval_s,
            MAX_MEASURED_S,
        )?;
        check_probability(&format!("{at}.probability"), sketch.probability)?;
        // A flow's share is an estimate over an exact total: netto keeps
        // the shares it writes within 1 together, but only the estimate's
        // own error bounds one, so any number >= 0 is one.
        for (j, flow) in sketch.top.iter().enumerate() {
            check_seconds(&format!("{at}.top[{j}].share"), flow.share, f64::MAX)?;
        }
        check_seconds(
            &format!("{at}.cost.ns_per_packet"),
            sketch.cost.ns_per_packet,
            f64::MAX,
        )?;
        check_seconds(
            &format!("{at}.cost.cpu_percent"),
            sketch.cost.cpu_percent,
            f64::MAX,
        )?;
    }
    Ok(())
}

/// One value per CPU, each possible in the interval, adding up to the total.
/// An event is estimated exactly when its snapshot's tier does not
/// measure it, and then it has an error (of at most the interval on every
/// CPU): exact and estimated values are never mixed up on replay.
fn check_estimate(at: &str, time: &CpuTime, s: &Snapshot, key: EventKey) -> Result<(), Invalid> {
    let measured = s.tier.measures(key);
    if time.estimated == measured {
        return Err(invalid(
            format!("{at}.estimated"),
            format!(
                "is {} but the {} tier {} {}",
                time.estimated,
                s.tier.name(),
                if measured { "measures" } else { "estimates" },
                key.name()
            ),
        ));
    }
    match time.error_ns {
        None if time.estimated => Err(invalid(format!("{at}.error_ns"), "missing for an estimate")),
        Some(_) if !time.estimated => Err(invalid(
            format!("{at}.error_ns"),
            "present on an exact value",
        )),
        Some(error) => check_at_most(
            &format!("{at}.error_ns"),
            error as f64,
            with_overrun(s.interval_s) * 1e9 * s.cpus as f64,
        ),
        None => Ok(()),
    }?;
    match time.calibration {
        Some(_) if !time.estimated => Err(invalid(
            format!("{at}.calibration"),
            "present on an exact value",
        )),
        // Measured earlier in the run: not after this interval ended.
        Some(c) => check_seconds(
            &format!("{at}.calibration.agreement"),
            c.agreement,
            f64::MAX,
        )
        .and(check_seconds(&format!("{at}.calibration.ts"), c.ts, s.ts))
        .and(check_seconds(
            &format!("{at}.calibration.agreement_error"),
            c.agreement_error.unwrap_or(0.0),
            f64::MAX,
        ))
        .and(check_seconds(
            &format!("{at}.calibration.age_s"),
            c.age_s,
            f64::MAX,
        )),
        None => Ok(()),
    }?;
    // The estimate before its calibration: only where one was applied.
    let applied = time.calibration.is_some_and(|c| c.applied);
    match time.raw_ns {
        Some(_) if !applied => Err(invalid(
            format!("{at}.raw_ns"),
            "present on a value no calibration corrected",
        )),
        None if applied => Err(invalid(
            format!("{at}.raw_ns"),
            "missing for a calibrated estimate",
        )),
        _ => Ok(()),
    }
}

fn check_time(at: &str, time: &CpuTime, cpus: usize, cpu_ns: f64) -> Result<(), Invalid> {
    if time.per_cpu_ns.len() != cpus {
        return Err(invalid(
            format!("{at}.per_cpu_ns"),
            format!("has {} values for {cpus} CPUs", time.per_cpu_ns.len()),
        ));
    }
    for (cpu, &ns) in time.per_cpu_ns.iter().enumerate() {
        if ns as f64 > cpu_ns {
            return Err(invalid(
                format!("{at}.per_cpu_ns[{cpu}]"),
                format!(
                    "{ns} ns is more than one CPU can spend in the interval ({:.0} ns at most)",
                    cpu_ns
                ),
            ));
        }
    }
    let sum = checked_sum(0, time.per_cpu_ns.iter().copied())
        .ok_or_else(|| invalid(format!("{at}.per_cpu_ns"), OVERFLOW))?;
    if sum != time.total_ns {
        return Err(invalid(
            format!("{at}.total_ns"),
            format!("{} is not the sum of per_cpu_ns ({sum})", time.total_ns),
        ));
    }
    Ok(())
}

/// What a sum that does not fit 64 bits says: no measurement adds up to
/// that, and the front ends' sums would wrap.
const OVERFLOW: &str = "add up to more than 2^64, which nothing measured can";

/// `start` plus `values`, unless that overflows.
fn checked_sum(start: u64, mut values: impl Iterator<Item = u64>) -> Option<u64> {
    values.try_fold(start, u64::checked_add)
}

fn check_frequency(at: &str, hz: u64) -> Result<(), Invalid> {
    if hz > MAX_FREQUENCY_HZ {
        return Err(invalid(
            at,
            format!("{hz} Hz is above netto's {MAX_FREQUENCY_HZ} Hz"),
        ));
    }
    Ok(())
}

/// A finite, non-negative number of seconds (or other quantity) up to `most`.
fn check_seconds(at: &str, value: f64, most: f64) -> Result<(), Invalid> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(invalid(at, format!("{value} is not a finite number >= 0")));
    }
    check_at_most(at, value, most)
}

fn check_percent(at: &str, value: f64, most: f64) -> Result<(), Invalid> {
    if !(value.is_finite() && (0.0..=most).contains(&value)) {
        return Err(invalid(
            at,
            format!("{value} is not a percentage in [0, {most:.0}]"),
        ));
    }
    Ok(())
}

fn check_at_most(at: &str, value: f64, most: f64) -> Result<(), Invalid> {
    if value > most {
        return Err(invalid(
            at,
            format!("{value} is above {most:.0}, the most possible"),
        ));
    }
    Ok(())
}

/// A sampling probability: the sketch samples at least now and then.
fn check_probability(at: &str, p: f64) -> Result<(), Invalid> {
    if !(p > 0.0 && p <= 1.0) {
        return Err(invalid(at, format!("{p} is outside (0, 1]")));
    }
    Ok(())
}

fn check_share(at: &str, share: f64) -> Result<(), Invalid> {
    if !(0.0..=1.0).contains(&share) {
        return Err(invalid(at, format!("{share} is outside [0, 1]")));
    }
    Ok(())
}
