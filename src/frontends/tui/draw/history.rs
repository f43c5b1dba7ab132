//! The history chart: each event's share of one CPU over the last
//! minutes, newest on the right.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, LegendPosition, Paragraph};
use ratatui::Frame;

use super::{panel, waiting};
use crate::frontends::tui::app::App;
use crate::frontends::tui::format;
use crate::model::EventKey;

/// One colour per event, in [`EventKey::ALL`] order.
const COLOURS: [Color; EventKey::ALL.len()] = [
    Color::Green,
    Color::Blue,
    Color::Magenta,
    Color::Yellow,
    Color::Red,
];

/// An event's line colour, which the events panel names it in too.
pub fn colour(event: EventKey) -> Color {
    COLOURS[EventKey::ALL
        .iter()
        .position(|&k| k == event)
        .unwrap_or_default()]
}

/// Rows of lines below which the time axis gives its rows to the lines:
/// the title says how far back the chart reaches, and "now" is always on
/// the right.
const AXIS_FROM_ROWS: u16 = 8;

/// The y axis never shrinks below this, so an idle host's noise stays
/// flat instead of filling the chart.
const MIN_TOP_PERCENT: f64 = 1.0;

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let span = app.settings.history_s;
    let with_axis = area.height.saturating_sub(2) >= AXIS_FROM_ROWS;
    let title = if with_axis {
        format!(" history: % of one CPU, last {span:.0} s ")
    } else {
        format!(" history: % of one CPU, last {span:.0} s to now ")
    };
    let block = panel(app, None, title);
    if app.series.is_empty() {
        frame.render_widget(Paragraph::new(waiting(app)).block(block), area);
        return;
    }
    let highest = app
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|&(_, y)| y))
        .fold(MIN_TOP_PERCENT, f64::max);
    // No event can take more than every CPU; a bad reading beyond that
    // must not flatten the others into the axis.
    let cpus = app.latest().map_or(1, |s| s.cpus.max(1));
    let top = nice_ceiling(highest).min(100.0 * cpus as f64);
    let datasets = app
        .series
        .iter()
        .zip(COLOURS)
        .map(|(series, colour)| {
            Dataset::default()
                .name(series.event.name())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(colour))
                .data(&series.points)
        })
        .collect();
    let grey = Style::new().fg(Color::DarkGray);
    let chart = Chart::new(datasets)
        .block(block)
        .x_axis({
            let axis = Axis::default().bounds([-span, 0.0]).style(grey);
            if with_axis {
                axis.labels([Line::from(format!("-{span:.0} s")), Line::from("now")])
            } else {
                axis
            }
        })
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .style(grey)
                .labels([Line::from("0"), Line::from(format::percent(top))]),
        )
        .legend_position(Some(LegendPosition::TopLeft))
        .hidden_legend_constraints((Constraint::Percentage(60), Constraint::Percentage(80)));
    frame.render_widget(chart, area);
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `value`.
fn nice_ceiling(value: f64) -> f64 {
    let magnitude = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&v| v >= value)
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::nice_ceiling;

    #[test]
    fn axis_tops() {
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(1.3), 2.0);
        assert_eq!(nice_ceiling(3.0), 5.0);
        assert_eq!(nice_ceiling(7.5), 10.0);
        assert_eq!(nice_ceiling(140.0), 200.0);
    }
}
