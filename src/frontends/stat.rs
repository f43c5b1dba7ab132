//! `netto stat` output: a readable table per interval, one line per
//! interval (`--brief`, like vmstat), or one JSON object per interval and
//! line. The text forms explain each word once, below its first use.

use std::fmt::Write as _;
use std::io::{self, Write};

use std::collections::BTreeMap;

use super::calibration_text::calibration as calibration_text;
use super::glossary::{self, Legend};
use super::label::printable;
use super::local_time::time_of_day;
use super::rounding::with_error;
use crate::collect::snapshot::TIMER_SOFTIRQ_OVERHEAD;
use crate::model::{
    percent, Attribution, CpuTime, EventKey, Losses, Snapshot, SoftirqVector, Traffic,
};

mod brief;
pub use brief::Brief;

/// Per-CPU columns are shown up to this many CPUs, and on a terminal only
/// where they fit its width; beyond, the JSON carries them.
const MAX_CPU_COLUMNS: usize = 16;

/// One JSON object and a newline, flushed: the line-per-interval form of
/// every live command.
pub fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The table form: one table per interval, the words explained once in
/// the run.
#[derive(Debug, Default)]
pub struct Table {
    legend: Legend,
    /// The terminal's width, when printing to one: a table wider than it
    /// would wrap every row, so per-CPU columns are left out there.
    width: Option<usize>,
    /// The run has been told why per-CPU columns are left out.
    told_why_no_cpus: bool,
}

impl Table {
    /// The tables from now on are for a terminal `width` columns wide;
    /// `None` when not printing to a terminal (a pipe or a file takes any
    /// width). Asked before each table: a terminal can be resized.
    pub fn fit_to(&mut self, width: Option<usize>) {
        self.width = width;
    }

    pub fn write(&mut self, out: &mut impl Write, snapshot: &Snapshot) -> io::Result<()> {
        out.write_all(self.render(snapshot).as_bytes())?;
        if let Some(sketch) = &snapshot.sketch {
            let table = super::sketch::render_table(
                sketch,
                snapshot.attribution.as_ref(),
                &mut self.legend,
            );
            out.write_all(table.as_bytes())?;
        }
        if let Some(programs) = &snapshot.network_programs {
            let table = super::network_programs::render_table(
                programs,
                snapshot.interval_s,
                &mut self.legend,
            );
            out.write_all(table.as_bytes())?;
        }
        out.flush()
    }

    pub fn render(&mut self, s: &Snapshot) -> String {
        let why_not = why_no_cpu_columns(s, self.width);
        let mut text = render_table(s, why_not.is_none(), &mut self.legend);
        if let Some(why) = why_not.filter(|_| !self.told_why_no_cpus) {
            let _ = writeln!(text, "{why}");
            self.told_why_no_cpus = true;
        }
        text
    }
}

/// Why a table of `s` leaves its per-CPU columns out, if it does: too many
/// CPUs, or too many for the terminal's `width`.
fn why_no_cpu_columns(s: &Snapshot, width: Option<usize>) -> Option<String> {
    if s.cpus > MAX_CPU_COLUMNS {
        return Some(format!(
            "per-CPU columns are shown up to {MAX_CPU_COLUMNS} CPUs; --json has each CPU's"
        ));
    }
    let needed = heading("EVENT", s, true).chars().count();
    match width {
        Some(width) if needed > width => Some(format!(
            "per-CPU columns left out: {} CPUs need {needed} columns, the terminal has {width} \
             (a wider one shows them; --json has each CPU's)",
            s.cpus
        )),
        _ => None,
    }
}

/// The heading of the column of shares: explained once as
/// [`glossary::PERCENT_OF_ONE_CPU`].
const ONE_CPU: &str = "% 1 CPU";

/// Milliseconds, to the microsecond.
fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// An event's time as the table writes it: exact to the microsecond and
/// its share of one CPU to 0.01, an estimate `~`-marked and both to its
/// error's precision (its per-CPU parts too, to that of the whole, which
/// bounds theirs).
struct Written {
    ms: String,
    percent: String,
    per_cpu: Vec<String>,
    error_ms: Option<String>,
}

fn written(t: &CpuTime, interval_s: f64) -> Written {
    let share = t.percent_of_cpu(interval_s);
    match t.error_ns.filter(|_| t.estimated) {
        Some(error_ns) => {
            let (ms, error_ms) = with_error(t.total_ns as f64 / 1e6, error_ns as f64 / 1e6, 3);
            let (percent, _) = with_error(share, percent(error_ns, interval_s), 2);
            let per_cpu = t
                .per_cpu_ns
                .iter()
                .map(|&ns| {
                    format!(
                        "~{}",
                        with_error(ns as f64 / 1e6, error_ns as f64 / 1e6, 3).0
                    )
                })
                .collect();
            Written {
                ms: format!("~{ms}"),
                percent: format!("~{percent}"),
                per_cpu,
                error_ms: Some(error_ms),
            }
        }
        None => {
            let mark = if t.estimated { "~" } else { "" };
            Written {
                ms: format!("{mark}{}", ms(t.total_ns)),
                percent: format!("{mark}{share:.2}"),
                per_cpu: t
                    .per_cpu_ns
                    .iter()
                    .map(|&ns| format!("{mark}{}", ms(ns)))
                    .collect(),
                error_ms: None,
            }
        }
    }
}

/// One event's or vector's row; an estimate's total is marked `~`, has no
/// count, and ends with its error, its calibration where the run has one
/// ([`crate::model::Calibration`]) and, where that corrected it, the
/// estimate before.
fn row(text: &mut String, name: &str, t: &CpuTime, s: &Snapshot, per_cpu: bool) {
    let w = written(t, s.interval_s);
    let count = if t.estimated {
        "-".to_owned()
    } else {
        t.count.to_string()
    };
    let _ = write!(text, "{name:<16} {:>11} {:>8} {count:>10}", w.ms, w.percent);
    if per_cpu {
        for value in &w.per_cpu {
            let _ = write!(text, " {value:>9}");
        }
    }
    if let Some(error_ms) = w.error_ms {
        let _ = write!(text, "  estimated, +-{error_ms} ms");
    }
    if let Some(c) = t.calibration.filter(|_| t.estimated) {
        let _ = write!(text, ", {}", calibration_text(&c, s.ts));
    }
    if let (Some(raw_ns), Some(error_ns)) = (t.raw_ns, t.error_ns) {
        let (raw_ms, _) = with_error(raw_ns as f64 / 1e6, error_ns as f64 / 1e6, 3);
        let _ = write!(text, ", raw ~{raw_ms} ms");
    }
    text.push('\n');
}

/// A section's heading row: `first` over the names, then the columns.
fn heading(first: &str, s: &Snapshot, per_cpu: bool) -> String {
    let mut header = format!(
        "{first:<16} {:>11} {ONE_CPU:>8} {:>10}",
        "TOTAL ms", "COUNT"
    );
    if per_cpu {
        for cpu in 0..s.cpus {
            let _ = write!(header, " {:>9}", format!("cpu{cpu} ms"));
        }
    }
    header
}

/// Whether any of the events is estimated.
fn any_estimate(s: &Snapshot) -> bool {
    s.events.values().any(|t| t.estimated)
}

fn render_table(s: &Snapshot, per_cpu: bool, legend: &mut Legend) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "interval {:.3} s ending {}, backend {}, tier {}{}",
        s.interval_s,
        time_of_day(s.ts, 3),
        s.backend,
        s.tier.name(),
        s.calibrating.map_or(String::new(), |back| format!(
            " (calibration interval: the run is in {})",
            back.name()
        ))
    );
    let _ = writeln!(text, "{}", heading("EVENT", s, per_cpu));
    legend.explain(&mut text, ONE_CPU, glossary::PERCENT_OF_ONE_CPU.meaning);
    for key in EventKey::ALL {
        if let Some(t) = s.events.get(&key) {
            row(&mut text, key.name(), t, s, per_cpu);
        }
    }
    if any_estimate(s) {
        legend.explain_word(&mut text, glossary::ESTIMATE);
    }
    if s.events
        .values()
        .any(|t| t.estimated && t.calibration.is_some())
    {
        legend.explain_word(&mut text, glossary::CALIBRATION);
    }
    if s.softirq.is_empty() {
        let _ = writeln!(
            text,
            "softirq vectors and hardirq time: not measured in the {} tier",
            s.tier.name()
        );
    } else {
        let _ = writeln!(text, "{}", heading("SOFTIRQ", s, per_cpu));
        for vector in SoftirqVector::ALL {
            if let Some(t) = s.softirq.get(&vector) {
                row(&mut text, vector.name(), t, s, per_cpu);
            }
        }
        // Interrupt handlers are no softirq: a section of their own.
        let _ = writeln!(text, "{}", heading("HARDIRQ", s, per_cpu));
        row(&mut text, "all handlers", &s.hardirq, s, per_cpu);
    }
    timer_callbacks(&mut text, s, legend);
    if let Some(attribution) = &s.attribution {
        who_pays(&mut text, attribution, s.interval_s);
    }
    netto_cost(&mut text, s);
    if let Some(b) = &s.budget {
        let state = match (b.over, b.at_floor, s.calibrating.is_some()) {
            (true, _, true) => "over in this calibration interval, not judged",
            (true, true, false) => "over, every knob at its floor",
            (true, false, false) => "over",
            (false, _, _) => "kept",
        };
        let _ = writeln!(
            text,
            "netto budget: {} % of one CPU, {state} ({} steps down, {} up)",
            b.percent, b.steps_down, b.steps_up
        );
    }
    losses(&mut text, &s.losses, legend);
    text.push('\n');
    text
}

/// `net_timers` by callback, heaviest first with its share, and what the
/// timer softirq's own part is the first time it shows.
fn timer_callbacks(text: &mut String, s: &Snapshot, legend: &mut Legend) {
    if s.net_timer_callbacks.is_empty() {
        return;
    }
    let total: u64 = s.net_timer_callbacks.values().sum();
    let mut callbacks: Vec<(&String, &u64)> = s.net_timer_callbacks.iter().collect();
    callbacks.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let callbacks: Vec<String> = callbacks
        .iter()
        .map(|(name, &ns)| {
            format!(
                "{name} {} ms ({:.0}%)",
                ms(ns),
                ns as f64 * 100.0 / total.max(1) as f64
            )
        })
        .collect();
    let _ = writeln!(text, "net_timers by callback: {}", callbacks.join(", "));
    if s.net_timer_callbacks.contains_key(TIMER_SOFTIRQ_OVERHEAD) {
        legend.explain_word(text, glossary::TIMER_SOFTIRQ_OVERHEAD);
    }
}

/// netto's whole cost and its parts: an estimate to its error's precision.
fn netto_cost(text: &mut String, s: &Snapshot) {
    let o = &s.overhead;
    let _ = write!(text, "netto cost: ");
    if let Some(cost) = o.cost_percent {
        if o.estimated {
            let (cost, error) = with_error(cost, o.error_percent, 3);
            let _ = write!(text, "~{cost}% of one CPU (estimated, +-{error}%)");
        } else {
            let _ = write!(text, "{cost:.3}% of one CPU");
        }
        text.push_str(": ");
    }
    let _ = write!(
        text,
        "process {} ms ({:.3}%)",
        ms(o.process_cpu_ns),
        percent(o.process_cpu_ns, s.interval_s)
    );
    if o.bpf_stats {
        let runs: u64 = o.programs.iter().map(|p| p.run_count).sum();
        let bpf_ns = o.bpf_run_time_ns;
        let (bpf_ms, bpf_percent) = if o.estimated {
            let error_ns = o.bpf_error_ns as f64;
            let (value, _) = with_error(bpf_ns as f64 / 1e6, error_ns / 1e6, 3);
            let share = percent(bpf_ns, s.interval_s);
            let (share, _) = with_error(share, share * error_ns / bpf_ns.max(1) as f64, 3);
            (format!("~{value}"), format!("~{share}"))
        } else {
            (ms(bpf_ns), format!("{:.3}", percent(bpf_ns, s.interval_s)))
        };
        let _ = write!(
            text,
            ", BPF programs {bpf_ms} ms ({bpf_percent}%, {runs} runs, {:.0} ns/run, \
             priced from {:.2} s of BPF statistics)",
            if runs > 0 {
                bpf_ns as f64 / runs as f64
            } else {
                0.0
            },
            o.bpf_stats_held_s
        );
    } else {
        text.push_str(", BPF program statistics off (not in the cost)");
    }
    text.push('\n');
}

/// What netto lost, each kind explained the first time it shows.
fn losses(text: &mut String, losses: &Losses, legend: &mut Legend) {
    if !losses.any() {
        return;
    }
    let _ = writeln!(
        text,
        "netto lost: {}",
        losses.describe(|kind| kind.short).join(", ")
    );
    for kind in Losses::KINDS.iter().filter(|kind| (kind.count)(losses) > 0) {
        legend.explain(text, kind.short, kind.meaning);
    }
}

/// Room for a group's label in the table; the full name follows last.
const LABEL_WIDTH: usize = 24;

/// The attribution table: each group's time per event, then what no group
/// claimed; under `--by flow|port` each group's payload KiB in and out and
/// its cost per KiB too.
fn who_pays(text: &mut String, a: &Attribution, interval_s: f64) {
    if !a.on {
        let _ = writeln!(
            text,
            "by {}: attribution off in this interval, all time unattributed",
            a.by.name()
        );
        return;
    }
    let traffic = a.by.keys_conns();
    let _ = write!(
        text,
        "{:<LABEL_WIDTH$} {:>11} {ONE_CPU:>8}",
        format!("BY {}", a.by.name().to_uppercase()),
        "TOTAL ms",
    );
    for key in EventKey::ALL {
        let _ = write!(text, " {:>10}", short_event(key));
    }
    if traffic {
        let _ = write!(text, " {:>10} {:>10} {:>8}", "KiB in", "KiB out", "ns/KiB");
    }
    let _ = writeln!(text, "  {}", a.by.id_name().to_uppercase());
    let mut row =
        |label: &str, events: &BTreeMap<EventKey, u64>, t: Option<&Traffic>, name: &str| {
            let total: u64 = events.values().sum();
            let label: String = printable(label).chars().take(LABEL_WIDTH).collect();
            let _ = write!(
                text,
                "{label:<LABEL_WIDTH$} {:>11} {:>8.2}",
                ms(total),
                percent(total, interval_s)
            );
            for key in EventKey::ALL {
                let _ = write!(text, " {:>10}", ms(events.get(&key).copied().unwrap_or(0)));
            }
            if traffic {
                let (kib_in, kib_out, per_kib) = match t {
                    Some(t) => (
                        (t.bytes_in / 1024).to_string(),
                        (t.bytes_out / 1024).to_string(),
                        t.ns_per_kib.map_or("-".to_owned(), |n| n.to_string()),
                    ),
                    None => ("-".to_owned(), "-".to_owned(), "-".to_owned()),
                };
                let _ = write!(text, " {kib_in:>10} {kib_out:>10} {per_kib:>8}");
            }
            let _ = writeln!(text, "  {}", printable(name));
        };
    for group in &a.groups {
        row(
            &group.label,
            &group.events,
            group.traffic.as_ref(),
            &group.name,
        );
    }
    row("unattributed", &a.unattributed, None, "");
    if !a.unattributed_why.is_empty() {
        let why: Vec<String> = a
            .unattributed_why
            .iter()
            .map(|(why, &ns)| format!("{} {} ms", why.words(), ms(ns)))
            .collect();
        let _ = writeln!(text, "  unattributed: {}", why.join(", "));
    }
}

/// An event's column title in ms, short enough for five columns.
fn short_event(key: EventKey) -> &'static str {
    match key {
        EventKey::NetRxSoftirq => "net_rx ms",
        EventKey::NetTxSoftirq => "net_tx ms",
        EventKey::SockSend => "send ms",
        EventKey::SockRecv => "recv ms",
        EventKey::NetTimers => "timers ms",
    }
}

#[cfg(test)]
mod tests;
