//! The host's BPF programs on the network path, priced over an interval
//! from the same slice of BPF run-time statistics that prices netto's own
//! programs (`source::duty`).
//!
//! A foreign program counts no runs of its own outside the statistics, so
//! each program's counters are read just before the slice turns them on
//! and just after it turns them off: what they gained is what the program
//! did in the slice, scaled to the interval (an estimate that takes the
//! slice for the rest). When something else held statistics on meanwhile
//! (a `bpftop`, the sysctl), the interval's runs and run time are counted
//! whole: netto's own cost says so (its hooks' runs were all measured),
//! or the programs' counters gained between two slices at the slice's
//! rate.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::kernel::network_programs::{read_stats, Attachment, Discovery, Found};
use crate::kernel::stats::RunStats;
use crate::model::{AttachPoint, CpuTime, EventKey, NetworkProgram, NetworkPrograms, PriceBasis};

/// A gap's rate of runs, against the slice's, above which statistics are
/// taken to have been on between slices: a few runs in flight when they
/// are turned off land in the gap, a held-on statistic gives it the
/// slice's rate.
const HELD_ELSEWHERE: f64 = 0.5;

/// Which network event a hook runs in, mostly (see
/// [`NetworkProgram::share_percent`] for why it is an estimate); `None`:
/// in none of netto's events, or either of two.
const EVENT_OF_HOOK: &[(&str, EventKey)] = &[
    ("xdp", EventKey::NetRxSoftirq),
    ("tc_ingress", EventKey::NetRxSoftirq),
    ("tc_egress", EventKey::NetTxSoftirq),
    // At delivery to the socket, in the receive path's softirq.
    ("cgroup_skb_ingress", EventKey::NetRxSoftirq),
    // From ip_finish_output, in the sending call.
    ("cgroup_skb_egress", EventKey::SockSend),
    ("cgroup_sendmsg4", EventKey::SockSend),
    ("cgroup_sendmsg6", EventKey::SockSend),
    ("cgroup_recvmsg4", EventKey::SockRecv),
    ("cgroup_recvmsg6", EventKey::SockRecv),
    ("sk_msg", EventKey::SockSend),
    ("sk_skb_parser", EventKey::NetRxSoftirq),
    ("sk_skb_verdict", EventKey::NetRxSoftirq),
    ("sk_skb", EventKey::NetRxSoftirq),
    ("socket_filter", EventKey::NetRxSoftirq),
    ("flow_dissector", EventKey::NetRxSoftirq),
    ("sk_lookup", EventKey::NetRxSoftirq),
    ("sk_reuseport", EventKey::NetRxSoftirq),
    ("lwt_in", EventKey::NetRxSoftirq),
    ("lwt_out", EventKey::SockSend),
    ("lwt_xmit", EventKey::SockSend),
];

/// Netfilter hooks by the event they run in.
const EVENT_OF_NETFILTER: &[(&str, EventKey)] = &[
    ("prerouting", EventKey::NetRxSoftirq),
    ("input", EventKey::NetRxSoftirq),
    ("forward", EventKey::NetRxSoftirq),
    ("output", EventKey::SockSend),
    ("postrouting", EventKey::SockSend),
];

fn event_of(hook: &str, iface: Option<&str>) -> Option<EventKey> {
    let (table, key) = if hook == "netfilter" {
        (EVENT_OF_NETFILTER, iface?)
    } else {
        (EVENT_OF_HOOK, hook)
    };
    table.iter().find(|(h, _)| *h == key).map(|&(_, e)| e)
}

/// One read of every program's counters, and when.
#[derive(Debug, Clone)]
struct Read {
    at: Instant,
    stats: BTreeMap<u32, RunStats>,
}

impl Read {
    fn now(ids: impl IntoIterator<Item = u32>) -> Read {
        Read {
            stats: read_stats(ids),
            at: Instant::now(),
        }
    }
}

/// The watch across intervals: discovery's state and the reads around the
/// slices.
#[derive(Debug, Default)]
pub struct ProgramWatch {
    discovery: Discovery,
    found: Vec<Found>,
    /// Before and after this interval's slice.
    before: Option<Read>,
    after: Option<Read>,
    /// After the previous interval's slice.
    previous: Option<Read>,
    held: Duration,
}

impl ProgramWatch {
    /// `own`: the ids of netto's own network programs.
    pub fn new(own: impl IntoIterator<Item = u32>) -> ProgramWatch {
        ProgramWatch {
            discovery: Discovery::new(own),
            ..ProgramWatch::default()
        }
    }

    /// Finds the programs on the network path and reads their counters:
    /// just before statistics go on.
    pub fn before_slice(&mut self) {
        self.found = self.discovery.discover();
        self.before = Some(Read::now(self.found.iter().map(|f| f.id)));
    }

    /// Reads the counters again, statistics having been on for `held`.
    pub fn after_slice(&mut self, held: Duration) {
        self.after = Some(Read::now(self.found.iter().map(|f| f.id)));
        self.held = held;
    }

    /// The interval's programs, priced when a slice was read in it (else
    /// found now and listed unpriced); `events`: the interval's, for each
    /// program's share; `held_throughout`: netto's own cost found
    /// statistics on for the whole interval.
    pub fn price(
        &mut self,
        interval_s: f64,
        events: &BTreeMap<EventKey, CpuTime>,
        held_throughout: bool,
    ) -> NetworkPrograms {
        let (before, after) = (self.before.take(), self.after.take());
        let previous = std::mem::replace(&mut self.previous, after.clone());
        let (Some(before), Some(after)) = (before, after) else {
            self.found = self.discovery.discover();
            return shown(list(&self.found, None, 0.0));
        };
        let held_s = self.held.as_secs_f64();
        let slice = deltas(&before.stats, &after.stats);
        let outside = previous.as_ref().map(|p| deltas(&p.stats, &before.stats));
        let whole = outside.is_some()
            && (held_throughout
                || outside
                    .as_ref()
                    .zip(previous.as_ref())
                    .is_some_and(|(outside, p)| {
                        let gap_s = before.at.duration_since(p.at).as_secs_f64();
                        held_elsewhere(outside, gap_s, &slice, held_s)
                    }));
        let counted: BTreeMap<u32, RunStats> = if whole {
            let outside = outside.unwrap_or_default();
            slice
                .iter()
                .map(|(&id, s)| (id, add(*s, outside.get(&id).copied().unwrap_or_default())))
                .collect()
        } else {
            slice
        };
        let scale = if whole || held_s <= 0.0 {
            1.0
        } else {
            interval_s / held_s
        };
        let basis = if whole {
            PriceBasis::WholeInterval
        } else {
            PriceBasis::Slice
        };
        let mut priced = list(&self.found, Some(basis), held_s);
        for program in &mut priced.programs {
            let Some(c) = counted.get(&program.id) else {
                continue;
            };
            program.runs = (c.run_count as f64 * scale).round() as u64;
            program.run_time_ns = (c.run_time_ns as f64 * scale).round() as u64;
            program.ns_per_run =
                (c.run_count > 0).then(|| c.run_time_ns as f64 / c.run_count as f64);
        }
        let mut priced = shown(priced);
        share(&mut priced, events);
        priced
    }
}

/// Each program's share of its event's time; again once a lower tier's
/// estimates have filled in the events.
pub fn share(programs: &mut NetworkPrograms, events: &BTreeMap<EventKey, CpuTime>) {
    for program in &mut programs.programs {
        program.share_percent = program
            .event
            .and_then(|e| events.get(&e))
            .filter(|t| t.total_ns > 0 && programs.basis.is_some())
            .map(|t| program.run_time_ns as f64 / t.total_ns as f64 * 100.0);
    }
}

/// A program found nowhere is listed when it ran (or is a socket filter,
/// which runs attached to sockets, where nothing can find it); one that
/// did not is only counted.
fn shown(mut programs: NetworkPrograms) -> NetworkPrograms {
    let (shown, hidden): (Vec<_>, Vec<_>) = programs
        .programs
        .into_iter()
        .partition(|p| !p.attach.is_empty() || p.runs > 0 || p.hook == "socket_filter");
    programs.programs = shown;
    programs.not_attached = hidden.len() as u32;
    programs
}

/// Whether statistics were on between two slices: the gap's runs came at
/// a rate like the slice's.
fn held_elsewhere(
    outside: &BTreeMap<u32, RunStats>,
    gap_s: f64,
    slice: &BTreeMap<u32, RunStats>,
    held_s: f64,
) -> bool {
    let runs = |m: &BTreeMap<u32, RunStats>| m.values().map(|s| s.run_count).sum::<u64>() as f64;
    let (gap_runs, slice_runs) = (runs(outside), runs(slice));
    if gap_runs == 0.0 || gap_s <= 0.0 {
        return false;
    }
    if slice_runs == 0.0 || held_s <= 0.0 {
        return true;
    }
    gap_runs / gap_s >= HELD_ELSEWHERE * slice_runs / held_s
}

fn deltas(from: &BTreeMap<u32, RunStats>, to: &BTreeMap<u32, RunStats>) -> BTreeMap<u32, RunStats> {
    to.iter()
        .filter_map(|(id, t)| {
            let f = from.get(id)?;
            Some((
                *id,
                RunStats {
                    run_count: t.run_count.saturating_sub(f.run_count),
                    run_time_ns: t.run_time_ns.saturating_sub(f.run_time_ns),
                    recursion_misses: t.recursion_misses.saturating_sub(f.recursion_misses),
                },
            ))
        })
        .collect()
}

fn add(a: RunStats, b: RunStats) -> RunStats {
    RunStats {
        run_count: a.run_count + b.run_count,
        run_time_ns: a.run_time_ns + b.run_time_ns,
        recursion_misses: a.recursion_misses + b.recursion_misses,
    }
}

/// The programs found, unpriced.
fn list(found: &[Found], basis: Option<PriceBasis>, held_s: f64) -> NetworkPrograms {
    NetworkPrograms {
        basis,
        stats_held_s: held_s,
        programs: found.iter().map(program).collect(),
        not_attached: 0,
    }
}

fn program(found: &Found) -> NetworkProgram {
    let first = found.attach.first();
    let hook = first.map_or(found.fallback_hook, |a| a.hook);
    NetworkProgram {
        id: found.id,
        name: found.name.clone(),
        tag: found.tag.clone(),
        prog_type: found.prog_type.to_owned(),
        own: found.own,
        attach: found.attach.iter().map(point).collect(),
        hook: hook.to_owned(),
        event: event_of(hook, first.and_then(|a| a.iface.as_deref())),
        ..NetworkProgram::default()
    }
}

fn point(a: &Attachment) -> AttachPoint {
    AttachPoint {
        hook: a.hook.to_owned(),
        iface: a.iface.clone(),
        mode: a.mode.map(str::to_owned),
        cgroup_id: a.cgroup_id,
        link: a.link,
    }
}

#[cfg(test)]
mod tests;
