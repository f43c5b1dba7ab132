//! The screen drawn from the fixture snapshot, read back as text.
//! `header.rs` reads the header and status lines, `panels.rs` the events,
//! breakdown, history and timers panels, `sketch_and_groups.rs` the
//! sketch's and who pays' panels; the layout as a whole is read here.

mod header;
mod panels;
mod sketch_and_groups;
mod wide;

use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::breakdown::breakdowns;
use crate::frontends::tui::app::App;
use crate::frontends::tui::fixture;
use crate::frontends::tui::tree::NodeId;
use crate::model::{BudgetStatus, Calibration, EventKey, SampleContext};
use crate::source::Origin;

fn screen(app: &App, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| draw(app, frame)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| (0..width).map(|x| buffer[(x, y)].symbol()).collect())
        .collect()
}

/// The one line containing `needle`.
fn line<'a>(screen: &'a [String], needle: &str) -> &'a str {
    let found: Vec<&String> = screen.iter().filter(|l| l.contains(needle)).collect();
    assert_eq!(
        found.len(),
        1,
        "{needle:?} on {} lines:\n{}",
        found.len(),
        screen.join("\n")
    );
    found[0]
}

/// The words of a line, so tests need not count spaces.
fn words(line: &str) -> Vec<&str> {
    line.split(|c: char| c.is_whitespace() || "│┃".contains(c))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Some line of the screen has `cells` as words, in this order (other
/// words may come between).
fn has_row(screen: &[String], cells: &[&str]) {
    let in_order = |line: &String| {
        let row = words(line);
        let mut at = 0;
        cells
            .iter()
            .all(|cell| match row[at..].iter().position(|w| w == cell) {
                Some(i) => {
                    at += i + 1;
                    true
                }
                None => false,
            })
    };
    assert!(
        screen.iter().any(in_order),
        "no line with {cells:?}:\n{}",
        screen.join("\n")
    );
}

fn screen_of(snapshot: crate::model::Snapshot, width: u16, height: u16) -> Vec<String> {
    screen(&fixture::app_showing(snapshot), width, height)
}

fn screen_text(app: &App, width: u16, height: u16) -> Vec<String> {
    screen(app, width, height)
}

/// The rows inside the bordered panel whose top border carries `title`.
fn inside(screen: &[String], title: &str) -> Vec<String> {
    let top = screen.iter().position(|l| l.contains(title)).unwrap();
    let chars: Vec<char> = screen[top].chars().collect();
    let at = screen[top][..screen[top].find(title).unwrap()]
        .chars()
        .count();
    let left = (0..at).rev().find(|&x| "┌┏".contains(chars[x])).unwrap();
    let right = (at..chars.len())
        .find(|&x| "┐┓".contains(chars[x]))
        .unwrap();
    screen[top + 1..]
        .iter()
        .map(|l| l.chars().collect::<Vec<char>>())
        .take_while(|l| !"└┗".contains(l[left]))
        .map(|l| l[left + 1..right].iter().collect())
        .collect()
}

#[test]
fn layouts_hold_from_80x24_to_250x60() {
    for (width, height) in [(80, 24), (100, 30), (120, 40), (200, 60), (250, 60)] {
        let screen = screen(&fixture::app(), width, height);
        for title in [
            "host testhost",
            "events:",
            "history:",
            "breakdown,",
            "? help",
        ] {
            line(&screen, title);
        }
        let at = |needle: &str| screen.iter().position(|l| l.contains(needle)).unwrap();
        assert_eq!(at("host testhost"), 0);
        assert_eq!(at("? help"), usize::from(height) - 1);
        // Every event and the tree's first context fit.
        assert!(at("net_timers ") < at("breakdown,"));
        line(&screen, "local_tcp");
        if width >= 120 {
            assert_eq!(at("events:"), at("history:"), "side by side when wide");
        } else {
            assert!(at("events:") < at("history:"));
        }
    }
}

#[test]
fn the_chart_has_room_for_its_lines_at_80x24() {
    let screen = screen(&fixture::app(), 80, 24);
    let chart = inside(&screen, "history:");
    assert!(
        chart.len() >= 4,
        "{} rows:\n{}",
        chart.len(),
        screen.join("\n")
    );
    // Too few rows for a time axis: the title says where it starts.
    line(&screen, "history: % of one CPU, last 300 s to now");
    assert!(!screen.iter().any(|l| l.contains("-300 s")));
    // The breakdown keeps its first context's categories and the next
    // context.
    let tree = inside(&screen, "breakdown,");
    assert_eq!(tree.len(), 5, "{}", screen.join("\n"));
    has_row(&screen, &["SOCK_SEND", "agreement"]);
}

#[test]
fn no_panel_keeps_empty_rows_when_wide() {
    for (width, height) in [(120, 40), (250, 60)] {
        let screen = screen(&fixture::app(), width, height);
        for title in ["events:", "net_timers by callback"] {
            let rows = inside(&screen, title);
            assert!(
                rows.iter().all(|r| !r.trim().is_empty()),
                "{title} at {width}x{height} keeps an empty row:\n{}",
                screen.join("\n")
            );
        }
        // The chart is as tall as the two beside it, with a time axis.
        has_row(&screen, &["-300", "s"]);
        let at = |needle: &str| screen.iter().position(|l| l.contains(needle)).unwrap();
        assert_eq!(at("events:"), at("history:"));
    }
}

#[test]
fn the_words_page_explains_the_jargon() {
    let mut app = fixture::app();
    app.help = Some(crate::frontends::tui::app::Help::Words);
    let text = screen(&app, 120, 40).join("\n");
    for word in [
        "agreement:",
        "skid:",
        "timer_softirq_overhead:",
        "gaps reused:",
        "lost ... task windows:",
    ] {
        assert!(text.contains(word), "{word} missing:\n{text}");
    }
    // At 80x24 the page scrolls to its last line, and no further.
    let small = screen(&app, 80, 24).join("\n");
    assert!(!small.contains("lost ... CPUs unsampled:"), "{small}");
    app.help_scroll = 1000;
    let end = screen(&app, 80, 24);
    line(&end, "lost ... CPUs unsampled:");
    assert!(end[22].contains("at every drain"), "{}", end.join("\n"));
}

#[test]
fn too_small_says_so() {
    for (width, height) in [(79, 24), (80, 23), (40, 10)] {
        let screen = screen(&fixture::app(), width, height);
        let text = screen.join(" ");
        let text = words(&text).join(" ");
        assert!(
            text.contains(&format!(
                "terminal too small: {width}x{height}, netto top needs at least 80x24"
            )),
            "{text}"
        );
        assert!(!text.contains("events"));
    }
}

#[test]
fn help_overlay_lists_the_keys_and_the_notes() {
    let mut app = fixture::app();
    app.help = Some(crate::frontends::tui::app::Help::Keys);
    let screen = screen(&app, 80, 24);
    has_row(&screen, &["Ctrl-C", "quit"]);
    line(&screen, "pause / resume the display");
    line(&screen, "write a flame graph of the last seconds to a file");
    line(&screen, "last 30 s");
    line(&screen, "demo traffic: fixture");
}
