//! The timers and interrupts panel, in the rows a wide screen has under
//! the events: `net_timers` by callback (mostly the timer softirq's own
//! work, on a virtual machine), then the interrupt time no event is
//! charged with, every vector as `stat` lists them, heaviest first.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::panel;
use crate::collect::snapshot::TIMER_SOFTIRQ_OVERHEAD;
use crate::frontends::tui::app::App;
use crate::frontends::tui::format;
use crate::model::{percent, Snapshot, SoftirqVector};

/// Room for `net_timers`, for `timer_softirq_overhead`, and for `100.0%`.
const PART_WIDTH: u16 = 10;
const NAME_WIDTH: u16 = 22;
const VALUE_WIDTH: u16 = 7;

/// What `timer_softirq_overhead` is, short enough for the panel; the help
/// has the whole line ([`crate::frontends::glossary::TIMER_SOFTIRQ_OVERHEAD`]).
const OVERHEAD_NOTE: &str = "its loop, timer re-arm";

/// One row: which part of the time, the name, its share of one CPU, and
/// a note.
struct Entry {
    part: &'static str,
    name: String,
    ns: u64,
    note: &'static str,
}

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let title = " net_timers by callback, interrupts: % of one CPU ".to_owned();
    let block = panel(app, None, title);
    let Some(snapshot) = app.latest() else {
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    let entries = entries(snapshot);
    let interval = snapshot.interval_s;
    let dim = Style::new().fg(Color::DarkGray);
    let rows = entries.iter().map(|l| {
        Row::new([
            Cell::from(l.part).style(dim),
            Cell::from(l.name.clone()),
            Cell::from(Line::from(format::percent(percent(l.ns, interval))).right_aligned()),
            Cell::from(l.note).style(dim),
        ])
    });
    let widths = [
        Constraint::Length(PART_WIDTH),
        Constraint::Length(NAME_WIDTH),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Fill(1),
    ];
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let table_area = if snapshot.softirq.is_empty() {
        let [table_area, note] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(inner);
        let why = format!(
            "softirq, hardirq: not measured in the {} tier",
            snapshot.tier.name()
        );
        frame.render_widget(Paragraph::new(why).style(dim), note);
        table_area
    } else {
        inner
    };
    frame.render_widget(Table::new(rows, widths), table_area);
}

/// The rows the panel fills for `snapshot`, borders included: the band it
/// shares with the chart grows no taller.
pub fn height(snapshot: &Snapshot) -> u16 {
    let footer = usize::from(snapshot.softirq.is_empty());
    u16::try_from(entries(snapshot).len() + footer + 2).unwrap_or(u16::MAX)
}

/// The panel's entries, most telling first: the timers' callbacks, then
/// hardirq and the softirq vectors that ran, each part heaviest first.
fn entries(s: &Snapshot) -> Vec<Entry> {
    let mut callbacks: Vec<Entry> = s
        .net_timer_callbacks
        .iter()
        .map(|(name, &ns)| Entry {
            part: "net_timers",
            name: name.clone(),
            ns,
            note: if name == TIMER_SOFTIRQ_OVERHEAD {
                OVERHEAD_NOTE
            } else {
                ""
            },
        })
        .collect();
    callbacks.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.name.cmp(&b.name)));
    let mut entries = callbacks;
    if s.softirq.is_empty() {
        return entries;
    }
    entries.push(Entry {
        part: "hardirq",
        name: "all handlers".to_owned(),
        ns: s.hardirq.total_ns,
        note: "",
    });
    let mut vectors: Vec<Entry> = SoftirqVector::ALL
        .iter()
        .filter_map(|v| Some((v, s.softirq.get(v)?)))
        .map(|(v, t)| Entry {
            part: "softirq",
            name: v.name().to_owned(),
            ns: t.total_ns,
            note: "",
        })
        .collect();
    vectors.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.name.cmp(&b.name)));
    entries.extend(vectors);
    entries
}
