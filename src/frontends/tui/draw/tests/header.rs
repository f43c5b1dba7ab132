//! The header's lines and the status line.

use super::*;

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
    sampled.breakdown = breakdowns(&sampled.stacks, &sampled.events, &sampled.modules, 499);
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

/// At 80 columns a loss pushed netto's cost off the edge (`netto cost
/// 0.98% +-0.0`, seen in the first-hour trial): the line wraps between
/// fields instead, and `top`, which serves nothing, gives no
/// measuring/serving split.
#[test]
fn a_loss_at_80_columns_wraps_the_cost_onto_a_line_of_its_own() {
    let mut lossy = fixture::snapshot();
    lossy.losses.missed_samples = 481;
    lossy.overhead.measuring_percent = Some(0.6);
    lossy.overhead.serving_percent = Some(0.0);
    let screen = screen(&fixture::app_showing(lossy.clone()), 80, 24);
    assert_eq!(
        words(&screen[1]),
        [
            "sampling", "499", "Hz", "dropped", "3", "lost", "481", "samples", "missed", "refresh",
            "1.00", "s"
        ]
    );
    assert_eq!(words(&screen[2]), ["netto", "cost", "0.60%", "+-0.03%"]);
    assert!(screen[3].contains("events:"), "{}", screen[3]);
    // Where it fits, one line as before.
    let wide = screen_of(lossy, 120, 40);
    assert_eq!(
        words(&wide[1])[9..],
        ["refresh", "1.00", "s", "netto", "cost", "0.60%", "+-0.03%"]
    );
    assert!(wide[2].contains("events:"), "{}", wide[2]);
}
