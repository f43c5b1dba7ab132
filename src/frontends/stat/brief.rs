//! `netto stat --brief`: one line per interval, like vmstat.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::{any_estimate, glossary, written, Legend};
use crate::frontends::local_time::time_of_day;
use crate::frontends::rounding::with_error;
use crate::model::{percent, CpuTime, EventKey, Losses, Snapshot, Tier};

/// `--brief`: one line per interval, every event's share of one CPU, their
/// sum and netto's own cost, and a note where the interval is unusual; a
/// heading first and, on a terminal, again every [`Brief::REPEAT`] lines,
/// as vmstat does.
#[derive(Debug)]
pub struct Brief {
    legend: Legend,
    repeat_heading: bool,
    /// Places of seconds in the TIME column: as many as the interval
    /// asked for needs, the same on every line.
    places: usize,
    lines: usize,
}

impl Brief {
    /// Lines between headings on a terminal.
    pub const REPEAT: usize = 20;

    /// `repeat_heading`: whether to repeat the heading (on a terminal),
    /// rather than write it once (into a file or a pipe); `interval_s`:
    /// the interval asked for (a measured one runs a little over or
    /// under).
    pub fn new(repeat_heading: bool, interval_s: f64) -> Brief {
        Brief {
            legend: Legend::default(),
            repeat_heading,
            places: time_places(interval_s),
            lines: 0,
        }
    }

    pub fn write(&mut self, out: &mut impl Write, snapshot: &Snapshot) -> io::Result<()> {
        out.write_all(self.render(snapshot).as_bytes())?;
        out.flush()
    }

    pub fn render(&mut self, s: &Snapshot) -> String {
        let mut text = String::new();
        let due =
            self.lines == 0 || (self.repeat_heading && self.lines.is_multiple_of(Self::REPEAT));
        let places = self.places;
        if due {
            let _ = write!(
                text,
                "{:<width$}",
                "TIME",
                width = 8 + places + usize::from(places > 0)
            );
            for key in EventKey::ALL {
                let _ = write!(text, " {:>8}", short_name(key));
            }
            let _ = writeln!(text, " {:>8} {:>8}  NOTE", "total", "netto");
            self.legend.explain(
                &mut text,
                "% of one CPU",
                "every column but TIME and NOTE, 100 being one CPU busy for the whole interval; \
                 netto: its own cost",
            );
        }
        let _ = write!(text, "{}", time_of_day(s.ts, places));
        let mut total = 0u64;
        let mut total_error = 0f64;
        for key in EventKey::ALL {
            let t = s.event(key);
            total += t.total_ns;
            total_error += t
                .error_ns
                .filter(|_| t.estimated)
                .map_or(0.0, |e| (e as f64).powi(2));
            let _ = write!(text, " {:>8}", written(t, s.interval_s).percent);
        }
        let total = CpuTime {
            total_ns: total,
            estimated: any_estimate(s),
            error_ns: (total_error > 0.0).then(|| total_error.sqrt() as u64),
            ..CpuTime::default()
        };
        let _ = write!(text, " {:>8}", written(&total, s.interval_s).percent);
        let o = &s.overhead;
        let cost = o
            .cost_percent
            .unwrap_or_else(|| percent(o.process_cpu_ns + o.bpf_run_time_ns, s.interval_s));
        let cost = if o.estimated {
            format!("~{}", with_error(cost, o.error_percent, 2).0)
        } else {
            format!("{cost:.2}")
        };
        let _ = write!(text, " {cost:>8}");
        let notes = notes(s);
        if !notes.is_empty() {
            let _ = write!(text, "  {}", notes.join("; "));
        }
        text.push('\n');
        if any_estimate(s) {
            self.legend.explain_word(&mut text, glossary::ESTIMATE);
        }
        for kind in Losses::KINDS
            .iter()
            .filter(|kind| (kind.count)(&s.losses) > 0)
        {
            self.legend.explain(&mut text, kind.short, kind.meaning);
        }
        self.lines += 1;
        text
    }
}

/// Places of seconds the end of an interval of `interval_s` needs to tell
/// it from the one before.
fn time_places(interval_s: f64) -> usize {
    if interval_s >= 1.0 {
        0
    } else if interval_s >= 0.1 {
        1
    } else {
        2
    }
}

/// An event's column in `--brief`: short, so a line fits 80 columns.
fn short_name(key: EventKey) -> &'static str {
    match key {
        EventKey::NetRxSoftirq => "net_rx",
        EventKey::NetTxSoftirq => "net_tx",
        EventKey::SockSend => "send",
        EventKey::SockRecv => "recv",
        EventKey::NetTimers => "timers",
    }
}

/// What `--brief` says of an unusual interval: a tier that estimates, a
/// calibration interval, a budget beyond reach, losses.
fn notes(s: &Snapshot) -> Vec<String> {
    let mut notes = Vec::new();
    if s.tier != Tier::Exact {
        notes.push(format!("tier {}", s.tier.name()));
    }
    if let Some(back) = s.calibrating {
        notes.push(format!("calibrating ({})", back.name()));
    }
    if s.budget_exceeded() {
        notes.push("budget exceeded".to_owned());
    }
    if s.losses.any() {
        notes.push(format!(
            "lost {}",
            s.losses.describe(|kind| kind.short).join(", ")
        ));
    }
    notes
}
