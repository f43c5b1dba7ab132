//! The screen drawn from the fixture snapshot, read back as text.

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

#[test]
fn header_names_the_source_and_netto_costs() {
    let screen = screen(&fixture::app(), 80, 24);
    assert_eq!(
        words(&screen[0]),
        [
            "host",
            "testhost",
            "kernel",
            "6.18.0-test",
            "backend",
            "tracepoint",
            "tier",
            "exact",
            "live"
        ]
    );
    assert_eq!(
        words(&screen[1]),
        [
            "sampling", "499", "Hz", "dropped", "3", "refresh", "1.00", "s", "netto", "cost",
            "0.60%", "+-0.03%"
        ]
    );
}

#[test]
fn a_lower_tier_is_named_and_its_estimates_marked() {
    let mut sampled = fixture::snapshot();
    sampled.tier = crate::model::Tier::Softirq;
    for key in [EventKey::SockSend, EventKey::SockRecv] {
        let time = sampled.events.get_mut(&key).unwrap();
        time.estimated = true;
        time.error_ns = Some(1_000_000);
    }
    // The exact tier measured sock_send's samples earlier in the run.
    sampled
        .events
        .get_mut(&EventKey::SockSend)
        .unwrap()
        .calibration = Some(Calibration {
        agreement: 0.812,
        samples: 300,
        ts: sampled.ts - 10.0,
        ..Default::default()
    });
    sampled.breakdown = breakdowns(&sampled.stacks, &sampled.events, 499);
    let screen = screen(&fixture::app_showing(sampled), 100, 30);
    assert!(
        screen[0].contains("tier softirq (~socket calls estimated)"),
        "{}",
        screen[0]
    );
    let text = screen.join("\n");
    assert!(text.contains("~sock_send"), "{text}");
    assert!(text.contains("~sock_recv"), "{text}");
    assert!(!text.contains("~net_rx"), "{text}");
    // An estimated context shows its tier's calibration, a measured one
    // its samples' agreement.
    has_row(
        &screen,
        &[
            "SOCK_SEND",
            "calibration",
            "0.81",
            "+-0.05",
            "(not",
            "applied),",
            "10",
            "s",
            "ago",
        ],
    );
    has_row(&screen, &["NET_RX", "agreement", "0.48"]);
}

#[test]
fn a_calibration_interval_names_the_tier_the_run_is_in() {
    let mut calibrating = fixture::snapshot();
    calibrating.calibrating = Some(crate::model::Tier::Sampled);
    // Over the budget by design, with every knob at its floor: not the
    // budget exceeded.
    calibrating.budget = Some(crate::model::BudgetStatus::over_at_floor(1.0));
    let shown = screen(&fixture::app_showing(calibrating), 100, 30);
    assert!(
        shown[0].contains("tier exact (calibrating sampled)"),
        "{}",
        shown[0]
    );
    let header = shown[..2].join("\n");
    assert!(
        header.contains("budget 1 %") && !header.contains("EXCEEDED"),
        "{header}"
    );
    let exact = &screen(&fixture::app_showing(fixture::snapshot()), 100, 30)[0];
    assert!(!exact.contains("calibrating"), "{exact}");
}

#[test]
fn header_shows_losses_before_the_costs() {
    let mut lossy = fixture::snapshot();
    lossy.losses.task_storage_failures = 2;
    lossy.losses.dropped_halves = 1;
    let app = fixture::app_showing(lossy);
    let narrow = screen(&app, 80, 24);
    assert!(
        narrow[1].starts_with("sampling 499 Hz  dropped 3  lost 2 task windows, 1 sample halves"),
        "{}",
        narrow[1]
    );
    let wide = screen(&app, 140, 30);
    assert!(
        wide[1].trim_end().ends_with("netto cost 0.60% +-0.03%"),
        "{}",
        wide[1]
    );
}

#[test]
fn events_totals_show_host_and_one_cpu_shares() {
    let screen = screen(&fixture::app(), 80, 24);
    // 250 ms of 2 CPUs x 1 s; of one CPU; 5000 runs; 50 µs each.
    has_row(
        &screen,
        &["net_rx_softirq", "12.5%", "25.0%", "5000", "50.0", "µs"],
    );
    has_row(
        &screen,
        &["net_tx_softirq", "1.5%", "3.0%", "300", "100.0", "µs"],
    );
    has_row(
        &screen,
        &["sock_send", "5.0%", "10.0%", "1000", "100.0", "µs"],
    );
    has_row(&screen, &["sock_recv", "2.3%", "4.6%", "920", "50.0", "µs"]);
    has_row(
        &screen,
        &["net_timers", "0.25%", "0.50%", "50", "100.0", "µs"],
    );
    has_row(&screen, &["events:", "host", "totals,", "2", "CPUs,"]);
}

#[test]
fn events_per_cpu_view_and_sorting() {
    let mut app = fixture::app();
    app.toggle_per_cpu();
    let shown = screen(&app, 80, 24);
    has_row(&shown, &["net_rx", "net_tx", "send", "recv", "timers"]);
    has_row(&shown, &["cpu0", "0.0%", "2.0%", "10.0%", "0.0%", "0.50%"]);
    has_row(&shown, &["cpu1", "25.0%", "1.0%", "0.0%", "4.6%", "0.0%"]);
    let order = |screen: &[String]| {
        let at = |cpu| screen.iter().position(|l| l.contains(cpu)).unwrap();
        at("cpu0") < at("cpu1")
    };
    assert!(order(&shown), "by CPU number first");
    app.next_sort();
    let by_rx = screen(&app, 80, 24);
    assert!(!order(&by_rx), "cpu1 has the most net_rx");
    has_row(&by_rx, &["sorted", "by", "net_rx"]);
}

#[test]
fn breakdown_tree_shows_shares_cpu_time_and_opened_functions() {
    let mut app = fixture::app();
    let closed = screen(&app, 80, 24);
    // NET_RX: 25% of one CPU, 60 samples; local_tcp 2/3 of it. 60
    // samples at 499 Hz stand for 120 ms of its 250: agreement 0.48.
    has_row(
        &closed,
        &["NET_RX", "agreement", "0.48", "100.0%", "25.0%", "60"],
    );
    has_row(&closed, &["local_tcp", "66.7%", "16.7%", "40"]);
    has_row(&closed, &["driver_napi", "33.3%", "8.3%", "20"]);
    assert!(!closed.iter().any(|l| l.contains("_raw_spin_lock")));

    app.focus = Panel::Breakdown;
    app.selected = Some(NodeId::Category(SampleContext::NetRx, "local_tcp".into()));
    app.expand();
    let open = screen(&app, 80, 24);
    // 30 of local_tcp's 40 samples: 3/4 of its 166.7 ms.
    has_row(&open, &["_raw_spin_lock", "75.0%", "12.5%", "30"]);
    has_row(&open, &["tcp_v4_do_rcv", "25.0%", "4.2%", "10"]);
}

#[test]
fn history_chart_names_every_event() {
    let mut app = fixture::app();
    let mut next = fixture::snapshot();
    next.ts += 1.0;
    app.push(next);
    let screen = screen(&app, 200, 60);
    line(&screen, "history: % of one CPU, last 300 s");
    for name in [
        "net_rx_softirq",
        "net_tx_softirq",
        "sock_send",
        "sock_recv",
        "net_timers",
    ] {
        // The timers panel names net_timers in its title and by each of
        // its callbacks.
        let elsewhere = if name == "net_timers" { 3 } else { 0 };
        assert_eq!(
            screen
                .iter()
                .map(|l| l.matches(name).count())
                .sum::<usize>(),
            2 + elsewhere,
            "{name} in the table and the legend"
        );
    }
    has_row(&screen, &["-300", "s"]);
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

/// Under a budget, a third header line splits the cost into measuring and
/// serving and gives each knob's cost, costliest first, `~` on a
/// predicted one; at 80 columns the costliest knobs come first. The row
/// comes from the breakdown: at 80x24 with the sketch and who-pays panels
/// too, their band keeps their titles only.
#[test]
fn the_budget_knobs_and_the_cost_split_in_a_third_header_line() {
    for (width, height, all) in [
        (80, 24, false),
        (80, 24, true),
        (120, 40, true),
        (250, 60, true),
    ] {
        let mut served = fixture::served();
        if all {
            served.attribution = fixture::attributed().attribution;
            served.sketch = Some(fixture::sketch());
        }
        let screen = screen(&fixture::app_showing(served), width, height);
        let costs = &screen[2];
        let shown = words(costs);
        assert_eq!(
            shown[..8],
            [
                "measuring",
                "0.45%",
                "serving",
                "0.15%",
                "knobs",
                "~socket_window",
                "1.4%",
                "exact_hooks"
            ],
            "{width}x{height}: {costs}"
        );
        if width >= 120 {
            assert_eq!(
                shown[8..],
                ["0.25%", "process", "0.15%", "sampler", "0.05%"],
                "{costs}"
            );
        }
        let at = |needle: &str| screen.iter().position(|l| l.contains(needle)).unwrap();
        assert_eq!(at("events:"), 3, "{}", screen.join("\n"));
        assert_eq!(at("? help"), usize::from(height) - 1);
        let panels: &[&str] = if all {
            &["history:", "breakdown,", "XDP sketch", "who pays"]
        } else {
            &["history:", "breakdown,"]
        };
        for panel in panels {
            let rows = inside(&screen, panel).len();
            assert!(
                rows > 0 || (all && height == 24),
                "{width}x{height}: {panel} has no rows:\n{}",
                screen.join("\n")
            );
        }
        assert!(inside(&screen, "history:").len() >= 3);
    }
    // Without a budget nor serving, two header lines as before.
    let screen = screen(&fixture::app(), 80, 24);
    assert!(screen[2].contains("events:"), "{}", screen[2]);
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
fn the_timers_panel_says_where_net_timers_and_interrupt_time_go() {
    let screen = screen(&fixture::app(), 120, 40);
    // Heaviest first: net_timers' callbacks, then the interrupts.
    has_row(
        &screen,
        &[
            "net_timers",
            "timer_softirq_overhead",
            "0.40%",
            "its",
            "loop,",
            "timer",
            "re-arm",
        ],
    );
    has_row(&screen, &["net_timers", "tcp_pace_kick", "0.10%"]);
    has_row(&screen, &["hardirq", "all", "handlers", "1.2%"]);
    has_row(&screen, &["softirq", "NET_RX", "25.0%"]);
    let order = |screen: &[String]| -> Vec<String> {
        inside(screen, "net_timers by callback")
            .iter()
            .map(|r| words(r)[1].to_owned())
            .collect()
    };
    assert_eq!(
        order(&screen),
        ["timer_softirq_overhead", "tcp_pace_kick", "all", "NET_RX"]
    );
    // Taller, the rest: every vector, the idle ones last.
    let tall = screen_of(fixture::snapshot(), 250, 60);
    assert_eq!(
        order(&tall),
        [
            "timer_softirq_overhead",
            "tcp_pace_kick",
            "all",
            "NET_RX",
            "NET_TX",
            "HRTIMER",
            "TIMER",
            "RCU",
            "BLOCK",
            "HI",
            "IRQ_POLL",
            "SCHED"
        ]
    );
    // A tier that does not measure interrupts says so.
    let mut sampled = fixture::snapshot();
    sampled.tier = crate::model::Tier::Sampled;
    sampled.softirq.clear();
    let screen = screen_of(sampled, 120, 40);
    line(
        &screen,
        "softirq, hardirq: not measured in the sampled tier",
    );
    // Below 120 columns there is no room for it.
    let narrow = screen_of(fixture::snapshot(), 100, 40);
    assert!(!narrow.iter().any(|l| l.contains("net_timers by callback")));
}

fn screen_of(snapshot: crate::model::Snapshot, width: u16, height: u16) -> Vec<String> {
    screen(&fixture::app_showing(snapshot), width, height)
}

#[test]
fn the_breakdown_keeps_its_numbers_by_their_names_when_wide() {
    let screen = screen(&fixture::app(), 250, 60);
    let row = line(&screen, "> local_tcp");
    let name_end = row.find("local_tcp").unwrap() + "local_tcp".len();
    let share = row.find("66.7%").unwrap();
    assert!(
        share - name_end < 45,
        "the share is {} columns from its name:\n{row}",
        share - name_end
    );
}

#[test]
fn the_status_line_is_cut_at_a_word() {
    let mut app = fixture::app();
    let note = "backend tracepoint: fentry backend unavailable: fentry/fexit: load refused: \
                Operation not permitted (os error 1); self-check saw 13 of 13 kinds of socket call";
    app.status = Some(note.to_owned());
    let screen = screen(&app, 80, 24);
    let status = screen[23].trim_end();
    let kept = status.strip_suffix('…').expect("marked as cut");
    assert!(note.starts_with(kept), "{status}");
    assert!(
        note[kept.len()..].starts_with([' ', ';', ',', ':']),
        "cut inside a word: {status}"
    );
    assert!(status.chars().count() <= 80);
    // Whole where it fits.
    app.status = Some("sampling frequency: 499 -> 999 Hz".into());
    assert_eq!(
        screen_text(&app, 80, 24)[23].trim_end(),
        "sampling frequency: 499 -> 999 Hz"
    );
}

fn screen_text(app: &App, width: u16, height: u16) -> Vec<String> {
    screen(app, width, height)
}

#[test]
fn the_breakdown_names_its_window() {
    let mut app = fixture::app();
    let mut next = fixture::snapshot();
    next.ts += 1.0;
    app.push(next);
    // Five seconds: both intervals' samples.
    has_row(
        &screen(&app, 80, 24),
        &["breakdown,", "last", "5", "s:", "150", "stack", "samples"],
    );
    has_row(
        &screen(&app, 80, 24),
        &["NET_RX", "agreement", "0.48", "100.0%", "25.0%", "120"],
    );
    app.next_window();
    app.next_window();
    app.next_window();
    has_row(
        &screen(&app, 80, 24),
        &["breakdown,", "last", "interval:", "75", "stack", "samples"],
    );
}

#[test]
fn skid_is_marked_in_the_breakdown_and_explained_when_selected() {
    let mut snapshot = fixture::snapshot();
    snapshot.stacks[1] = crate::breakdown::hot::tcp_receive(&["_raw_spin_unlock_irqrestore"], 10);
    snapshot.breakdown = breakdowns(&snapshot.stacks, &snapshot.events, 499);
    let mut app = fixture::app_showing(snapshot);
    app.focus = Panel::Breakdown;
    app.selected = Some(NodeId::Category(SampleContext::NetRx, "local_tcp".into()));
    app.expand();
    let tcp = NodeId::Category(SampleContext::NetRx, "local_tcp".into());
    app.selected = Some(NodeId::Function(
        SampleContext::NetRx,
        "local_tcp".into(),
        "_raw_spin_unlock_irqrestore".into(),
    ));
    let shown = screen(&app, 120, 40);
    has_row(
        &shown,
        &["_raw_spin_unlock_irqrestore", "skid", "25.0%", "4.2%", "10"],
    );
    assert!(
        shown[39].starts_with("skid: a function that turns interrupts back on"),
        "{}",
        shown[39]
    );
    // A context's agreement is explained the same way.
    app.selected = Some(tcp.parent().unwrap());
    let shown = screen(&app, 120, 40);
    assert!(shown[39].starts_with("agreement: "), "{}", shown[39]);
}

#[test]
fn estimates_read_to_their_precision_and_unknown_counts_as_unknown() {
    let mut estimated = fixture::snapshot();
    estimated.tier = crate::model::Tier::Softirq;
    let send = estimated.events.get_mut(&EventKey::SockSend).unwrap();
    send.estimated = true;
    send.error_ns = Some(76_300_000);
    send.count = 0;
    let mut app = fixture::app_showing(estimated);
    // 100 ms +- 76.3 ms of 1 s on one CPU; of two, 5 +- 3.8 %.
    has_row(
        &screen(&app, 80, 24),
        &["~sock_send", "~5%", "~10%", "-", "-"],
    );
    app.toggle_per_cpu();
    has_row(
        &screen(&app, 80, 24),
        &["cpu0", "0.0%", "2.0%", "~10%", "0.0%", "0.50%"],
    );
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
    assert!(!small.contains("lost ... attributions:"), "{small}");
    app.help_scroll = 1000;
    let end = screen(&app, 80, 24);
    line(&end, "lost ... attributions:");
    assert!(
        end[22].contains("they count as unattributed"),
        "{}",
        end.join("\n")
    );
}

fn with_sketch() -> App {
    let mut snapshot = fixture::snapshot();
    snapshot.sketch = Some(fixture::sketch());
    fixture::app_showing(snapshot)
}

#[test]
fn sketch_panel_shows_the_sketch_its_cost_and_its_heaviest_flows() {
    for (width, height) in [(200, 60), (80, 24)] {
        let screen = screen(&with_sketch(), width, height);
        has_row(
            &screen,
            &[
                "XDP", "sketch", "on", "veth-a", "(native)", "p=0.125", "4x2048",
            ],
        );
        // 50 000 packets and 1 Gbit over 2 s; 40 ns and 0.10% per packet.
        has_row(
            &screen,
            &[
                "25.0k", "pkt/s", "500.0", "Mbit/s", "cost", "40", "ns/pkt", "CPU", "0.10%",
            ],
        );
        has_row(
            &screen,
            &[
                "198.18.0.1:40000",
                "->",
                "198.18.0.2:5201",
                "40000",
                "100.0M",
                "80.0%",
            ],
        );
        line(&screen, "tcp 198.18.0.1:40000");
        // The breakdown keeps its band's other part.
        has_row(&screen, &["NET_RX", "0.48", "100.0%", "25.0%", "60"]);
    }
    let wide = screen(&with_sketch(), 200, 60);
    has_row(&wide, &["heaviest", "flows", "packets", "bytes", "share"]);
    has_row(
        &wide,
        &[
            "198.18.0.3:53000",
            "->",
            "198.18.0.2:53",
            "9000",
            "20.0M",
            "16.0%",
        ],
    );
    let at = |needle: &str| wide.iter().position(|l| l.contains(needle)).unwrap();
    assert_eq!(at("breakdown,"), at("XDP sketch"), "side by side when wide");
}

#[test]
fn who_pays_panel_lists_groups_sorted_and_unattributed_last() {
    // At 80x24 the band the panel shares holds its heaviest group only.
    let small = screen(&fixture::app_showing(fixture::attributed()), 80, 24);
    has_row(&small, &["who", "pays:", "by", "cgroup,"]);
    has_row(&small, &["docker", "3f2a1b4c5d6e", "25.0%", "15.0%"]);
    for (width, height) in [(200, 60), (100, 40), (120, 40)] {
        let mut app = fixture::app_showing(fixture::attributed());
        let shown = screen(&app, width, height);
        has_row(&shown, &["who", "pays:", "by", "cgroup,"]);
        // 250 ms of 1 s: the container's total; 150 ms of it NET_RX.
        has_row(&shown, &["docker", "3f2a1b4c5d6e", "25.0%", "15.0%"]);
        has_row(&shown, &["session-3.scope", "9.6%", "5.0%"]);
        has_row(&shown, &["unattributed", "8.5%", "5.0%"]);
        let at = |screen: &[String], needle: &str| {
            screen.iter().position(|l| l.contains(needle)).unwrap()
        };
        assert!(at(&shown, "docker") < at(&shown, "session-3"));
        assert!(at(&shown, "session-3") < at(&shown, "unattributed"));
        // Sorted by recv, the session comes first; unattributed stays last.
        app.focus = Panel::Groups;
        for _ in 0..4 {
            app.next_sort();
        }
        let by_recv = screen(&app, width, height);
        has_row(&by_recv, &["who", "pays:", "sorted", "by", "recv"]);
        assert!(at(&by_recv, "session-3") < at(&by_recv, "docker"));
        assert!(at(&by_recv, "docker") < at(&by_recv, "unattributed"));
        // The breakdown keeps its part of the band.
        has_row(&shown, &["NET_RX", "100.0%", "25.0%", "60"]);
    }
    let wide = screen(&fixture::app_showing(fixture::attributed()), 200, 60);
    let at = |needle: &str| wide.iter().position(|l| l.contains(needle)).unwrap();
    assert_eq!(at("breakdown,"), at("who pays"), "side by side when wide");
}

#[test]
fn who_pays_says_when_attribution_is_off() {
    let mut off = fixture::attributed();
    let a = off.attribution.as_mut().unwrap();
    a.on = false;
    a.groups.clear();
    let shown = screen(&fixture::app_showing(off), 80, 24);
    line(&shown, "attribution is off in this interval");
}

#[test]
fn sketch_panel_says_when_the_budget_holds_the_probability_under_the_asked() {
    let budgeted = |asked: f64| {
        let mut snapshot = fixture::snapshot();
        snapshot.sketch = Some(fixture::sketch());
        snapshot.budget = Some(BudgetStatus {
            percent: 1.0,
            over: false,
            at_floor: false,
            asked_frequency_hz: None,
            asked_sketch_probability: Some(asked),
            change: None,
            steps_down: 1,
            steps_up: 0,
            knobs: Vec::new(),
        });
        screen(&fixture::app_showing(snapshot), 200, 60)
    };
    has_row(
        &budgeted(0.5),
        &[
            "XDP", "sketch", "p=0.125", "(budget;", "asked", "0.5)", "4x2048",
        ],
    );
    // At the asked probability (as applied, to a whole weight) nothing more.
    let at_asked = budgeted(0.125);
    has_row(&at_asked, &["XDP", "sketch", "p=0.125", "4x2048"]);
    assert!(!at_asked.iter().any(|l| l.contains("budget; asked")));
}

#[test]
fn no_sketch_no_panel() {
    for (width, height) in [(200, 60), (80, 24)] {
        let screen = screen(&fixture::app(), width, height);
        assert!(!screen.iter().any(|l| l.contains("XDP") || l.contains("->")));
        assert!(!screen.iter().any(|l| l.contains("who pays")));
    }
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

#[test]
fn start_up_notes_in_the_status_line_until_a_key_replaces_them() {
    let app = App::new(fixture::info(Origin::Live), fixture::settings());
    let screen = screen(&app, 80, 24);
    assert_eq!(words(&screen[23]), ["demo", "traffic:", "fixture"]);
}

#[test]
fn paused_and_pending_snapshots_in_the_header() {
    let mut app = fixture::app();
    app.set_paused(true);
    app.push(fixture::snapshot());
    let screen = screen(&app, 80, 24);
    assert_eq!(
        words(&screen[1])[..4],
        ["PAUSED", "(+1", "new)", "sampling"]
    );
}

#[test]
fn before_the_first_snapshot_and_for_a_replay() {
    let app = App::new(
        fixture::info(Origin::Replay("rec.json".into())),
        fixture::settings(),
    );
    let screen = screen(&app, 80, 24);
    assert_eq!(words(&screen[0])[6..], ["replay", "of", "rec.json"]);
    assert_eq!(
        screen
            .iter()
            .filter(|l| l.contains("waiting for the first interval"))
            .count(),
        3
    );
}

#[test]
fn an_impossible_reading_does_not_flatten_the_chart() {
    let mut app = fixture::app();
    let mut wild = fixture::snapshot();
    wild.ts += 1.0;
    wild.events
        .get_mut(&crate::model::EventKey::NetTimers)
        .unwrap()
        .total_ns = u64::MAX / 2;
    app.push(wild);
    let screen = screen(&app, 80, 24);
    // Two CPUs: at most 200% of one.
    line(&screen, "│200.0%│");
}
