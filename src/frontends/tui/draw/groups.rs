//! The who-pays panel (`--by`): each group's network time as % of one
//! CPU, sortable, with what no group claimed below the groups.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::panel;
use crate::frontends::tui::app::{App, Panel};
use crate::frontends::tui::table;
use crate::model::Attribution;

/// Room for `100.0%`, and the least a group's label gets (a container's
/// `docker 3f2a1b4c5d6e`).
const VALUE_WIDTH: u16 = 7;
const LABEL_MIN: u16 = 20;

pub fn draw(
    app: &App,
    attribution: &Attribution,
    interval_s: f64,
    frame: &mut Frame<'_>,
    area: Rect,
) {
    let by = attribution.by.name();
    let Some(grid) = app.group_grid().filter(|_| attribution.on) else {
        let title = format!(" who pays: by {by} ");
        let why = "attribution is off in this interval: all time unattributed";
        frame.render_widget(
            Paragraph::new(why).block(panel(app, Some(Panel::Groups), title)),
            area,
        );
        return;
    };
    // The most telling columns that fit beside a readable label.
    let room = area.width.saturating_sub(2 + LABEL_MIN) / (VALUE_WIDTH + 1);
    let shown = usize::from(room).clamp(1, grid.columns.len());
    let sorted = grid.sort_column(app.groups_sort);
    let order = sorted.map_or("weight", |c| grid.columns[c].title);
    let title = format!(" who pays: by {by}, % of one CPU, sorted by {order} ");
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let header = Row::new(std::iter::once(Cell::from(grid.label_title)).chain(
        grid.columns[..shown].iter().enumerate().map(|(i, column)| {
            let cell = Cell::from(Line::from(column.title).right_aligned());
            if sorted == Some(i) {
                cell.style(Style::new().add_modifier(Modifier::UNDERLINED))
            } else {
                cell
            }
        }),
    ))
    .style(bold.fg(Color::Yellow));
    let row = |row: &table::Row, style: Style| {
        Row::new(
            std::iter::once(Cell::from(row.label.clone())).chain(
                row.values[..shown]
                    .iter()
                    .zip(&grid.columns)
                    .map(|(&value, column)| {
                        Cell::from(Line::from(column.unit.format(value)).right_aligned())
                    }),
            ),
        )
        .style(style)
    };
    let unattributed = table::group_row(
        "unattributed".to_owned(),
        &attribution.unattributed,
        attribution.by.keys_conns().then_some(None),
        interval_s,
    );
    let rows = grid
        .rows
        .iter()
        .map(|r| row(r, Style::new()))
        .chain(std::iter::once(row(
            &unattributed,
            Style::new().fg(Color::DarkGray),
        )));
    let widths = std::iter::once(Constraint::Fill(1))
        .chain((0..shown).map(|_| Constraint::Length(VALUE_WIDTH)));
    let focused = app.focus == Panel::Groups;
    let table = Table::new(rows, widths)
        .header(header)
        .block(panel(app, Some(Panel::Groups), title))
        .row_highlight_style(if focused {
            Style::new().bg(Color::DarkGray)
        } else {
            Style::new()
        });
    let mut state = TableState::default().with_selected(focused.then_some(app.groups_row));
    frame.render_stateful_widget(table, area, &mut state);
}
