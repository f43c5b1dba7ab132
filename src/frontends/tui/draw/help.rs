//! The help overlay: the key map (the same table input uses) and what the
//! source said about this run.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::frontends::notes;
use crate::frontends::tui::app::App;
use crate::frontends::tui::input::BINDINGS;

const WIDTH: u16 = 76;

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line<'_>> = BINDINGS
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
    let width = WIDTH.min(area.width);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let height = u16::try_from(rows + 2).unwrap_or(u16::MAX).min(area.height);
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
            .block(Block::bordered().title(" netto top: keys ")),
        popup,
    );
}
