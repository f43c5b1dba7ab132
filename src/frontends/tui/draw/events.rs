//! The events panel: the exact CPU time of each network entry point, as a
//! share of the host and of one CPU, or per CPU.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::history::colour;
use super::{panel, waiting};
use crate::frontends::tui::app::{App, Panel};
use crate::model::EventKey;

/// Room for `net_rx_softirq` and for the widest number, `100.0%`.
const LABEL_WIDTH: u16 = 15;
const VALUE_WIDTH: u16 = 9;

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let (Some(grid), Some(snapshot)) = (app.grid(), app.latest()) else {
        let block = panel(app, Some(Panel::Events), " events ".to_owned());
        frame.render_widget(Paragraph::new(waiting(app)).block(block), area);
        return;
    };
    let view = if app.per_cpu {
        "% of each CPU"
    } else {
        "host totals"
    };
    let sorted = grid.sort_column(app.sort);
    let order = sorted.map_or(grid.label_title, |c| grid.columns[c].title);
    let title = format!(
        " events: {view}, {} CPUs, {:.2} s, sorted by {order} ",
        snapshot.cpus, snapshot.interval_s
    );
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let header = Row::new(std::iter::once(Cell::from(grid.label_title)).chain(
        grid.columns.iter().enumerate().map(|(i, column)| {
            let cell = Cell::from(Line::from(column.title).right_aligned());
            if sorted == Some(i) {
                cell.style(Style::new().add_modifier(Modifier::UNDERLINED))
            } else {
                cell
            }
        }),
    ))
    .style(bold.fg(Color::Yellow));
    let rows = grid.rows.iter().map(|row| {
        // An event's name in its line's colour in the chart, which then
        // needs no legend.
        let label = match EventKey::ALL
            .iter()
            .find(|k| row.label.trim_start_matches('~') == k.name())
        {
            Some(&key) => Cell::from(row.label.as_str()).style(Style::new().fg(colour(key))),
            None => Cell::from(row.label.as_str()),
        };
        Row::new(
            std::iter::once(label).chain(row.values.iter().zip(&grid.columns).map(
                |(&value, column)| {
                    Cell::from(Line::from(column.unit.format(value)).right_aligned())
                },
            )),
        )
    });
    let widths = std::iter::once(Constraint::Length(LABEL_WIDTH))
        .chain(grid.columns.iter().map(|_| Constraint::Length(VALUE_WIDTH)));
    let focused = app.focus == Panel::Events;
    let mut block = panel(app, Some(Panel::Events), title);
    if let Some(shown) = shown_rows(grid.rows.len(), app.events_row, area.height) {
        block = block.title_bottom(Line::from(shown).right_aligned());
    }
    let table = Table::new(rows, widths)
        .header(header)
        .block(block)
        .row_highlight_style(if focused {
            Style::new().bg(Color::DarkGray)
        } else {
            Style::new()
        });
    let mut state = TableState::default().with_selected(Some(app.events_row));
    frame.render_stateful_widget(table, area, &mut state);
}

/// Which rows a panel `height` tall shows when they do not all fit (the
/// per-CPU view of a host with more CPUs than the panel has lines), as
/// its bottom border says it: the table scrolls just far enough to show
/// the selected row, and the rest are a Tab and Up/Down away.
fn shown_rows(rows: usize, selected: usize, height: u16) -> Option<String> {
    // The borders and the header row.
    let room = usize::from(height.saturating_sub(3)).max(1);
    if rows <= room {
        return None;
    }
    let first = selected.min(rows - 1).saturating_sub(room - 1);
    Some(format!(
        " rows {}-{} of {rows}: tab, Up/Down ",
        first + 1,
        first + room
    ))
}
