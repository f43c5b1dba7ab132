//! The breakdown panel: where each sampled context's time went, as a tree
//! of categories and their hottest functions, each with its share and its
//! CPU time.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row as TableRow, Table, TableState};
use ratatui::Frame;

use super::{panel, waiting};
use crate::frontends::calibration_text::measured_agreement;
use crate::frontends::tui::app::{App, Panel};
use crate::frontends::tui::format;
use crate::frontends::tui::tree::Row;
use crate::model::percent;

const VALUE_WIDTH: u16 = 9;

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let Some(snapshot) = app.latest() else {
        let block = panel(app, Some(Panel::Breakdown), " breakdown ".to_owned());
        frame.render_widget(Paragraph::new(waiting(app)).block(block), area);
        return;
    };
    let samples: u64 = app.tree.contexts.iter().map(|c| c.samples).sum();
    let title = format!(" breakdown: {samples} stack samples, Right/Left open/close ");
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
    let interval = snapshot.interval_s;
    let cpu = |ns: f64| format::percent(percent(ns as u64, interval));
    let lines = rows.iter().map(|row| {
        let (depth, name, share, ns, count) = match *row {
            Row::Context(c) => (
                0,
                match (c.agreement, c.calibration) {
                    (Some(agreement), _) => format!(
                        "{}  agreement {agreement:.2}",
                        c.context.name().to_uppercase()
                    ),
                    (None, Some(calibration)) => format!(
                        "{}  {}",
                        c.context.name().to_uppercase(),
                        measured_agreement(&calibration, snapshot.ts)
                    ),
                    (None, None) => c.context.name().to_uppercase(),
                },
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
        TableRow::new([
            Cell::from(format!("{}{arrow} {name}", "  ".repeat(depth))),
            Cell::from(Line::from(format::percent(share * 100.0)).right_aligned()),
            Cell::from(Line::from(cpu(ns)).right_aligned()),
            Cell::from(Line::from(count.to_string()).right_aligned()),
        ])
        .style(style)
    });
    let header = TableRow::new([
        Cell::from("context / category / function"),
        Cell::from(Line::from("share").right_aligned()),
        Cell::from(Line::from("% 1 CPU").right_aligned()),
        Cell::from(Line::from("samples").right_aligned()),
    ])
    .style(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Fill(1),
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
