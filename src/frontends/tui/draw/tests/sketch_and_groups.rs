//! The sketch's panel, who pays' and the eBPF programs'.

use super::*;

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

fn with_programs(sketch: bool) -> App {
    let mut snapshot = fixture::snapshot();
    snapshot.network_programs = Some(fixture::network_programs());
    if sketch {
        snapshot.sketch = Some(fixture::sketch());
    }
    fixture::app_showing(snapshot)
}

#[test]
fn programs_panel_lists_the_hosts_programs_costliest_first() {
    for (width, height) in [(200, 60), (80, 24)] {
        let screen = screen(&with_programs(false), width, height);
        has_row(
            &screen,
            &[
                "eBPF",
                "programs",
                "(counted",
                "over",
                "the",
                "whole",
                "interval)",
            ],
        );
        // 200 000 runs and 30 ms in 1 s: 150 ns a run, 3 % of a CPU.
        has_row(
            &screen,
            &[
                "xdp_fw", "200.0k", "150", "3.0%", "~12.5%", "xdp", "on", "eth0,", "link",
            ],
        );
        has_row(&screen, &["tc_lb", "100.0k", "80", "0.80%"]);
        let at = |needle: &str| screen.iter().position(|l| l.contains(needle)).unwrap();
        assert!(at("xdp_fw") < at("tc_lb"), "costliest first");
        has_row(&screen, &["NET_RX", "0.48", "100.0%", "25.0%", "60"]);
    }
    let wide = screen(&with_programs(true), 200, 60);
    has_row(
        &wide,
        &["program", "runs/s", "ns/run", "CPU", "share", "where"],
    );
    let at = |needle: &str| wide.iter().position(|l| l.contains(needle)).unwrap();
    assert_eq!(
        at("breakdown,"),
        at("eBPF programs"),
        "side by side when wide"
    );
    assert_eq!(at("XDP sketch"), at("eBPF programs"));
}

#[test]
fn programs_panel_gives_way_when_narrow_or_idle() {
    let narrow = screen(&with_programs(true), 80, 24);
    assert!(
        !narrow.iter().any(|l| l.contains("eBPF programs")),
        "{}",
        narrow.join("\n")
    );
    line(&narrow, "XDP sketch");
    // Only netto's own sketch ran: no panel for it.
    let mut snapshot = fixture::snapshot();
    let mut programs = fixture::network_programs();
    programs.programs.retain(|p| p.own);
    snapshot.network_programs = Some(programs);
    let own = screen(&fixture::app_showing(snapshot), 200, 60);
    assert!(!own.iter().any(|l| l.contains("eBPF programs")));
}
