//! A host of sixteen CPUs: the per-CPU view at the smallest screen and at
//! a wide one keeps every column, says which CPUs it shows, and shows each
//! one with its figures as the rows scroll.

use super::*;
use crate::frontends::tui::format;
use crate::model::Snapshot;

const CPUS: usize = 16;

/// The fixture's interval with each event's time spread over sixteen CPUs:
/// CPU `c` has `c + 1` ms of each, `(c + 1) / 10` % of that CPU.
fn sixteen() -> Snapshot {
    let mut s = fixture::snapshot();
    s.cpus = CPUS;
    for time in s.events.values_mut() {
        time.per_cpu_ns = (1..=CPUS as u64).map(|c| c * 1_000_000).collect();
        time.total_ns = time.per_cpu_ns.iter().sum();
    }
    s
}

/// CPU `cpu`'s row as the per-CPU view writes it.
fn cpu_row(cpu: usize) -> Vec<String> {
    let share = format::percent((cpu + 1) as f64 / 10.0);
    std::iter::once(format!("cpu{cpu}"))
        .chain(std::iter::repeat_n(share, 5))
        .collect()
}

#[test]
fn the_per_cpu_view_of_sixteen_cpus_shows_each_and_says_which() {
    for (width, height) in [(80, 24), (120, 40), (250, 60)] {
        let mut app = fixture::app_showing(sixteen());
        let totals = screen(&app, width, height);
        has_row(&totals, &["events:", "host", "totals,", "16", "CPUs,"]);
        // 136 ms of 16 CPUs x 1 s, of one CPU.
        for key in EventKey::ALL {
            has_row(&totals, &[key.name(), "0.85%", "13.6%"]);
        }
        app.toggle_per_cpu();
        let mut seen = std::collections::BTreeSet::new();
        for selected in 0..CPUS {
            app.events_row = selected;
            let shown = screen(&app, width, height);
            has_row(
                &shown,
                &["16", "CPUs,", "1.00", "s,", "sorted", "by", "cpu"],
            );
            has_row(
                &shown,
                &["cpu", "net_rx", "net_tx", "send", "recv", "timers"],
            );
            // The panel keeps five rows; the selected one is among them,
            // and its bottom border names them.
            let last = selected.max(4);
            line(
                &shown,
                &format!("rows {}-{} of 16: tab, Up/Down", last - 3, last + 1),
            );
            for cpu in last - 4..=last {
                let row = cpu_row(cpu);
                has_row(&shown, &row.iter().map(String::as_str).collect::<Vec<_>>());
                seen.insert(cpu);
            }
            // The panels cut nothing (the key hints of the status line
            // below them are cut at a word by design).
            for line in &shown[..shown.len() - 1] {
                assert!(
                    !words(line).iter().any(|w| w.ends_with('…')),
                    "a cut word at {width}x{height}:\n{}",
                    shown.join("\n")
                );
            }
        }
        assert_eq!(seen.len(), CPUS, "every CPU at {width}x{height}");
    }
}

#[test]
fn a_host_whose_cpus_all_fit_has_no_scroll_note() {
    let mut app = fixture::app();
    app.toggle_per_cpu();
    let shown = screen(&app, 80, 24).join("\n");
    assert!(!shown.contains("rows "), "{shown}");
}
