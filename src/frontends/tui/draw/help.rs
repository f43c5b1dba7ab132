//! The help overlay, two pages: the key map (the same table input uses)
//! and what the source said about this run; then what the words on screen
//! mean (the glossary stat and the web page use too).

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::frontends::glossary::WORDS;
use crate::frontends::notes;
use crate::frontends::tui::app::{App, Help};
use crate::frontends::tui::input::BINDINGS;
use crate::model::Losses;

const WIDTH: u16 = 76;

pub fn draw(app: &App, page: Help, frame: &mut Frame<'_>, area: Rect) {
    let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let (title, footer, lines) = match page {
        Help::Keys => (
            " netto top: keys ",
            " ? again: what the words mean · Up/Down scroll · other keys close ",
            keys(app, key),
        ),
        Help::Words => (
            " netto top: what the words mean ",
            " Up/Down scroll · other keys close ",
            words(key),
        ),
    };
    let width = WIDTH.min(area.width);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let height = u16::try_from(rows + 2).unwrap_or(u16::MAX).min(area.height);
    // Scrolled no further than the last row at the bottom.
    let hidden = rows.saturating_sub(usize::from(height.saturating_sub(2)));
    let scroll = u16::try_from(app.help_scroll.min(hidden)).unwrap_or(u16::MAX);
    let [popup] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .block(
                Block::bordered()
                    .title(title)
                    .title_bottom(Line::from(footer).right_aligned()),
            ),
        popup,
    );
}

/// The keys, then the start-up notes (last: on a small screen they are
/// what gets cut).
fn keys(app: &App, key: Style) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = BINDINGS
        .iter()
        .filter(|b| !b.label.is_empty())
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:<16}", b.label), key),
                Span::raw(b.help),
            ])
        })
        .collect();
    lines.push(Line::from(format!(
        "{:<16}flame graphs: the last {:.0} s, into the current directory",
        "", app.settings.flame_s
    )));
    lines.push(Line::default());
    lines.extend(
        app.info
            .notes
            .iter()
            .map(|note| Line::from(notes::sentence(note))),
    );
    lines
}

/// Every word, and every kind of loss (as the header names it: `lost 2
/// task windows`), with its meaning.
fn words(key: Style) -> Vec<Line<'static>> {
    let words = WORDS.iter().map(|w| (w.word.to_owned(), w.meaning));
    let losses = Losses::KINDS
        .iter()
        .map(|k| (format!("lost ... {}", k.short), k.meaning));
    words
        .chain(losses)
        .map(|(word, meaning)| {
            Line::from(vec![
                Span::styled(format!("{word}: "), key),
                Span::raw(meaning),
            ])
        })
        .collect()
}
