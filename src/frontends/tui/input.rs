//! The key map: which key does what to the app state, as one table that
//! the help overlay shows too, so what is documented is what happens.
//! Keys change only the state; what must happen outside it (quit, tell
//! the sampler, write a file) comes back as an [`Effect`].

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{App, Effect, Help, Panel};
use super::frequency;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    Pause,
    Faster,
    Slower,
    PerCpu,
    Sort,
    NextPanel,
    PreviousPanel,
    Up,
    Down,
    PageUp,
    PageDown,
    Expand,
    Collapse,
    Toggle,
    Window,
    FlameGraph,
    Help,
}

pub struct Binding {
    /// How the help overlay names the keys.
    pub label: &'static str,
    keys: &'static [(KeyCode, KeyModifiers)],
    pub command: Command,
    pub help: &'static str,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

pub const BINDINGS: &[Binding] = &[
    Binding {
        label: "q  Ctrl-C",
        keys: &[(KeyCode::Char('q'), NONE), (KeyCode::Char('c'), CTRL)],
        command: Command::Quit,
        help: "quit",
    },
    Binding {
        label: "p",
        keys: &[(KeyCode::Char('p'), NONE)],
        command: Command::Pause,
        help: "pause / resume the display (measuring goes on)",
    },
    Binding {
        label: "+  -",
        keys: &[(KeyCode::Char('+'), NONE), (KeyCode::Char('='), NONE)],
        command: Command::Faster,
        help: "sample faster / slower (live runs only)",
    },
    Binding {
        label: "",
        keys: &[(KeyCode::Char('-'), NONE)],
        command: Command::Slower,
        help: "",
    },
    Binding {
        label: "c",
        keys: &[(KeyCode::Char('c'), NONE)],
        command: Command::PerCpu,
        help: "events: host totals / one row per CPU",
    },
    Binding {
        label: "o",
        keys: &[(KeyCode::Char('o'), NONE)],
        command: Command::Sort,
        help: "events, who pays: sort by the next column",
    },
    Binding {
        label: "Tab  Shift-Tab",
        keys: &[(KeyCode::Tab, NONE)],
        command: Command::NextPanel,
        help: "switch between the events, breakdown and who-pays panels",
    },
    Binding {
        label: "",
        keys: &[(KeyCode::BackTab, NONE)],
        command: Command::PreviousPanel,
        help: "",
    },
    Binding {
        label: "Up Down  k j",
        keys: &[(KeyCode::Up, NONE), (KeyCode::Char('k'), NONE)],
        command: Command::Up,
        help: "move the selection",
    },
    Binding {
        label: "",
        keys: &[(KeyCode::Down, NONE), (KeyCode::Char('j'), NONE)],
        command: Command::Down,
        help: "",
    },
    Binding {
        label: "PgUp PgDn",
        keys: &[(KeyCode::PageUp, NONE)],
        command: Command::PageUp,
        help: "move the selection by a page",
    },
    Binding {
        label: "",
        keys: &[(KeyCode::PageDown, NONE)],
        command: Command::PageDown,
        help: "",
    },
    Binding {
        label: "Right  l",
        keys: &[(KeyCode::Right, NONE), (KeyCode::Char('l'), NONE)],
        command: Command::Expand,
        help: "breakdown: open (a category: its hottest functions)",
    },
    Binding {
        label: "Left  h",
        keys: &[(KeyCode::Left, NONE), (KeyCode::Char('h'), NONE)],
        command: Command::Collapse,
        help: "breakdown: close, or go to the parent",
    },
    Binding {
        label: "Enter  Space",
        keys: &[(KeyCode::Enter, NONE), (KeyCode::Char(' '), NONE)],
        command: Command::Toggle,
        help: "breakdown: open / close",
    },
    Binding {
        label: "w",
        keys: &[(KeyCode::Char('w'), NONE)],
        command: Command::Window,
        help: "breakdown: the last interval, or 5, 10, 30 s of samples",
    },
    Binding {
        label: "s",
        keys: &[(KeyCode::Char('s'), NONE)],
        command: Command::FlameGraph,
        help: "write a flame graph of the last seconds to a file",
    },
    Binding {
        label: "?",
        keys: &[(KeyCode::Char('?'), NONE)],
        command: Command::Help,
        help: "this help, then what the words on screen mean",
    },
];

/// Rows moved by PgUp / PgDn.
const PAGE: isize = 10;

/// The command `key` is bound to. Shift is ignored: terminals disagree on
/// whether `+`, `?` or Shift-Tab carry it.
pub fn command_for(key: &KeyEvent) -> Option<Command> {
    let modifiers = key.modifiers - KeyModifiers::SHIFT;
    BINDINGS
        .iter()
        .find(|b| b.keys.contains(&(key.code, modifiers)))
        .map(|b| b.command)
}

/// Applies `key` to the state; returns what else it asks for.
pub fn handle_key(app: &mut App, key: &KeyEvent) -> Option<Effect> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let command = command_for(key);
    // What the status line said (the start-up notes, a key's message) has
    // been read once a key is pressed; the help keeps the notes.
    app.status = None;
    if let Some(page) = app.help {
        // Any key closes the help, as it says; only Ctrl-C still quits,
        // which no one presses to close a page.
        if key.code == KeyCode::Char('c') && key.modifiers.contains(CTRL) {
            return Some(Effect::Quit);
        }
        let scroll = |by: isize| app.help_scroll.saturating_add_signed(by);
        match (page, command) {
            (_, Some(Command::Up)) => app.help_scroll = scroll(-1),
            (_, Some(Command::Down)) => app.help_scroll = scroll(1),
            (_, Some(Command::PageUp)) => app.help_scroll = scroll(-PAGE),
            (_, Some(Command::PageDown)) => app.help_scroll = scroll(PAGE),
            (Help::Keys, Some(Command::Help)) => {
                app.help = Some(Help::Words);
                app.help_scroll = 0;
            }
            _ => app.help = None,
        }
        return None;
    }
    match command? {
        Command::Quit => return Some(Effect::Quit),
        Command::Pause => app.set_paused(!app.paused),
        Command::Faster => return change_frequency(app, true),
        Command::Slower => return change_frequency(app, false),
        Command::PerCpu => app.toggle_per_cpu(),
        Command::Sort => app.next_sort(),
        Command::NextPanel => app.switch_panel(true),
        Command::PreviousPanel => app.switch_panel(false),
        Command::Up => app.move_selection(-1),
        Command::Down => app.move_selection(1),
        Command::PageUp => app.move_selection(-PAGE),
        Command::PageDown => app.move_selection(PAGE),
        Command::Expand if app.focus == Panel::Breakdown => app.expand(),
        Command::Collapse if app.focus == Panel::Breakdown => app.collapse(),
        Command::Toggle if app.focus == Panel::Breakdown => app.toggle_node(),
        Command::Expand | Command::Collapse | Command::Toggle => {}
        Command::Window => {
            app.next_window();
            app.status = Some(format!("breakdown: {}", app.window_name()));
        }
        Command::FlameGraph => return Some(Effect::WriteFlameGraph),
        Command::Help => {
            app.help = Some(Help::Keys);
            app.help_scroll = 0;
        }
    }
    None
}

/// One step of [`frequency::STEPS`] up or down, if there is one and the
/// source can change it.
fn change_frequency(app: &mut App, faster: bool) -> Option<Effect> {
    if !app.live() {
        app.status = Some("a replay keeps its recorded sampling frequency".to_owned());
        return None;
    }
    let current = app.frequency_hz?;
    let next = if faster {
        frequency::faster(current)
    } else {
        frequency::slower(current)
    };
    match next {
        Some(hz) => {
            app.frequency_hz = Some(hz);
            app.status = Some(format!("sampling frequency: {current} -> {hz} Hz"));
            Some(Effect::SetFrequency(hz))
        }
        None => {
            let end = if faster { "highest" } else { "lowest" };
            app.status = Some(format!(
                "sampling frequency is at its {end} step ({current} Hz)"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::KeyEventState;

    use super::*;
    use crate::frontends::tui::fixture;
    use crate::frontends::tui::tree::NodeId;
    use crate::model::SampleContext;
    use crate::source::Origin;

    fn press(app: &mut App, code: KeyCode) -> Option<Effect> {
        handle_key(app, &KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn chars(app: &mut App, keys: &str) -> Vec<Effect> {
        keys.chars()
            .filter_map(|c| press(app, KeyCode::Char(c)))
            .collect()
    }

    #[test]
    fn quit_keys() {
        let mut app = fixture::app();
        assert_eq!(press(&mut app, KeyCode::Char('q')), Some(Effect::Quit));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(handle_key(&mut app, &ctrl_c), Some(Effect::Quit));
        assert!(!app.per_cpu, "Ctrl-C is not c");
    }

    #[test]
    fn pause_holds_new_snapshots_until_resumed() {
        let mut app = fixture::app();
        let shown = app.latest().unwrap().ts;
        assert_eq!(chars(&mut app, "p"), []);
        assert!(app.paused);
        let mut next = fixture::snapshot();
        next.ts = shown + 1.0;
        app.push(next);
        assert_eq!(app.latest().unwrap().ts, shown, "the screen stays still");
        assert_eq!(app.held(), 1);
        chars(&mut app, "p");
        assert!(!app.paused);
        assert_eq!(app.latest().unwrap().ts, shown + 1.0);
        assert_eq!(app.series[0].points.len(), 2, "both in the chart");
        assert_eq!(app.held(), 0);
    }

    #[test]
    fn per_cpu_toggle_and_sort() {
        let mut app = fixture::app();
        chars(&mut app, "o");
        assert_eq!(app.sort, 1);
        // Natural, % host, calls/s, per call: the fourth press is round.
        chars(&mut app, "ooo");
        assert_eq!(app.sort, 0);
        chars(&mut app, "o");
        chars(&mut app, "c");
        assert!(app.per_cpu);
        assert_eq!(app.sort, 0, "a new view starts in its natural order");
        assert_eq!(app.grid().unwrap().rows[0].label, "cpu0");
        // Label plus five event columns: the sixth press comes back round.
        chars(&mut app, "oooooo");
        assert_eq!(app.sort, 0);
        chars(&mut app, "c");
        assert!(!app.per_cpu);
    }

    #[test]
    fn frequency_steps_are_bounded_and_sent_to_the_source() {
        let mut app = fixture::app();
        assert_eq!(chars(&mut app, "+"), [Effect::SetFrequency(999)]);
        assert_eq!(app.frequency_hz, Some(999));
        assert_eq!(
            app.status.as_deref(),
            Some("sampling frequency: 499 -> 999 Hz")
        );
        assert_eq!(
            chars(&mut app, "++++"),
            [
                Effect::SetFrequency(1999),
                Effect::SetFrequency(4999),
                Effect::SetFrequency(9999)
            ]
        );
        assert_eq!(app.frequency_hz, Some(9999));
        assert!(app.status.as_deref().unwrap().contains("highest"));
        let down = chars(&mut app, &"-".repeat(12));
        assert_eq!(down.len(), frequency::STEPS.len() - 1);
        assert_eq!(down.last(), Some(&Effect::SetFrequency(9)));
        assert_eq!(app.frequency_hz, Some(9));
        assert!(app.status.as_deref().unwrap().contains("lowest"));
    }

    #[test]
    fn a_replay_refuses_frequency_changes() {
        let mut app = App::new(
            fixture::info(Origin::Replay("r.json".into())),
            fixture::settings(),
        );
        assert_eq!(chars(&mut app, "+-"), []);
        assert_eq!(app.frequency_hz, Some(499));
        assert!(app.status.as_deref().unwrap().contains("replay"));
    }

    #[test]
    fn arrows_move_within_the_focused_panel() {
        let mut app = fixture::app();
        assert_eq!(app.focus, Panel::Events);
        press(&mut app, KeyCode::PageDown);
        assert_eq!(app.events_row, 4, "five events");
        press(&mut app, KeyCode::Up);
        assert_eq!(app.events_row, 3);
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.focus, Panel::Breakdown);
        press(&mut app, KeyCode::Down);
        assert_eq!(app.events_row, 3, "only the focused panel moves");
        assert_eq!(
            app.selected,
            Some(NodeId::Category(SampleContext::NetRx, "local_tcp".into()))
        );
        press(&mut app, KeyCode::BackTab);
        assert_eq!(app.focus, Panel::Events);
    }

    #[test]
    fn tab_reaches_who_pays_only_with_an_attribution_and_o_sorts_it() {
        let mut app = fixture::app();
        press(&mut app, KeyCode::Tab);
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.focus, Panel::Events, "two panels without --by");
        let mut app = fixture::app_showing(fixture::attributed());
        press(&mut app, KeyCode::BackTab);
        assert_eq!(app.focus, Panel::Groups);
        chars(&mut app, "o");
        assert_eq!((app.groups_sort, app.sort), (1, 0), "the focused table");
        press(&mut app, KeyCode::Down);
        assert_eq!(app.groups_row, 1);
        press(&mut app, KeyCode::PageDown);
        assert_eq!(app.groups_row, 1, "two groups");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.focus, Panel::Events);
    }

    #[test]
    fn right_and_left_open_and_close_the_tree() {
        let mut app = fixture::app();
        press(&mut app, KeyCode::Tab);
        let rows = |app: &App| app.tree_rows().len();
        // NET_RX, 2 categories, SOCK_SEND, 1 category.
        assert_eq!(rows(&app), 5);
        press(&mut app, KeyCode::Right);
        assert_eq!(rows(&app), 5, "the open context: step into it");
        let tcp = NodeId::Category(SampleContext::NetRx, "local_tcp".into());
        assert_eq!(app.selected, Some(tcp.clone()));
        press(&mut app, KeyCode::Right);
        assert_eq!(rows(&app), 7, "local_tcp's two functions");
        press(&mut app, KeyCode::Right);
        assert_eq!(
            app.selected,
            Some(NodeId::Function(
                SampleContext::NetRx,
                "local_tcp".into(),
                "_raw_spin_lock".into()
            ))
        );
        press(&mut app, KeyCode::Left);
        assert_eq!(
            app.selected,
            Some(tcp.clone()),
            "a function: up to its category"
        );
        press(&mut app, KeyCode::Left);
        assert_eq!(rows(&app), 5);
        press(&mut app, KeyCode::Enter);
        assert_eq!(rows(&app), 7);
        press(&mut app, KeyCode::Left);
        press(&mut app, KeyCode::Left);
        assert_eq!(app.selected, Some(NodeId::Context(SampleContext::NetRx)));
        press(&mut app, KeyCode::Left);
        assert_eq!(rows(&app), 3, "NET_RX closed");
    }

    #[test]
    fn open_nodes_and_selection_survive_the_next_snapshot() {
        let mut app = fixture::app();
        press(&mut app, KeyCode::Tab);
        chars(&mut app, "jl");
        let before = app.selected.clone();
        app.push(fixture::snapshot());
        assert_eq!(app.tree_rows().len(), 7);
        assert_eq!(app.selected, before);
    }

    #[test]
    fn tree_keys_do_nothing_in_the_events_panel() {
        let mut app = fixture::app();
        press(&mut app, KeyCode::Right);
        press(&mut app, KeyCode::Left);
        assert_eq!(app.tree_rows().len(), 5);
    }

    #[test]
    fn help_opens_and_any_key_closes_it_without_acting() {
        let mut app = fixture::app();
        chars(&mut app, "?");
        assert_eq!(app.help, Some(Help::Keys));
        chars(&mut app, "p");
        assert_eq!(app.help, None);
        assert!(!app.paused, "the key only closed the help");
        // q too, as the help says: it closes the help, it does not quit.
        chars(&mut app, "?");
        assert_eq!(chars(&mut app, "q"), []);
        assert_eq!(app.help, None);
        // ? again turns to the words, and any key closes those.
        chars(&mut app, "??");
        assert_eq!(app.help, Some(Help::Words));
        assert_eq!(chars(&mut app, "?"), []);
        assert_eq!(app.help, None);
        // The arrows scroll a page that does not fit, and leave it open.
        chars(&mut app, "??");
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::PageDown);
        assert_eq!(
            (app.help, app.help_scroll),
            (Some(Help::Words), 1 + PAGE as usize)
        );
        press(&mut app, KeyCode::Up);
        assert_eq!(app.help_scroll, PAGE as usize);
        chars(&mut app, "x");
        assert_eq!(app.help, None);
        // Ctrl-C quits whatever is open.
        chars(&mut app, "?");
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(handle_key(&mut app, &ctrl_c), Some(Effect::Quit));
    }

    #[test]
    fn a_key_clears_the_status_line() {
        let mut app = App::new(fixture::info(Origin::Live), fixture::settings());
        app.push(fixture::snapshot());
        assert_eq!(app.status.as_deref(), Some("demo traffic: fixture"));
        chars(&mut app, "o");
        assert_eq!(app.status, None, "the notes were read; the help keeps them");
        chars(&mut app, "+");
        assert!(app.status.is_some(), "a key's own message");
        chars(&mut app, "o");
        assert_eq!(app.status, None);
    }

    #[test]
    fn w_steps_the_breakdown_through_its_windows() {
        let mut app = fixture::app();
        assert_eq!(app.window, Some(5.0), "five seconds to start with");
        chars(&mut app, "w");
        assert_eq!(app.window, Some(10.0));
        assert_eq!(app.status.as_deref(), Some("breakdown: last 10 s"));
        chars(&mut app, "ww");
        assert_eq!(app.window, None);
        assert_eq!(app.status.as_deref(), Some("breakdown: last interval"));
        chars(&mut app, "w");
        assert_eq!(app.window, Some(5.0));
        // None longer than the stacks are kept (--flame-seconds).
        let mut settings = fixture::settings();
        settings.flame_s = 8.0;
        let mut short = App::new(fixture::info(Origin::Live), settings);
        assert_eq!(short.windows(), [None, Some(5.0)]);
        chars(&mut short, "ww");
        assert_eq!(short.window, Some(5.0));
    }

    #[test]
    fn flame_graph_and_ignored_keys() {
        let mut app = fixture::app();
        assert_eq!(chars(&mut app, "s"), [Effect::WriteFlameGraph]);
        assert_eq!(chars(&mut app, "xyz"), []);
        let release = KeyEvent {
            code: KeyCode::Char('q'),
            modifiers: KeyModifiers::NONE,
            kind: KeyEventKind::Release,
            state: KeyEventState::NONE,
        };
        assert_eq!(handle_key(&mut app, &release), None);
        let shifted = KeyEvent::new(KeyCode::Char('+'), KeyModifiers::SHIFT);
        assert_eq!(
            handle_key(&mut app, &shifted),
            Some(Effect::SetFrequency(999))
        );
    }
}
