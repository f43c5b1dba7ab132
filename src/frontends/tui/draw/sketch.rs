//! The XDP sketch panel: what the co-hosted sketch saw (its heaviest flows)
//! and what it cost, next to the stack's own costs so the two compare.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::panel;
use crate::frontends::tui::app::App;
use crate::frontends::tui::format;
use crate::model::SketchSnapshot;

const VALUE_WIDTH: u16 = 9;

pub fn draw(app: &App, sketch: &SketchSnapshot, frame: &mut Frame<'_>, area: Rect) {
    let asked = app
        .latest()
        .and_then(|s| s.budget.as_ref()?.asked_sketch_probability)
        // The applied probability is the asked one rounded to a whole
        // weight (under 0.1 % off); a step of the budget is a factor.
        .filter(|&asked| (asked - sketch.probability).abs() > asked * 1e-3)
        .map_or(String::new(), |asked| format!(" (budget; asked {asked})"));
    let title = format!(
        " XDP sketch on {} ({}) p={}{asked} {}x{} ",
        sketch.iface,
        sketch.mode.name(),
        sketch.probability,
        sketch.rows,
        sketch.columns
    );
    let block = panel(app, None, title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [totals, flows] =
        Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(totals_line(sketch)), totals);

    // Under --by flow, each heavy hitter's connection's network time.
    let joined = sketch.top.iter().any(|e| !e.flows.is_empty());
    let attribution = app.latest().and_then(|s| s.attribution.as_ref());
    let rows = sketch.top.iter().map(|estimate| {
        let f = &estimate.flow;
        let mut cells = vec![
            Cell::from(format!(
                "{} {}:{} -> {}:{}",
                f.proto, f.src, f.sport, f.dst, f.dport
            )),
            Cell::from(Line::from(estimate.packets.to_string()).right_aligned()),
            Cell::from(Line::from(format::quantity(estimate.bytes as f64)).right_aligned()),
            Cell::from(Line::from(format::percent(estimate.share * 100.0)).right_aligned()),
        ];
        if joined {
            let net = estimate
                .network_ns(attribution)
                .map_or("-".to_owned(), |ns| format::duration_ns(ns as f64));
            cells.push(Cell::from(Line::from(net).right_aligned()));
        }
        Row::new(cells)
    });
    let mut widths = vec![Constraint::Fill(1)];
    widths.extend([Constraint::Length(VALUE_WIDTH); 3]);
    let mut header = vec![
        Cell::from("heaviest flows"),
        Cell::from(Line::from("packets").right_aligned()),
        Cell::from(Line::from("bytes").right_aligned()),
        Cell::from(Line::from("share").right_aligned()),
    ];
    if joined {
        widths.push(Constraint::Length(VALUE_WIDTH));
        header.push(Cell::from(Line::from("net CPU").right_aligned()));
    }
    let mut table = Table::new(rows, widths);
    // When squeezed (80x24), the flows matter more than their column names.
    if flows.height > 2 {
        table = table.header(
            Row::new(header).style(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)),
        );
    }
    frame.render_widget(table, flows);
}

/// Traffic rates over the sketch's own interval, and the program's cost.
fn totals_line(sketch: &SketchSnapshot) -> String {
    let per_s = |n: u64| {
        if sketch.interval_s > 0.0 {
            n as f64 / sketch.interval_s
        } else {
            0.0
        }
    };
    format!(
        "{} pkt/s  {:.1} Mbit/s  cost {}/pkt  CPU {}",
        format::quantity(per_s(sketch.packets)),
        per_s(sketch.bytes) * 8.0 / 1e6,
        format::duration_ns(sketch.cost.ns_per_packet),
        format::percent(sketch.cost.cpu_percent)
    )
}
