//! Drawing: every function here takes the app state and a frame and draws,
//! nothing else. The layout adapts from 80x24 up; below that the screen
//! says it is too small instead of drawing panels nobody can read.

mod breakdown;
mod events;
mod groups;
mod header;
mod help;
mod history;
mod programs;
mod sketch;
mod timers;

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
/// The fewest rows the timers panel is shown in: its borders and two
/// lines.
const TIMERS_MIN_HEIGHT: u16 = 4;
/// Below [`WIDE`], the history chart's rows: enough for four rows of
/// lines inside its borders; the breakdown takes the rest. When the
/// breakdown shares its band with the sketch or who-pays panel, the chart
/// gives a row to the band, keeping three rows of lines.
const NARROW_HISTORY_HEIGHT: u16 = 6;
const NARROW_SHARED_HISTORY_HEIGHT: u16 = 5;

/// Where each panel goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Areas {
    header: Rect,
    events: Rect,
    /// Under the events panel when wide, in the rows the chart beside it
    /// takes beyond the events' own.
    timers: Option<Rect>,
    history: Rect,
    breakdown: Rect,
    /// Only while the snapshot carries a sketch.
    sketch: Option<Rect>,
    /// Only while the snapshot carries an attribution (`--by`).
    groups: Option<Rect>,
    /// Only while a BPF program not netto's ran ([`programs::shown`]).
    programs: Option<Rect>,
    status: Rect,
}

impl Areas {
    /// The XDP sketch, who-pays and eBPF programs panels, when there are
    /// any, take the right part of the breakdown's band: the breakdown is
    /// the only panel whose rows do not need the full width. Below
    /// [`WIDE`] they share the band's height instead, so that a flow's
    /// 5-tuple still fits on one line; there the programs panel is left
    /// out when the sketch or who-pays panel is in, as a band of three
    /// would leave each too few rows to read.
    /// `header`: the header's rows; `timers`: the rows the timers panel
    /// would fill, when there is a snapshot to fill it from.
    fn of(
        area: Rect,
        header: u16,
        with_sketch: bool,
        with_groups: bool,
        with_programs: bool,
        timers: Option<u16>,
    ) -> Areas {
        let [header, body, status] = Layout::vertical([
            Constraint::Length(header),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let (events, timers, history, breakdown) = if body.width >= WIDE {
            // Two fifths for the chart, no more than the events and the
            // timers beside it fill: no panel keeps empty rows.
            let filled = EVENTS_HEIGHT + timers.unwrap_or(0);
            let top = (body.height * 2 / 5).min(filled).max(EVENTS_HEIGHT);
            let [top, breakdown] =
                Layout::vertical([Constraint::Length(top), Constraint::Fill(1)]).areas(body);
            let [left, history] =
                Layout::horizontal([Constraint::Length(EVENTS_WIDTH), Constraint::Fill(1)])
                    .areas(top);
            if left.height >= EVENTS_HEIGHT + TIMERS_MIN_HEIGHT {
                let [events, timers] =
                    Layout::vertical([Constraint::Length(EVENTS_HEIGHT), Constraint::Fill(1)])
                        .areas(left);
                (events, Some(timers), history, breakdown)
            } else {
                (left, None, history, breakdown)
            }
        } else {
            let history = if with_sketch || with_groups || with_programs {
                NARROW_SHARED_HISTORY_HEIGHT
            } else {
                NARROW_HISTORY_HEIGHT
            };
            let [events, history, breakdown] = Layout::vertical([
                Constraint::Length(EVENTS_HEIGHT),
                Constraint::Length(history),
                Constraint::Fill(1),
            ])
            .areas(body);
            (events, None, history, breakdown)
        };
        let with_programs = with_programs && (body.width >= WIDE || !(with_sketch || with_groups));
        let parts =
            1 + usize::from(with_sketch) + usize::from(with_groups) + usize::from(with_programs);
        let shares = vec![Constraint::Fill(1); parts];
        let band = if body.width >= WIDE {
            Layout::horizontal(shares).split(breakdown)
        } else {
            Layout::vertical(shares).split(breakdown)
        };
        let mut beside = band.iter().copied().skip(1);
        let sketch = with_sketch.then(|| beside.next()).flatten();
        let groups = with_groups.then(|| beside.next()).flatten();
        let programs = with_programs.then(|| beside.next()).flatten();
        Areas {
            header,
            events,
            timers,
            history,
            breakdown: band[0],
            sketch,
            groups,
            programs,
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
    let programs = app
        .latest()
        .and_then(|s| Some((programs::shown(s)?, s.interval_s)));
    let timers = app.latest().map(timers::height);
    let areas = Areas::of(
        area,
        header::height(app, area.width),
        sketch.is_some(),
        attribution.is_some(),
        programs.is_some(),
        timers,
    );
    header::draw(app, frame, areas.header);
    events::draw(app, frame, areas.events);
    if let Some(rect) = areas.timers {
        timers::draw(app, frame, rect);
    }
    history::draw(app, frame, areas.history);
    breakdown::draw(app, frame, areas.breakdown);
    if let (Some(sketch), Some(rect)) = (sketch, areas.sketch) {
        sketch::draw(app, sketch, frame, rect);
    }
    if let (Some((attribution, interval_s)), Some(rect)) = (attribution, areas.groups) {
        groups::draw(app, attribution, interval_s, frame, rect);
    }
    if let (Some((programs, interval_s)), Some(rect)) = (programs, areas.programs) {
        programs::draw(app, programs, interval_s, frame, rect);
    }
    status(app, frame, areas.status);
    if let Some(page) = app.help {
        help::draw(app, page, frame, area);
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

/// The key hints, most needed first: a narrow line keeps the first ones.
const HINTS: &str =
    "? help, words  q quit  p pause  tab panel  o sort  w window  c per-CPU  +/- sampling  s flame";

/// The status line: what a key did or the source said, else what the
/// selected row's jargon means, else the key hints; cut at a word, never
/// inside one, with `…` where it goes on (`?` shows the start-up notes
/// whole).
fn status(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let width = usize::from(area.width);
    let line = match (&app.status, app.selected_word()) {
        (Some(message), _) => Line::from(fit_words(message, width)),
        (None, Some(word)) => {
            Line::styled(fit_words(&word.line(), width), Style::new().fg(Color::Cyan))
        }
        (None, None) => Line::styled(fit_words(HINTS, width), Style::new().fg(Color::DarkGray)),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// `text` in at most `width` columns: whole, or cut after the last word
/// that fits with `…` after it.
fn fit_words(text: &str, width: usize) -> String {
    let columns = |text: &str| ratatui::text::Span::raw(text).width();
    if columns(text) <= width {
        return text.to_owned();
    }
    let room = width.saturating_sub(1);
    let mut end = 0;
    for (at, c) in text.char_indices() {
        if c == ' ' {
            if columns(text[..at].trim_end()) > room {
                break;
            }
            end = at;
        }
    }
    let kept = text[..end].trim_end_matches([' ', ';', ',', ':']);
    if kept.is_empty() {
        // One word wider than the line: cut it, as nothing else can be.
        let cut: String = text.chars().take(room).collect();
        return format!("{cut}…");
    }
    format!("{kept}…")
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
