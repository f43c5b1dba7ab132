//! Drawing: every function here takes the app state and a frame and draws,
//! nothing else. The layout adapts from 80x24 up; below that the screen
//! says it is too small instead of drawing panels nobody can read.

mod breakdown;
mod events;
mod groups;
mod header;
mod help;
mod history;
mod sketch;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Panel};

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// From this width the events panel and the chart sit side by side.
const WIDE: u16 = 120;
/// Wide enough for the totals view's five columns.
const EVENTS_WIDTH: u16 = 66;
/// Five events, a header row and the borders.
const EVENTS_HEIGHT: u16 = 8;

/// Where each panel goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Areas {
    header: Rect,
    events: Rect,
    history: Rect,
    breakdown: Rect,
    /// Only while the snapshot carries a sketch.
    sketch: Option<Rect>,
    /// Only while the snapshot carries an attribution (`--by`).
    groups: Option<Rect>,
    status: Rect,
}

impl Areas {
    /// The XDP sketch and who-pays panels, when there are any, take the
    /// right part of the breakdown's band: the breakdown is the only panel
    /// whose rows do not need the full width. Below [`WIDE`] they share the
    /// band's height instead, so that a flow's 5-tuple still fits on one
    /// line.
    fn of(area: Rect, with_sketch: bool, with_groups: bool) -> Areas {
        let [header, body, status] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let [events, history, breakdown] = if body.width >= WIDE {
            let top = (body.height * 2 / 5).max(EVENTS_HEIGHT);
            let [top, breakdown] =
                Layout::vertical([Constraint::Length(top), Constraint::Fill(1)]).areas(body);
            let [events, history] =
                Layout::horizontal([Constraint::Length(EVENTS_WIDTH), Constraint::Fill(1)])
                    .areas(top);
            [events, history, breakdown]
        } else {
            Layout::vertical([
                Constraint::Length(EVENTS_HEIGHT),
                Constraint::Fill(2),
                Constraint::Fill(3),
            ])
            .areas(body)
        };
        let parts = 1 + usize::from(with_sketch) + usize::from(with_groups);
        let shares = vec![Constraint::Fill(1); parts];
        let band = if body.width >= WIDE {
            Layout::horizontal(shares).split(breakdown)
        } else {
            Layout::vertical(shares).split(breakdown)
        };
        let mut beside = band.iter().copied().skip(1);
        let sketch = with_sketch.then(|| beside.next()).flatten();
        let groups = with_groups.then(|| beside.next()).flatten();
        Areas {
            header,
            events,
            history,
            breakdown: band[0],
            sketch,
            groups,
            status,
        }
    }
}

/// Draws the whole screen.
pub fn draw(app: &App, frame: &mut Frame<'_>) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area);
        return;
    }
    let sketch = app.latest().and_then(|s| s.sketch.as_ref());
    let attribution = app
        .latest()
        .and_then(|s| Some((s.attribution.as_ref()?, s.interval_s)));
    let areas = Areas::of(area, sketch.is_some(), attribution.is_some());
    header::draw(app, frame, areas.header);
    events::draw(app, frame, areas.events);
    history::draw(app, frame, areas.history);
    breakdown::draw(app, frame, areas.breakdown);
    if let (Some(sketch), Some(rect)) = (sketch, areas.sketch) {
        sketch::draw(app, sketch, frame, rect);
    }
    if let (Some((attribution, interval_s)), Some(rect)) = (attribution, areas.groups) {
        groups::draw(app, attribution, interval_s, frame, rect);
    }
    status(app, frame, areas.status);
    if app.help {
        help::draw(app, frame, area);
    }
}

fn too_small(frame: &mut Frame<'_>, area: Rect) {
    let text = format!(
        "terminal too small: {}x{}, netto top needs at least {MIN_WIDTH}x{MIN_HEIGHT}",
        area.width, area.height
    );
    let [_, middle, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(3),
        Constraint::Fill(1),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(text).centered().wrap(Wrap { trim: true }),
        middle,
    );
}

fn status(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let line = match &app.status {
        Some(message) => Line::from(message.as_str()),
        None => Line::styled(
            "? help  q quit  p pause  +/- sampling  c per-CPU  o sort  tab panel  s flame",
            Style::new().fg(Color::DarkGray),
        ),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// A panel's frame; the focused panel's stands out.
fn panel(app: &App, which: Option<Panel>, title: String) -> Block<'static> {
    let focused = which.is_some_and(|p| p == app.focus);
    let style = if focused {
        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    Block::bordered()
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(style)
        .title(Line::styled(title, style))
}

/// What an empty panel says before the first snapshot.
fn waiting(app: &App) -> &'static str {
    if app.ended {
        "the source ended before delivering an interval"
    } else {
        "waiting for the first interval..."
    }
}

#[cfg(test)]
mod tests;
