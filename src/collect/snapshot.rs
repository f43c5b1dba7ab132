//! Turning two cumulative readings into the [`Snapshot`] of the interval
//! between them. Pure, so it is tested without BPF.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::abi::{netto_cpu, netto_event};
use crate::kernel::accounting::recursion_miss_is_loss;
use crate::kernel::stats::RunStats;
use crate::model::{CpuTime, EventKey, Losses, Overhead, ProgramCost, Snapshot, SoftirqVector};

/// Cumulative counters at one instant.
#[derive(Debug, Clone)]
pub struct Reading {
    pub at: Instant,
    pub wall: SystemTime,
    /// Index = CPU.
    pub cpus: Vec<netto_cpu>,
    /// Every attached program, whether or not run-time statistics are on.
    pub programs: Vec<(String, RunStats)>,
    pub process_cpu_ns: u64,
}

/// What does not change between intervals.
#[derive(Debug, Clone)]
pub struct Context {
    pub backend: String,
    /// Index = callback slot in `netto_cpu.callback_ns`.
    pub callback_names: Vec<&'static str>,
    pub bpf_stats: bool,
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

pub fn build(prev: &Reading, cur: &Reading, ctx: &Context) -> Snapshot {
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
            let t = time(|c, i| c.softirq_ns[i], |c, i| c.softirq_count[i], i);
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

    let hardirq = time(|c, _| c.hardirq_ns, |c, _| c.hardirq_count, 0);
    Snapshot {
        ts: cur
            .wall
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        interval_s: cur.at.duration_since(prev.at).as_secs_f64(),
        backend: ctx.backend.clone(),
        cpus: cur.cpus.len(),
        events,
        softirq,
        hardirq,
        net_timer_callbacks,
        overhead: overhead(prev, cur, ctx.bpf_stats),
        sampling: None,
        breakdown: Vec::new(),
        stacks: Vec::new(),
        modules: BTreeMap::new(),
        sketch: None,
        losses: Losses {
            task_storage_failures: pairs
                .iter()
                .map(|(p, c)| {
                    c.task_storage_failures
                        .saturating_sub(p.task_storage_failures)
                })
                .sum(),
            recursion_misses: program_deltas(prev, cur)
                .filter(|(name, _)| recursion_miss_is_loss(name))
                .map(|(_, delta)| delta.recursion_misses)
                .sum(),
            dropped_halves: 0,
            attribution_misses: pairs
                .iter()
                .map(|(p, c)| c.attr.misses.saturating_sub(p.attr.misses))
                .sum(),
        },
        attribution: None,
    }
}

/// Each program of `cur` with what it counted since `prev` (everything,
/// for a program `prev` did not have).
fn program_deltas<'a>(
    prev: &'a Reading,
    cur: &'a Reading,
) -> impl Iterator<Item = (&'a str, RunStats)> + 'a {
    cur.programs.iter().map(|(name, now)| {
        let before = prev
            .programs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .unwrap_or_default();
        let delta = RunStats {
            run_count: now.run_count.saturating_sub(before.run_count),
            run_time_ns: now.run_time_ns.saturating_sub(before.run_time_ns),
            recursion_misses: now.recursion_misses.saturating_sub(before.recursion_misses),
        };
        (name.as_str(), delta)
    })
}

fn overhead(prev: &Reading, cur: &Reading, bpf_stats: bool) -> Overhead {
    let programs: Vec<ProgramCost> = if bpf_stats {
        program_deltas(prev, cur)
            .map(|(name, delta)| ProgramCost {
                name: name.to_owned(),
                run_count: delta.run_count,
                run_time_ns: delta.run_time_ns,
            })
            .collect()
    } else {
        Vec::new()
    };
    Overhead {
        process_cpu_ns: cur.process_cpu_ns.saturating_sub(prev.process_cpu_ns),
        bpf_stats,
        bpf_run_time_ns: programs.iter().map(|p| p.run_time_ns).sum(),
        programs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
            wall: UNIX_EPOCH + Duration::from_secs(100),
            cpus: vec![
                cpu(|c| c.event_ns[3] = 100),
                cpu(|c| c.softirq_ns[3] = 1000),
            ],
            programs: vec![(
                "netto_softirq_entry".into(),
                RunStats {
                    run_count: 10,
                    run_time_ns: 1000,
                    recursion_misses: 0,
                },
            )],
            process_cpu_ns: 5_000,
        };
        let cur = Reading {
            at: t0 + Duration::from_millis(500),
            wall: UNIX_EPOCH + Duration::from_secs(101),
            cpus: vec![
                cpu(|c| {
                    c.event_ns[3] = 400;
                    c.event_count[3] = 2;
                    c.callback_ns[1] = 70;
                }),
                cpu(|c| {
                    c.softirq_ns[3] = 1600;
                    c.softirq_count[3] = 4;
                    c.event_ns[0] = 600;
                }),
            ],
            programs: vec![(
                "netto_softirq_entry".into(),
                RunStats {
                    run_count: 30,
                    run_time_ns: 5000,
                    recursion_misses: 0,
                },
            )],
            process_cpu_ns: 8_000,
        };
        let ctx = Context {
            backend: "tracepoint".into(),
            callback_names: vec!["tcp_pace_kick", "tcp_write_timer"],
            bpf_stats: true,
        };
        let snap = build(&prev, &cur, &ctx);

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
        assert_eq!(snap.overhead.process_cpu_ns, 3_000);
        assert_eq!(snap.overhead.bpf_run_time_ns, 4000);
        assert_eq!(snap.overhead.programs[0].run_count, 20);
        assert!(!snap.losses.any());
    }

    fn reading(cpus: Vec<netto_cpu>, programs: &[(&str, u64)]) -> Reading {
        Reading {
            at: Instant::now(),
            wall: UNIX_EPOCH,
            cpus,
            programs: programs
                .iter()
                .map(|&(name, misses)| {
                    let stats = RunStats {
                        recursion_misses: misses,
                        ..RunStats::default()
                    };
                    (name.to_owned(), stats)
                })
                .collect(),
            process_cpu_ns: 0,
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
        };
        let snap = build(&prev, &cur, &ctx);
        assert_eq!(
            snap.losses,
            Losses {
                task_storage_failures: 2 + 3,
                recursion_misses: 1 + 4,
                dropped_halves: 0,
                attribution_misses: 0,
            }
        );
        assert!(snap.overhead.programs.is_empty());
        // Nothing new: nothing lost.
        assert!(!build(&cur, &cur, &ctx).losses.any());
    }
}
