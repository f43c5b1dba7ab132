//! The eBPF programs panel: the host's own BPF programs on the network
//! path that ran in the interval, costliest first, with where each runs,
//! what a run cost and its share of the event its hook runs in, as `stat`
//! lists them.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use super::panel;
use crate::frontends::network_programs::{
    basis_text, costliest, ns_per_run_text, places, program_name, share_text,
};
use crate::frontends::tui::app::App;
use crate::frontends::tui::format;
use crate::model::{NetworkPrograms, Snapshot};

const VALUE_WIDTH: u16 = 8;

/// The programs the panel is for: the snapshot's, when one that is not
/// netto's ran in the interval (netto's sketch has its own panel; a host
/// whose programs sat idle keeps the room for the breakdown).
pub fn shown(snapshot: &Snapshot) -> Option<&NetworkPrograms> {
    snapshot
        .network_programs
        .as_ref()
        .filter(|n| n.programs.iter().any(|p| !p.own && p.runs > 0))
}

pub fn draw(
    app: &App,
    programs: &NetworkPrograms,
    interval_s: f64,
    frame: &mut Frame<'_>,
    area: Rect,
) {
    let title = format!(" eBPF programs ({}) ", basis_text(programs));
    let block = panel(app, None, title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let right = |text: String| Cell::from(Line::from(text).right_aligned());
    let rows = costliest(programs).into_iter().map(|p| {
        Row::new([
            Cell::from(program_name(p)),
            right(format::quantity(p.runs_per_s(interval_s))),
            right(ns_per_run_text(p)),
            right(format::percent(p.cpu_percent(interval_s))),
            right(share_text(p)),
            Cell::from(places(p)),
        ])
    });
    let widths = [
        Constraint::Fill(1),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Length(VALUE_WIDTH),
        Constraint::Fill(2),
    ];
    let mut table = Table::new(rows, widths);
    // When squeezed, the programs matter more than their column names.
    if inner.height > 2 {
        let header =
            ["program", "runs/s", "ns/run", "CPU", "share", "where"].map(|name| match name {
                "program" | "where" => Cell::from(name),
                _ => Cell::from(Line::from(name).right_aligned()),
            });
        table = table.header(
            Row::new(header).style(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)),
        );
    }
    frame.render_widget(table, inner);
}
