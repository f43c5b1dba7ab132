//! Turning two cumulative readings into the [`Snapshot`] of the interval
//! between them. Pure, so it is tested without BPF.

use std::collections::BTreeMap;
use std::time::Instant;

use super::cost::{BpfCost, HookRuns};
use super::cpu_time::OwnCpu;
use crate::abi::{netto_cpu, netto_event, netto_hook};
use crate::kernel::accounting::recursion_miss_is_loss;
use crate::kernel::dispatch::Dispatch;
use crate::kernel::hooks::{Hook, HOOKS};
use crate::kernel::stats::{ProgramRun, RunStats};
use crate::model::{
    percent, CpuTime, EventKey, Losses, Overhead, SchemaVersion, Snapshot, SoftirqVector, Tier,
};

/// Cumulative counters at one instant.
#[derive(Debug, Clone)]
pub struct Reading {
    pub at: Instant,
    /// When, in unix seconds ([`super::clock`]: never before the previous
    /// reading's).
    pub ts: f64,
    /// Index = CPU.
    pub cpus: Vec<netto_cpu>,
    /// Every attached program, whether or not run-time statistics are on.
    pub programs: Vec<ProgramRun>,
    /// CPU time of netto's own processes so far.
    pub process_cpu: OwnCpu,
}

/// What does not change between intervals.
#[derive(Debug, Clone)]
pub struct Context {
    pub backend: String,
    /// Index = callback slot in `netto_cpu.callback_ns`.
    pub callback_names: Vec<&'static str>,
    pub bpf_stats: bool,
    /// Entering one program, as measured at start-up; `None`: not priced.
    pub dispatch: Option<Dispatch>,
}

/// Key in `net_timer_callbacks` for the share of timer-softirq time spent
/// around network callbacks rather than in them (see bpf/netto.h).
pub const TIMER_SOFTIRQ_OVERHEAD: &str = "timer_softirq_overhead";

/// ABI event id of each model event: the one place the two meet.
pub const EVENT_IDS: [(EventKey, netto_event); 5] = [
    (EventKey::NetRxSoftirq, netto_event::NETTO_EV_NET_RX_SOFTIRQ),
    (EventKey::NetTxSoftirq, netto_event::NETTO_EV_NET_TX_SOFTIRQ),
    (EventKey::SockSend, netto_event::NETTO_EV_SOCK_SEND),
    (EventKey::SockRecv, netto_event::NETTO_EV_SOCK_RECV),
    (EventKey::NetTimers, netto_event::NETTO_EV_NET_TIMERS),
];

/// What netto's own programs ran between the readings, by hook: exact run
/// counts from the per-CPU records, and what run-time statistics measured.
pub fn hook_runs(prev: &Reading, cur: &Reading) -> Vec<HookRuns> {
    let deltas: Vec<(&ProgramRun, RunStats)> = program_deltas(prev, cur).collect();
    HOOKS
        .iter()
        .map(|hook| HookRuns {
            hook: hook.name,
            runs: program_runs(prev, cur, hook),
            programs: deltas
                .iter()
                .filter(|(program, _)| program.hook == hook.name)
                .map(|(program, delta)| (program.name.clone(), *delta))
                .collect(),
        })
        .collect()
}

/// Runs of `hook`'s programs between the readings: its counter times the
/// programs that run per count.
fn program_runs(prev: &Reading, cur: &Reading, hook: &Hook) -> u64 {
    let i = hook.id as usize;
    let counted: u64 = prev
        .cpus
        .iter()
        .zip(&cur.cpus)
        .map(|(p, c)| c.hook_runs[i].saturating_sub(p.hook_runs[i]))
        .sum();
    counted * u64::from(hook.runs_per_count)
}

/// The interval's snapshot; `bpf` is what netto's BPF programs cost in it
/// when measured (`collect::cost`), `stats_held_s` how long statistics
/// were on for it.
pub fn build(
    prev: &Reading,
    cur: &Reading,
    ctx: &Context,
    bpf: Option<BpfCost>,
    stats_held_s: f64,
) -> Snapshot {
    let pairs: Vec<(&netto_cpu, &netto_cpu)> = prev.cpus.iter().zip(&cur.cpus).collect();
    let time = |ns: fn(&netto_cpu, usize) -> u64, count: fn(&netto_cpu, usize) -> u64, i: usize| {
        let per_cpu_ns: Vec<u64> = pairs
            .iter()
            .map(|(p, c)| ns(c, i).saturating_sub(ns(p, i)))
            .collect();
        CpuTime {
            total_ns: per_cpu_ns.iter().sum(),
            per_cpu_ns,
            count: pairs
                .iter()
                .map(|(p, c)| count(c, i).saturating_sub(count(p, i)))
                .sum(),
            ..CpuTime::default()
        }
    };

    let events = EVENT_IDS
        .iter()
        .map(|&(key, id)| {
            let t = time(|c, i| c.event_ns[i], |c, i| c.event_count[i], id as usize);
            (key, t)
        })
        .collect();
    let softirq = SoftirqVector::ALL
        .iter()
        .enumerate()
        .map(|(i, &vector)| {
            let t = time(
                |c, i| c.softirq_time[i].ns,
                |c, i| c.softirq_time[i].count,
                i,
            );
            (vector, t)
        })
        .collect();
    let mut net_timer_callbacks = BTreeMap::new();
    for (i, name) in ctx.callback_names.iter().enumerate() {
        let ns: u64 = pairs
            .iter()
            .map(|(p, c)| c.callback_ns[i].saturating_sub(p.callback_ns[i]))
            .sum();
        if ns > 0 {
            net_timer_callbacks.insert((*name).to_owned(), ns);
        }
    }
    let overhead_ns: u64 = pairs
        .iter()
        .map(|(p, c)| {
            c.callback_overhead_ns
                .saturating_sub(p.callback_overhead_ns)
        })
        .sum();
    if overhead_ns > 0 {
        net_timer_callbacks.insert(TIMER_SOFTIRQ_OVERHEAD.to_owned(), overhead_ns);
    }

    let hardirq = time(
        |c, _| c.hardirq_ns,
        |c, _| c.hook_runs[netto_hook::NETTO_HOOK_HARDIRQ as usize],
        0,
    );
    Snapshot {
        schema_version: SchemaVersion,
        ts: cur.ts,
        interval_s: cur.at.duration_since(prev.at).as_secs_f64(),
        backend: ctx.backend.clone(),
        // The collector sets the tier in force.
        tier: Tier::Exact,
        calibrating: None,
        cpus: cur.cpus.len(),
        events,
        softirq,
        hardirq,
        net_timer_callbacks,
        overhead: overhead(prev, cur, bpf, ctx.dispatch, stats_held_s),
        sampling: None,
        breakdown: Vec::new(),
        stacks: Vec::new(),
        modules: BTreeMap::new(),
        sketch: None,
        network_programs: None,
        losses: Losses {
            task_storage_failures: pairs
                .iter()
                .map(|(p, c)| {
                    c.task_storage_failures
                        .saturating_sub(p.task_storage_failures)
                })
                .sum(),
            recursion_misses: program_deltas(prev, cur)
                .filter(|(program, _)| recursion_miss_is_loss(&program.name))
                .map(|(_, delta)| delta.recursion_misses)
                .sum(),
            dropped_halves: 0,
            attribution_misses: pairs
                .iter()
                .map(|(p, c)| c.attr.misses.saturating_sub(p.attr.misses))
                .sum(),
            ..Losses::default()
        },
        attribution: None,
        budget: None,
    }
}

/// Each program of `cur` with what it counted since `prev` (everything,
/// for a program `prev` did not have; nothing, for one replaced by a new
/// program of the same name since, whose counts started again).
fn program_deltas<'a>(
    prev: &'a Reading,
    cur: &'a Reading,
) -> impl Iterator<Item = (&'a ProgramRun, RunStats)> + 'a {
    cur.programs.iter().map(|program| {
        let now = program.stats;
        let before = prev
            .programs
            .iter()
            .find(|p| p.name == program.name)
            .map(|p| p.stats)
            .unwrap_or_default();
        let delta = RunStats {
            run_count: now.run_count.saturating_sub(before.run_count),
            run_time_ns: now.run_time_ns.saturating_sub(before.run_time_ns),
            recursion_misses: now.recursion_misses.saturating_sub(before.recursion_misses),
        };
        (program, delta)
    })
}

fn overhead(
    prev: &Reading,
    cur: &Reading,
    bpf: Option<BpfCost>,
    dispatch: Option<Dispatch>,
    stats_held_s: f64,
) -> Overhead {
    let measuring_ns = cur
        .process_cpu
        .measuring_ns
        .saturating_sub(prev.process_cpu.measuring_ns);
    let serving_cpu_ns = cur
        .process_cpu
        .serving_ns
        .saturating_sub(prev.process_cpu.serving_ns);
    let export_cpu_ns = cur
        .process_cpu
        .export_ns
        .saturating_sub(prev.process_cpu.export_ns);
    let process_cpu_ns = measuring_ns + serving_cpu_ns + export_cpu_ns;
    let interval_s = cur.at.duration_since(prev.at).as_secs_f64();
    let bpf_stats = bpf.is_some();
    let bpf = bpf.unwrap_or_default();
    let runs = dispatched_runs(prev, cur) as f64;
    let dispatch_run_time_ns = dispatch.map_or(0, |d| (d.ns * runs).round() as u64);
    let dispatch_error_ns = dispatch.map_or(0.0, |d| d.error_ns * runs);
    let error_ns = (bpf.error_ns as f64).hypot(dispatch_error_ns);
    // What measuring costs: the measuring process, every BPF program it
    // runs and the hooks' dispatch into them. Serving is not measuring.
    let measuring_total_ns = measuring_ns + bpf.run_time_ns + dispatch_run_time_ns;
    Overhead {
        process_cpu_ns,
        serving_cpu_ns,
        export_cpu_ns,
        bpf_stats,
        bpf_stats_held_s: stats_held_s,
        bpf_run_time_ns: bpf.run_time_ns,
        bpf_error_ns: bpf.error_ns,
        cost_percent: Some(percent(
            process_cpu_ns + bpf.run_time_ns + dispatch_run_time_ns,
            interval_s,
        )),
        measuring_percent: Some(percent(measuring_total_ns, interval_s)),
        serving_percent: Some(percent(serving_cpu_ns, interval_s)),
        export_percent: Some(percent(export_cpu_ns, interval_s)),
        // The serving process, which pushes, says.
        otlp: None,
        estimated: bpf.estimated,
        error_percent: percent(error_ns.round() as u64, interval_s),
        programs: bpf.programs,
        startup_cpu_ns: 0,
        dispatch_ns: dispatch.map(|d| d.ns),
        dispatch_error_ns: dispatch.map_or(0.0, |d| d.error_ns),
        dispatch_run_time_ns,
    }
}

/// Runs of netto's tracepoint programs between the readings, each entered
/// through the dispatch start-up priced (the sampler's perf event is
/// entered another way, from its interrupt).
fn dispatched_runs(prev: &Reading, cur: &Reading) -> u64 {
    HOOKS
        .iter()
        .filter(|hook| hook.id != netto_hook::NETTO_HOOK_SAMPLE)
        .map(|hook| program_runs(prev, cur, hook))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::collect::cost;

    fn softirq_entry(run_count: u64, run_time_ns: u64) -> ProgramRun {
        ProgramRun {
            name: "netto_softirq_entry".into(),
            hook: "softirq",
            stats: RunStats {
                run_count,
                run_time_ns,
                recursion_misses: 0,
            },
        }
    }

    fn cpu(f: impl FnOnce(&mut netto_cpu)) -> netto_cpu {
        let mut c = netto_cpu::default();
        f(&mut c);
        c
    }

    #[test]
    fn deltas_per_cpu_events_softirqs_callbacks_and_overhead() {
        let t0 = Instant::now();
        let prev = Reading {
            at: t0,
            ts: 100.0,
            cpus: vec![
                cpu(|c| c.event_ns[3] = 100),
                cpu(|c| c.softirq_time[3].ns = 1000),
            ],
            programs: vec![softirq_entry(10, 1000)],
            process_cpu: OwnCpu {
                measuring_ns: 4_000,
                serving_ns: 1_000,
                export_ns: 100,
            },
        };
        let cur = Reading {
            at: t0 + Duration::from_millis(500),
            ts: 101.0,
            cpus: vec![
                cpu(|c| {
                    c.event_ns[3] = 400;
                    c.event_count[3] = 2;
                    c.callback_ns[1] = 70;
                    c.hook_runs[0] = 10;
                }),
                cpu(|c| {
                    c.softirq_time[3].ns = 1600;
                    c.softirq_time[3].count = 4;
                    c.event_ns[0] = 600;
                }),
            ],
            programs: vec![softirq_entry(30, 5000)],
            process_cpu: OwnCpu {
                measuring_ns: 6_000,
                serving_ns: 2_000,
                export_ns: 600,
            },
        };
        let ctx = Context {
            backend: "tracepoint".into(),
            callback_names: vec!["tcp_pace_kick", "tcp_write_timer"],
            bpf_stats: true,
            dispatch: None,
        };
        let hooks = hook_runs(&prev, &cur);
        // 10 softirq runs: 20 program runs, entry's 20 all measured.
        assert_eq!(hooks[0].hook, "softirq");
        assert_eq!(hooks[0].runs, 20);
        let bpf = cost::estimate(&hooks, &mut cost::CostHistory::default());
        let snap = build(&prev, &cur, &ctx, Some(bpf), 0.5);

        assert_eq!(snap.ts, 101.0);
        assert!((snap.interval_s - 0.5).abs() < 1e-9);
        assert_eq!(snap.cpus, 2);
        let recv = snap.event(EventKey::SockRecv);
        assert_eq!(recv.per_cpu_ns, vec![300, 0]);
        assert_eq!(recv.total_ns, 300);
        assert_eq!(recv.count, 2);
        assert_eq!(snap.event(EventKey::NetRxSoftirq).per_cpu_ns, vec![0, 600]);
        let net_rx = &snap.softirq[&SoftirqVector::NetRx];
        assert_eq!((net_rx.total_ns, net_rx.count), (600, 4));
        assert_eq!(snap.softirq_total_ns(), 600);
        assert_eq!(
            snap.net_timer_callbacks,
            BTreeMap::from([("tcp_write_timer".to_owned(), 70)])
        );
        assert_eq!(snap.overhead.process_cpu_ns, 3_500);
        assert_eq!(snap.overhead.bpf_run_time_ns, 4000);
        assert!(!snap.overhead.estimated);
        let cost = snap.overhead.cost_percent.unwrap();
        assert!((cost - 7500.0 / 5e8 * 100.0).abs() < 1e-9, "{cost}");
        // Serving (the HTTP process's 1000 ns) and exporting (its
        // exporter thread's 500) are netto's cost, but not measuring's:
        // the budget sees 2000 + 4000 ns.
        assert_eq!(snap.overhead.serving_cpu_ns, 1_000);
        assert_eq!(snap.overhead.export_cpu_ns, 500);
        let export = snap.overhead.export_percent.unwrap();
        assert!((export - 500.0 / 5e8 * 100.0).abs() < 1e-9, "{export}");
        let measuring = snap.overhead.measuring_percent.unwrap();
        assert!(
            (measuring - 6000.0 / 5e8 * 100.0).abs() < 1e-9,
            "{measuring}"
        );
        let serving = snap.overhead.serving_percent.unwrap();
        assert!((serving - 1000.0 / 5e8 * 100.0).abs() < 1e-9, "{serving}");
        assert_eq!(snap.overhead.budgeted_percent(), Some(measuring));
        assert_eq!(snap.overhead.programs[0].run_count, 20);
        assert!(!snap.losses.any());
        assert_eq!(snap.overhead.dispatch_ns, None);
        assert_eq!(snap.overhead.dispatch_run_time_ns, 0);
    }

    #[test]
    fn every_tracepoint_run_pays_dispatch_and_the_sampler_does_not() {
        let t0 = Instant::now();
        let at = |ms, f: fn(&mut netto_cpu)| Reading {
            at: t0 + Duration::from_millis(ms),
            ts: 0.0,
            cpus: vec![cpu(f)],
            programs: Vec::new(),
            process_cpu: OwnCpu::default(),
        };
        let prev = at(0, |_| {});
        // 100 softirqs (200 runs), 50 system calls (100 runs), 30 samples.
        let cur = at(1000, |c| {
            c.hook_runs[netto_hook::NETTO_HOOK_SOFTIRQ as usize] = 100;
            c.hook_runs[netto_hook::NETTO_HOOK_WINDOW as usize] = 50;
            c.hook_runs[netto_hook::NETTO_HOOK_SAMPLE as usize] = 30;
        });
        let ctx = Context {
            backend: "tracepoint".into(),
            callback_names: vec![],
            bpf_stats: false,
            dispatch: Some(Dispatch {
                ns: 40.0,
                error_ns: 2.0,
            }),
        };
        let overhead = build(&prev, &cur, &ctx, None, 0.0).overhead;
        assert_eq!(overhead.dispatch_ns, Some(40.0));
        assert_eq!(overhead.dispatch_run_time_ns, 300 * 40);
        // Without statistics the programs are not priced, dispatch is.
        let cost = overhead.cost_percent.unwrap();
        assert!((cost - 12_000.0 / 1e9 * 100.0).abs() < 1e-9, "{cost}");
        assert!((overhead.error_percent - 600.0 / 1e9 * 100.0).abs() < 1e-9);
    }

    fn reading(cpus: Vec<netto_cpu>, programs: &[(&str, u64)]) -> Reading {
        Reading {
            at: Instant::now(),
            ts: 0.0,
            cpus,
            programs: programs
                .iter()
                .map(|&(name, misses)| {
                    let stats = RunStats {
                        recursion_misses: misses,
                        ..RunStats::default()
                    };
                    ProgramRun {
                        name: name.to_owned(),
                        hook: "",
                        stats,
                    }
                })
                .collect(),
            process_cpu: OwnCpu::default(),
        }
    }

    #[test]
    fn losses_are_interval_deltas_summed_over_cpus_and_programs() {
        let prev = reading(
            vec![
                cpu(|c| c.task_storage_failures = 5),
                cpu(|c| c.task_storage_failures = 1),
            ],
            &[
                ("netto_sched_switch", 2),
                ("netto_softirq_entry", 0),
                ("netto_hrtimer_entry", 10),
            ],
        );
        let cur = reading(
            vec![
                cpu(|c| c.task_storage_failures = 7),
                cpu(|c| c.task_storage_failures = 4),
            ],
            &[
                ("netto_sched_switch", 3),
                ("netto_softirq_entry", 0),
                // Nested only in hardirq, where it does nothing: no loss.
                ("netto_hrtimer_entry", 99),
                // Attached since `prev` (a backend's late program): all
                // of its misses fall in this interval.
                ("netto_sys_enter", 4),
            ],
        );
        // Without run-time statistics: misses are counted anyway, costs not.
        let ctx = Context {
            backend: "tracepoint".into(),
            callback_names: vec![],
            bpf_stats: false,
            dispatch: None,
        };
        let snap = build(&prev, &cur, &ctx, None, 0.0);
        assert_eq!(
            snap.losses,
            Losses {
                task_storage_failures: 2 + 3,
                recursion_misses: 1 + 4,
                dropped_halves: 0,
                attribution_misses: 0,
                ..Losses::default()
            }
        );
        assert!(snap.overhead.programs.is_empty());
        assert!(!snap.overhead.bpf_stats);
        // Nothing new: nothing lost.
        assert!(!build(&cur, &cur, &ctx, None, 0.0).losses.any());
    }
}
