//! The breakdown panel: where each sampled context's time went, as a tree
//! of categories and their hottest functions, each with its share and its
//! CPU time.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row as TableRow, Table, TableState};
use ratatui::Frame;

use super::{panel, waiting};
use crate::breakdown::categories::is_skid;
use crate::frontends::calibration_text::calibration as calibration_text;
use crate::frontends::tui::app::{App, Panel};
use crate::frontends::tui::format;
use crate::frontends::tui::tree::{ContextNode, Row};
use crate::model::percent;

const VALUE_WIDTH: u16 = 9;
const HEADING: &str = "context / category / function";
/// After a skid function's name ([`crate::frontends::glossary::SKID`]).
const SKID_MARK: &str = "  skid";

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let Some(snapshot) = app.latest() else {
        let block = panel(app, Some(Panel::Breakdown), " breakdown ".to_owned());
        frame.render_widget(Paragraph::new(waiting(app)).block(block), area);
        return;
    };
    let samples: u64 = app.tree.contexts.iter().map(|c| c.samples).sum();
    let title = format!(
        " breakdown, {}: {samples} stack samples (w: window, Right/Left: open/close) ",
        app.window_name()
    );
    let block = panel(app, Some(Panel::Breakdown), title);
    let rows = app.tree_rows();
    if rows.is_empty() {
        let why = if snapshot.sampling.is_some() {
            "no stack samples in the network stack during this interval"
        } else {
            "not sampling stacks"
        };
        frame.render_widget(Paragraph::new(why).block(block), area);
        return;
    }
    let interval = app.tree.interval_s;
    let cpu = |ns: f64| format::percent(percent(ns as u64, interval));
    let lines = rows.iter().map(|row| {
        let (depth, name, share, ns, count) = match *row {
            Row::Context(c) => (
                0,
                context_name(c, snapshot.ts),
                1.0,
                c.event_ns as f64,
                c.samples,
            ),
            Row::Category(_, k) => (1, k.name.clone(), k.share, k.cpu_ns as f64, k.samples),
            Row::Function(_, k, f) => (
                2,
                f.name.clone(),
                f.samples as f64 / k.samples.max(1) as f64,
                k.function_ns(f),
                f.samples,
            ),
        };
        let open = app.expansion.is_open(&row.id());
        let arrow = match (row.has_children(), open) {
            (false, _) => " ",
            (true, true) => "v",
            (true, false) => ">",
        };
        let style = match depth {
            0 => Style::new().add_modifier(Modifier::BOLD),
            2 => Style::new().fg(Color::Gray),
            _ => Style::new(),
        };
        // Where interrupts came back on: its time is its callers' work.
        let skid = matches!(row, Row::Function(_, _, f) if is_skid(&f.name));
        let label = Line::from(vec![
            Span::raw(format!("{}{arrow} {name}", "  ".repeat(depth))),
            Span::styled(
                if skid { SKID_MARK } else { "" },
                Style::new().fg(Color::Yellow),
            ),
        ]);
        TableRow::new([
            Cell::from(label),
            Cell::from(Line::from(format::percent(share * 100.0)).right_aligned()),
            Cell::from(Line::from(cpu(ns)).right_aligned()),
            Cell::from(Line::from(count.to_string()).right_aligned()),
        ])
        .style(style)
    });
    let header = TableRow::new([
        Cell::from(HEADING),
        Cell::from(Line::from("share").right_aligned()),
        Cell::from(Line::from("% 1 CPU").right_aligned()),
        Cell::from(Line::from("samples").right_aligned()),
    ])
    .style(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD));
    // The names as wide as the widest, so that on a wide screen the
    // numbers stay next to them; the rest of the width is left empty.
    let widest = rows
        .iter()
        .map(|row| label_width(row, snapshot.ts))
        .chain([HEADING.len()])
        .max()
        .unwrap_or_default();
    let room = usize::from(area.width.saturating_sub(2 + 3 * (VALUE_WIDTH + 1)));
    let widths = [
        Constraint::Length(u16::try_from(widest.min(room)).unwrap_or(u16::MAX)),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Length(VALUE_WIDTH),
    ];
    let focused = app.focus == Panel::Breakdown;
    let table = Table::new(lines, widths)
        .header(header)
        .block(block)
        .row_highlight_style(if focused {
            Style::new().bg(Color::DarkGray)
        } else {
            Style::new()
        });
    let mut state = TableState::default().with_selected(Some(app.selected_row(&rows)));
    frame.render_stateful_widget(table, area, &mut state);
}

/// A context's name, and how its samples agree with its time: measured
/// in this window, or (for an estimate) where the run last measured it.
fn context_name(c: &ContextNode, ts: f64) -> String {
    let name = c.context.name().to_uppercase();
    match (c.agreement, c.calibration) {
        (Some(agreement), _) => format!("{name}  agreement {agreement:.2}"),
        (None, Some(calibration)) => format!("{name}  {}", calibration_text(&calibration, ts)),
        (None, None) => name,
    }
}

/// The columns a row's name takes: the text the table draws for it.
fn label_width(row: &Row<'_>, ts: f64) -> usize {
    let depth = match row {
        Row::Context(_) => 0,
        Row::Category(..) => 1,
        Row::Function(..) => 2,
    };
    let name = match *row {
        Row::Context(c) => context_name(c, ts),
        Row::Category(_, k) => k.name.clone(),
        Row::Function(_, _, f) if is_skid(&f.name) => format!("{}{SKID_MARK}", f.name),
        Row::Function(_, _, f) => f.name.clone(),
    };
    2 * depth + 2 + Span::raw(name).width()
}
