//! What the terminal UI knows and shows: the recent snapshots, what is
//! selected and open, and the view options. Input changes it, rendering
//! reads it; neither does anything else, so both are tested without a
//! terminal. Whatever is derived from a snapshot (the breakdown tree, the
//! chart's lines) is computed once when the snapshot arrives, not on every
//! frame.

use super::table::{self, Grid};
use super::tree::{Expansion, NodeId, Row, Tree};
use crate::breakdown::categories::is_skid;
use crate::breakdown::{Categorizer, ProgramNames};
use crate::frontends::flame::{any_estimated, flame_stacks, FlameStack, Scope, Weight};
use crate::frontends::glossary::{self, Word};
use crate::frontends::notes;
use crate::history::History;
use crate::model::{EventKey, Snapshot};
use crate::source::{Origin, SourceInfo};

/// Options fixed for the run.
#[derive(Debug, Clone, PartialEq)]
pub struct TopSettings {
    /// How far back the chart reaches, in seconds of measured time.
    pub history_s: f64,
    /// What `s` draws a flame graph of.
    pub flame_s: f64,
    /// What its widths count.
    pub flame_weight: Weight,
    /// How much faster than measured the snapshots arrive (1 when live).
    pub speed: f64,
}

/// The panels that take keys, in `tab` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Events,
    Breakdown,
    /// Who pays: the attribution's groups (only with `--by`).
    Groups,
}

impl Panel {
    const ORDER: [Panel; 3] = [Panel::Events, Panel::Breakdown, Panel::Groups];

    /// The next panel in `tab` order among those `shown`.
    fn step(self, forward: bool, shown: impl Fn(Panel) -> bool) -> Panel {
        let n = Panel::ORDER.len();
        let mut at = Panel::ORDER.iter().position(|&p| p == self).unwrap_or(0);
        for _ in 0..n {
            at = if forward {
                (at + 1) % n
            } else {
                (at + n - 1) % n
            };
            if shown(Panel::ORDER[at]) {
                return Panel::ORDER[at];
            }
        }
        self
    }
}

/// The help overlay's pages: the keys (and the start-up notes), then what
/// the words on screen mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Help {
    Keys,
    Words,
}

/// The spans the breakdown can cover, in seconds of measured time (`w`
/// steps through them; none: the last interval alone). A few hundred
/// samples an interval move a category's share by several points from one
/// interval to the next; five seconds of them hold it still enough to
/// read. Spans beyond the flame graph's (`--flame-seconds`) are left out:
/// the stacks are kept that long only.
pub const BREAKDOWN_WINDOWS: [Option<f64>; 4] = [None, Some(5.0), Some(10.0), Some(30.0)];

/// The window the breakdown starts with.
const DEFAULT_WINDOW: Option<f64> = Some(5.0);

/// What a key asks of the world outside the app state; the command that
/// runs the UI carries it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Effect {
    Quit,
    SetFrequency(u64),
    WriteFlameGraph,
}

/// One event's line in the history chart: (seconds before the newest
/// snapshot, % of one CPU).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub event: EventKey,
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct App {
    pub info: SourceInfo,
    pub settings: TopSettings,
    /// The chart's span of snapshots, without their stacks: a few minutes
    /// of stacks would take hundreds of megabytes on a busy host.
    history: History,
    /// The flame graph's span, stacks included.
    recent: History,
    /// The snapshot on screen (without stacks): the newest, or the newest
    /// when the display was paused.
    shown: Option<Snapshot>,
    /// Snapshots that arrived since the display was paused.
    held: usize,
    pub paused: bool,
    pub per_cpu: bool,
    pub focus: Panel,
    /// Sort key of the events panel (see [`table::sort`]).
    pub sort: usize,
    /// Selected row of the events panel.
    pub events_row: usize,
    /// Sort key and selected row of the who-pays panel.
    pub groups_sort: usize,
    pub groups_row: usize,
    pub tree: Tree,
    pub expansion: Expansion,
    pub selected: Option<NodeId>,
    pub series: Vec<Series>,
    categorizer: Categorizer,
    /// The sampling frequency asked for last.
    pub frequency_hz: Option<u64>,
    /// One line for the user: what a key did, or why it could not.
    pub status: Option<String>,
    pub help: Option<Help>,
    /// Rows the help page is scrolled down by (a small screen cannot show
    /// it all).
    pub help_scroll: usize,
    /// The breakdown's span: one of [`App::windows`].
    pub window: Option<f64>,
    /// The source has delivered everything it will.
    pub ended: bool,
}

impl App {
    pub fn new(info: SourceInfo, settings: TopSettings) -> App {
        let notes: Vec<String> = info.notes.iter().map(notes::sentence).collect();
        let status = (!notes.is_empty()).then(|| notes.join("; "));
        let window = DEFAULT_WINDOW.filter(|&w| w <= settings.flame_s);
        App {
            frequency_hz: info.frequency_hz,
            info,
            history: History::new(settings.history_s),
            recent: History::new(settings.flame_s),
            settings,
            shown: None,
            held: 0,
            paused: false,
            per_cpu: false,
            focus: Panel::Events,
            sort: 0,
            events_row: 0,
            groups_sort: 0,
            groups_row: 0,
            tree: Tree::default(),
            expansion: Expansion::default(),
            selected: None,
            series: Vec::new(),
            categorizer: Categorizer::default(),
            status,
            help: None,
            help_scroll: 0,
            window,
            ended: false,
        }
    }

    /// The breakdown's spans this run can show ([`BREAKDOWN_WINDOWS`]).
    pub fn windows(&self) -> Vec<Option<f64>> {
        BREAKDOWN_WINDOWS
            .into_iter()
            .filter(|w| w.is_none_or(|s| s <= self.settings.flame_s))
            .collect()
    }

    /// The breakdown over the next span.
    pub fn next_window(&mut self) {
        let windows = self.windows();
        let at = windows.iter().position(|&w| w == self.window).unwrap_or(0);
        self.window = windows[(at + 1) % windows.len()];
        self.rebuild_tree();
    }

    /// What the breakdown's span reads as: `last interval`, `last 5 s`.
    pub fn window_name(&self) -> String {
        match self.window {
            None => "last interval".to_owned(),
            Some(seconds) => format!("last {seconds:.0} s"),
        }
    }

    /// The word the selected row shows that a newcomer may not know, for
    /// the status line: an estimate's `~`, a context's agreement, a skid
    /// function.
    pub fn selected_word(&self) -> Option<Word> {
        match self.focus {
            Panel::Events => {
                let grid = self.grid()?;
                let row = grid.rows.get(self.events_row)?;
                let estimated = row.label.starts_with('~')
                    || row
                        .values
                        .iter()
                        .any(|v| matches!(v, table::Value::Estimated { .. }));
                estimated.then_some(glossary::ESTIMATE)
            }
            Panel::Breakdown => {
                let rows = self.tree_rows();
                match rows.get(self.selected_row(&rows))? {
                    Row::Context(c) if c.calibration.is_some() => Some(glossary::CALIBRATION),
                    Row::Context(c) if c.agreement.is_some() => Some(glossary::AGREEMENT),
                    Row::Function(_, _, f) if is_skid(&f.name) => Some(glossary::SKID),
                    _ => None,
                }
            }
            Panel::Groups => None,
        }
    }

    /// Whether the source measures now (only then can the frequency change).
    pub fn live(&self) -> bool {
        self.info.origin == Origin::Live
    }

    /// Takes the next snapshot in; shows it unless paused.
    pub fn push(&mut self, mut snapshot: Snapshot) {
        if let Some(line) = snapshot.budget.as_ref().and_then(|b| b.change_line()) {
            self.status = Some(line);
        }
        let stacks = std::mem::take(&mut snapshot.stacks);
        let light = snapshot.clone();
        snapshot.stacks = stacks;
        self.recent.push(snapshot);
        if self.paused {
            self.history.push(light);
            self.held += 1;
        } else {
            self.history.push(light.clone());
            self.shown = Some(light);
            self.show();
        }
    }

    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
        if !paused && self.held > 0 {
            self.shown = self.history.latest().cloned();
            self.show();
        }
        self.held = 0;
    }

    /// Snapshots that arrived since pausing.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The flame graph of the last `seconds` (at most the flame graph
    /// span), weighted as the settings say.
    pub fn flame_stacks(&self, seconds: f64) -> Vec<FlameStack> {
        flame_stacks(
            self.recent.last(seconds),
            self.settings.flame_weight,
            Scope::All,
        )
    }

    /// The BPF programs among [`App::flame_stacks`]'s frames.
    pub fn flame_programs(&self, seconds: f64) -> ProgramNames {
        ProgramNames::of(self.recent.last(seconds))
    }

    /// Whether some of the last `seconds` were in a tier that estimates.
    pub fn estimated_in(&self, seconds: f64) -> bool {
        any_estimated(self.recent.last(seconds))
    }

    /// The snapshot on screen.
    pub fn latest(&self) -> Option<&Snapshot> {
        self.shown.as_ref()
    }

    /// The events panel's rows in the chosen view and order.
    pub fn grid(&self) -> Option<Grid> {
        let snapshot = self.latest()?;
        let mut grid = if self.per_cpu {
            table::per_cpu(snapshot)
        } else {
            table::totals(snapshot)
        };
        table::sort(&mut grid, self.sort);
        Some(grid)
    }

    pub fn tree_rows(&self) -> Vec<Row<'_>> {
        self.tree.rows(&self.expansion)
    }

    /// Index of the selected tree row (the first row if the selected node
    /// is gone from the tree).
    pub fn selected_row(&self, rows: &[Row<'_>]) -> usize {
        self.selected
            .as_ref()
            .and_then(|id| rows.iter().position(|row| row.id() == *id))
            .unwrap_or(0)
    }

    pub fn toggle_per_cpu(&mut self) {
        self.per_cpu = !self.per_cpu;
        self.sort = 0;
        self.events_row = 0;
    }

    /// The who-pays panel's groups in the chosen order (without
    /// `unattributed`), when the snapshot on screen has an attribution.
    pub fn group_grid(&self) -> Option<Grid> {
        let snapshot = self.latest()?;
        let mut grid = table::groups(snapshot.attribution.as_ref()?, snapshot.interval_s);
        table::sort(&mut grid, self.groups_sort);
        Some(grid)
    }

    /// The focused table (events, or who pays) sorted by its next column.
    pub fn next_sort(&mut self) {
        if self.focus == Panel::Groups {
            let keys = self.group_grid().map_or(1, |g| g.sort_keys());
            self.groups_sort = (self.groups_sort + 1) % keys;
            return;
        }
        let keys = self.grid().map_or(1, |g| g.sort_keys());
        self.sort = (self.sort + 1) % keys;
    }

    pub fn switch_panel(&mut self, forward: bool) {
        let attributed = self.latest().is_some_and(|s| s.attribution.is_some());
        self.focus = self
            .focus
            .step(forward, |panel| panel != Panel::Groups || attributed);
    }

    /// Moves the focused panel's selection by `delta` rows, within bounds.
    pub fn move_selection(&mut self, delta: isize) {
        match self.focus {
            Panel::Events => {
                let rows = self.grid().map_or(0, |g| g.rows.len());
                self.events_row = step(self.events_row, delta, rows);
            }
            Panel::Groups => {
                let rows = self.group_grid().map_or(0, |g| g.rows.len());
                self.groups_row = step(self.groups_row, delta, rows);
            }
            Panel::Breakdown => {
                let rows = self.tree_rows();
                if rows.is_empty() {
                    return;
                }
                let at = step(self.selected_row(&rows), delta, rows.len());
                self.selected = Some(rows[at].id());
            }
        }
    }

    /// Right: opens the selected node, or steps into it if open.
    pub fn expand(&mut self) {
        let rows = self.tree_rows();
        let Some(row) = rows.get(self.selected_row(&rows)) else {
            return;
        };
        let id = row.id();
        if !row.has_children() {
            return;
        }
        if self.expansion.is_open(&id) {
            self.move_selection(1);
        } else {
            self.expansion.set(&id, true);
            self.selected = Some(id);
            self.rebuild_tree();
        }
    }

    /// Left: closes the selected node, or steps out to its parent.
    pub fn collapse(&mut self) {
        let rows = self.tree_rows();
        let Some(row) = rows.get(self.selected_row(&rows)) else {
            return;
        };
        let id = row.id();
        if row.has_children() && self.expansion.is_open(&id) {
            self.expansion.set(&id, false);
            self.selected = Some(id);
            self.rebuild_tree();
        } else if let Some(parent) = id.parent() {
            self.selected = Some(parent);
        }
    }

    /// Enter: opens a closed node, closes an open one.
    pub fn toggle_node(&mut self) {
        let rows = self.tree_rows();
        let Some(row) = rows.get(self.selected_row(&rows)) else {
            return;
        };
        if row.has_children() {
            let id = row.id();
            let open = self.expansion.is_open(&id);
            self.expansion.set(&id, !open);
            self.selected = Some(id);
            self.rebuild_tree();
        }
    }

    pub fn source_ended(&mut self) {
        self.ended = true;
        self.status = Some(if self.live() {
            "measuring has stopped".to_owned()
        } else {
            format!("{} finished; q quits", self.info.origin)
        });
    }

    /// The sampling frequency in the newest snapshot (what was measured),
    /// else the one asked for.
    pub fn measured_frequency(&self) -> Option<u64> {
        self.latest()
            .and_then(|s| s.sampling.as_ref())
            .map(|s| s.frequency_hz)
            .or(self.frequency_hz)
    }

    /// Whatever the screen shows of a new snapshot is worked out here,
    /// once, rather than on every frame.
    fn show(&mut self) {
        self.rebuild_tree();
        let now = self.shown.as_ref().map_or(0.0, |s| s.ts);
        self.series = EventKey::ALL
            .iter()
            .map(|&event| Series {
                event,
                points: self
                    .history
                    .iter()
                    .map(|s| (s.ts - now, s.event(event).percent_of_cpu(s.interval_s)))
                    .collect(),
            })
            .collect();
    }

    /// The tree of the breakdown's window up to the snapshot on screen,
    /// with the functions of the open categories; those need the
    /// snapshots' stacks, which are kept for the flame graph's span (after
    /// a longer pause they are gone, and the tree is the shown interval's
    /// alone, without functions).
    fn rebuild_tree(&mut self) {
        let Some(shown) = &self.shown else {
            return;
        };
        let kept: Vec<&Snapshot> = self.recent.iter().filter(|s| s.ts <= shown.ts).collect();
        let window: Vec<&Snapshot> = match kept.last() {
            Some(newest) if newest.ts == shown.ts => {
                let from = self.window.map_or(shown.ts, |span| shown.ts - span);
                let mut window: Vec<&Snapshot> = kept
                    .iter()
                    .rev()
                    .take_while(|s| s.ts > from || s.ts == shown.ts)
                    .copied()
                    .collect();
                window.reverse();
                window
            }
            _ => vec![shown],
        };
        self.tree = Tree::build(&window, &self.expansion, &mut self.categorizer);
    }
}

/// `at + delta` kept within `0..len`.
fn step(at: usize, delta: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    at.saturating_add_signed(delta).min(len - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontends::tui::fixture;
    use crate::model::SampleContext;

    #[test]
    fn stacks_are_kept_for_the_flame_graph_span_only() {
        let mut app = App::new(fixture::info(Origin::Live), fixture::settings());
        for i in 0..40 {
            let mut snapshot = fixture::snapshot();
            snapshot.ts += f64::from(i);
            app.push(snapshot);
        }
        // In exact time (the default): every event's time.
        let per_snapshot: u64 = fixture::snapshot()
            .events
            .values()
            .map(|t| t.total_ns)
            .sum();
        let counted = |app: &App, seconds| {
            app.flame_stacks(seconds)
                .iter()
                .map(|s| s.width)
                .sum::<u64>()
        };
        assert_eq!(counted(&app, 5.0), 5 * per_snapshot);
        assert_eq!(counted(&app, 1000.0), 30 * per_snapshot, "flame_s is 30");
        app.settings.flame_weight = Weight::Samples;
        let per_snapshot: u64 = fixture::snapshot().stacks.iter().map(|s| s.count).sum();
        assert_eq!(counted(&app, 5.0), 5 * per_snapshot);
        // The chart still spans all 40, and the tree has the newest stacks.
        assert_eq!(app.series[0].points.len(), 40);
        assert_eq!(app.series[0].points[0].0, -39.0);
        assert!(app.latest().unwrap().stacks.is_empty());
        let tcp = NodeId::Category(SampleContext::NetRx, "local_tcp".into());
        app.focus = Panel::Breakdown;
        app.selected = Some(tcp);
        assert!(app.tree.contexts[0].categories[0].functions.is_empty());
        app.expand();
        assert_eq!(app.tree.contexts[0].categories[0].functions.len(), 2);
    }

    #[test]
    fn a_paused_screen_keeps_its_chart_and_opens_its_own_stacks() {
        let mut app = fixture::app();
        app.set_paused(true);
        let mut later = fixture::snapshot();
        later.ts += 1.0;
        later.stacks.clear();
        app.push(later);
        assert_eq!(app.series[0].points.len(), 1, "the chart stays still");
        app.focus = Panel::Breakdown;
        app.move_selection(1);
        app.expand();
        let functions = &app.tree.contexts[0].categories[0].functions;
        assert_eq!(functions.len(), 2, "from the paused snapshot's stacks");
        app.set_paused(false);
        assert_eq!(app.series[0].points.len(), 2);
        // The window's stacks: the first snapshot's, as the later has none;
        // the last interval alone has none to open.
        assert_eq!(app.tree.contexts[0].categories[0].functions.len(), 2);
        app.window = None;
        app.rebuild_tree();
        assert!(app.tree.contexts[0].categories[0].functions.is_empty());
    }
}
