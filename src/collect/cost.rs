//! The run time of netto's BPF programs over an interval, without holding
//! BPF run-time statistics all the time (they tax every BPF program on the
//! host with two clock reads per run).
//!
//! Every program counts its runs exactly, by hook (`kernel::hooks`), and
//! statistics are on for a slice of each interval (`source::duty`). A hook
//! whose programs ran R times for T ns while statistics were on, out of the
//! E runs its counter says they made, cost `T + (E - R) * T / R`: the runs
//! outside the slice priced at the slice's cost per run. The error is the
//! spread of that cost per run between the slices of recent intervals (its
//! sample standard deviation, times the runs priced with it), summed over
//! hooks as independent errors. When statistics were on for the whole
//! interval (something else on the host holds them, as the overhead bench
//! does) the runs are all measured and the figure is exact.

use std::collections::{BTreeMap, VecDeque};

use crate::kernel::stats::RunStats;
use crate::model::ProgramCost;

/// Slices whose cost per run makes a hook's error.
const HISTORY: usize = 10;

/// Below this share of unmeasured runs a hook counts as measured in full:
/// counters and statistics are read a few microseconds apart, and a system
/// call that never returns (exit) runs sys_enter alone.
const MEASURED_IN_FULL: f64 = 0.005;

/// What one hook's programs did over an interval.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRuns {
    pub hook: &'static str,
    /// Runs of the hook's programs, exactly: its counter times the
    /// programs that run per count.
    pub runs: u64,
    /// Each program's runs and run time as the statistics measured them
    /// (only while they were on).
    pub programs: Vec<(String, RunStats)>,
}

/// netto's BPF programs' run time over an interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BpfCost {
    pub run_time_ns: u64,
    pub error_ns: u64,
    pub estimated: bool,
    pub programs: Vec<ProgramCost>,
}

/// Each hook's cost per run in recent slices, across intervals.
#[derive(Debug, Default)]
pub struct CostHistory {
    per_run: BTreeMap<&'static str, VecDeque<f64>>,
}

impl CostHistory {
    fn note(&mut self, hook: &'static str, ns_per_run: f64) {
        let recent = self.per_run.entry(hook).or_default();
        if recent.len() == HISTORY {
            recent.pop_front();
        }
        recent.push_back(ns_per_run);
    }

    fn last(&self, hook: &str) -> Option<f64> {
        self.per_run.get(hook)?.back().copied()
    }

    /// The sample standard deviation of a hook's recent costs per run;
    /// `None` before two slices measured it.
    fn spread(&self, hook: &str) -> Option<f64> {
        let recent = self.per_run.get(hook).filter(|r| r.len() >= 2)?;
        let n = recent.len() as f64;
        let mean = recent.iter().sum::<f64>() / n;
        let var = recent.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(var.sqrt())
    }

    /// The cost per run over every hook ever measured: the price of a hook
    /// no slice has seen run yet.
    fn typical(&self) -> f64 {
        let last: Vec<f64> = self
            .per_run
            .values()
            .filter_map(|r| r.back())
            .copied()
            .collect();
        if last.is_empty() {
            0.0
        } else {
            last.iter().sum::<f64>() / last.len() as f64
        }
    }
}

/// The run time of every hook's programs over the interval (see the module
/// documentation), and what each program's share of it was.
pub fn estimate(hooks: &[HookRuns], history: &mut CostHistory) -> BpfCost {
    let mut cost = BpfCost::default();
    let mut variance = 0.0;
    for hook in hooks {
        let measured_runs: u64 = hook.programs.iter().map(|(_, s)| s.run_count).sum();
        let measured_ns: u64 = hook.programs.iter().map(|(_, s)| s.run_time_ns).sum();
        if measured_runs > 0 {
            history.note(hook.hook, measured_ns as f64 / measured_runs as f64);
        }
        let mut unmeasured = hook.runs.saturating_sub(measured_runs) as f64;
        if unmeasured <= MEASURED_IN_FULL * hook.runs as f64 {
            unmeasured = 0.0;
        }
        let per_run = history.last(hook.hook).unwrap_or_else(|| history.typical());
        let spread = history.spread(hook.hook).unwrap_or(per_run);
        if unmeasured > 0.0 {
            cost.estimated = true;
            variance += (unmeasured * spread).powi(2);
        }
        cost.run_time_ns += measured_ns + (unmeasured * per_run).round() as u64;
        cost.programs
            .extend(share(hook, measured_runs, unmeasured, per_run));
    }
    cost.error_ns = variance.sqrt().round() as u64;
    cost
}

/// The hook's programs with the unmeasured runs given out in proportion to
/// the measured ones (evenly when none were measured).
fn share(
    hook: &HookRuns,
    measured_runs: u64,
    unmeasured: f64,
    per_run: f64,
) -> impl Iterator<Item = ProgramCost> + '_ {
    let programs = hook.programs.len().max(1) as f64;
    hook.programs.iter().map(move |(name, s)| {
        let extra_runs = if measured_runs > 0 {
            unmeasured * s.run_count as f64 / measured_runs as f64
        } else {
            unmeasured / programs
        };
        let extra_ns = if s.run_count > 0 {
            extra_runs * s.run_time_ns as f64 / s.run_count as f64
        } else {
            extra_runs * per_run
        };
        ProgramCost {
            name: name.clone(),
            hook: hook.hook.to_owned(),
            run_count: s.run_count + extra_runs.round() as u64,
            run_time_ns: s.run_time_ns + extra_ns.round() as u64,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(run_count: u64, run_time_ns: u64) -> RunStats {
        RunStats {
            run_count,
            run_time_ns,
            recursion_misses: 0,
        }
    }

    fn softirq(runs: u64, entry: RunStats, exit: RunStats) -> HookRuns {
        HookRuns {
            hook: "softirq",
            runs,
            programs: vec![("entry".into(), entry), ("exit".into(), exit)],
        }
    }

    #[test]
    fn statistics_on_all_the_time_measure_exactly() {
        let mut history = CostHistory::default();
        // 1000 softirq runs: 1000 entries and 1000 exits, all measured
        // but one exit (a reading a few microseconds apart).
        let hooks = [softirq(2000, stats(1000, 100_000), stats(999, 199_800))];
        let cost = estimate(&hooks, &mut history);
        assert!(!cost.estimated);
        assert_eq!((cost.run_time_ns, cost.error_ns), (299_800, 0));
        assert_eq!(cost.programs[1].run_count, 999);
    }

    #[test]
    fn a_slice_prices_the_runs_outside_it() {
        let mut history = CostHistory::default();
        // 10 % of the runs measured: entries at 100 ns, exits at 200 ns.
        let hooks = [softirq(2000, stats(100, 10_000), stats(100, 20_000))];
        let cost = estimate(&hooks, &mut history);
        assert!(cost.estimated);
        assert_eq!(cost.run_time_ns, 300_000);
        // Each program's share is its own cost per run.
        assert_eq!(cost.programs[0].run_count, 1000);
        assert_eq!(cost.programs[0].run_time_ns, 100_000);
        assert_eq!(cost.programs[1].run_time_ns, 200_000);
        // One slice: nothing to tell the spread by, so the whole price of
        // the unmeasured runs is the error.
        assert_eq!(cost.error_ns, 270_000);

        // A second slice at 160 ns per run instead of 150: the error is
        // their spread (sd 7.07 ns) on the 1800 runs outside the slice.
        let hooks = [softirq(2000, stats(100, 12_000), stats(100, 20_000))];
        let cost = estimate(&hooks, &mut history);
        assert_eq!(cost.run_time_ns, 32_000 + 1800 * 160);
        assert!((cost.error_ns as f64 - 1800.0 * 50f64.sqrt()).abs() < 1.0);
    }

    #[test]
    fn a_hook_the_slice_missed_is_priced_from_its_last_slice() {
        let mut history = CostHistory::default();
        estimate(
            &[softirq(200, stats(100, 10_000), stats(100, 10_000))],
            &mut history,
        );
        let cost = estimate(&[softirq(40, stats(0, 0), stats(0, 0))], &mut history);
        assert!(cost.estimated);
        assert_eq!(cost.run_time_ns, 40 * 100);
        assert_eq!(cost.programs[0].run_count, 20);
        // A hook never measured takes the typical price of the others.
        let other = HookRuns {
            hook: "sched_switch",
            runs: 10,
            programs: vec![("switch".into(), stats(0, 0))],
        };
        let cost = estimate(&[other], &mut history);
        assert_eq!(cost.run_time_ns, 10 * 100);
        assert_eq!(cost.error_ns, 10 * 100);
    }

    #[test]
    fn nothing_ran_nothing_cost() {
        let mut history = CostHistory::default();
        let cost = estimate(&[softirq(0, stats(0, 0), stats(0, 0))], &mut history);
        assert_eq!(
            cost,
            BpfCost {
                programs: cost.programs.clone(),
                ..BpfCost::default()
            }
        );
    }
}
