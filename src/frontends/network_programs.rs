//! The host's BPF programs on the network path as text: `stat`'s table
//! below the events, and `check`'s list of what is attached.

use std::fmt::Write as _;

use super::glossary::{self, Legend};
use super::label::printable;
use crate::model::{AttachPoint, NetworkProgram, NetworkPrograms, PriceBasis};

/// Programs shown in one interval's table, costliest first; the rest are
/// summed on one line (the JSON carries them all).
const MAX_ROWS: usize = 20;

/// Where a program runs, in one short phrase.
pub fn attach_text(at: &AttachPoint) -> String {
    let mut text = at.hook.clone();
    if let Some(iface) = &at.iface {
        let _ = write!(text, " on {}", printable(iface));
    }
    if let Some(mode) = &at.mode {
        let _ = write!(text, " ({mode})");
    }
    if let Some(cgroup) = at.cgroup_id {
        let _ = write!(text, " cgroup id {cgroup}");
    }
    text.push_str(if at.link { ", link" } else { ", no link" });
    text
}

/// Every place a program runs, or its type's hook when none was found.
pub fn places(p: &NetworkProgram) -> String {
    if p.attach.is_empty() {
        format!("{} (not located)", p.hook)
    } else {
        p.attach
            .iter()
            .map(attach_text)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A program's name as shown, `(netto)` after netto's own.
pub fn program_name(p: &NetworkProgram) -> String {
    let own = if p.own { " (netto)" } else { "" };
    format!("{}{own}", printable(&p.name))
}

/// Where the interval's runs and run times come from, in a few words.
pub fn basis_text(n: &NetworkPrograms) -> String {
    match n.basis {
        Some(PriceBasis::Slice) => format!(
            "estimated from {:.0} ms of BPF statistics",
            n.stats_held_s * 1e3
        ),
        Some(PriceBasis::WholeInterval) => "counted over the whole interval".to_owned(),
        None => "not priced (no BPF statistics)".to_owned(),
    }
}

/// The interval's programs, costliest first (ties by id).
pub fn costliest(n: &NetworkPrograms) -> Vec<&NetworkProgram> {
    let mut rows: Vec<&NetworkProgram> = n.programs.iter().collect();
    rows.sort_by(|a, b| b.run_time_ns.cmp(&a.run_time_ns).then(a.id.cmp(&b.id)));
    rows
}

/// Mean ns per run, or `-` when it did not run while statistics were on.
pub fn ns_per_run_text(p: &NetworkProgram) -> String {
    p.ns_per_run.map_or("-".to_owned(), |ns| format!("{ns:.0}"))
}

/// Its share of the event its hook runs in, marked as the estimate it is.
pub fn share_text(p: &NetworkProgram) -> String {
    p.share_percent
        .map_or("-".to_owned(), |s| format!("~{s:.1}%"))
}

/// `stat`'s table of the interval's programs.
pub fn render_table(n: &NetworkPrograms, interval_s: f64, legend: &mut Legend) -> String {
    let mut text = String::new();
    let basis = basis_text(n);
    let _ = writeln!(
        text,
        "eBPF programs on the network path: {} ({basis})",
        n.programs.len()
    );
    if n.programs.is_empty() && n.not_attached == 0 {
        return text;
    }
    let _ = writeln!(
        text,
        "  {:>6} {:<16} {:>10} {:>9} {:>8} {:>7}  {:<14} where",
        "id", "program", "runs/s", "ns/run", "% 1 CPU", "share", "of event"
    );
    let rows = costliest(n);
    for p in rows.iter().take(MAX_ROWS) {
        let event = p.event.map_or("-", |e| e.name());
        let _ = writeln!(
            text,
            "  {:>6} {:<16} {:>10.0} {:>9} {:>8.3} {:>7}  {:<14} {}",
            p.id,
            program_name(p),
            p.runs_per_s(interval_s),
            ns_per_run_text(p),
            p.cpu_percent(interval_s),
            share_text(p),
            event,
            places(p)
        );
    }
    if rows.len() > MAX_ROWS {
        let rest: u64 = rows[MAX_ROWS..].iter().map(|p| p.run_time_ns).sum();
        let _ = writeln!(
            text,
            "  {} more programs: {:.3} % of one CPU",
            rows.len() - MAX_ROWS,
            crate::model::percent(rest, interval_s)
        );
    }
    if n.not_attached > 0 {
        let _ = writeln!(
            text,
            "  {} more loaded, attached nowhere netto looks and not run (tail-call targets, \
             not yet attached)",
            n.not_attached
        );
    }
    legend.explain_word(&mut text, glossary::SHARE_OF_EVENT);
    text
}

/// `check`'s list: what is attached where, one program a line.
pub fn render_list(n: &NetworkPrograms) -> String {
    let mut text = String::new();
    for p in &n.programs {
        let _ = writeln!(
            text,
            "  {:>6} {:<16} {:<16} {}",
            p.id,
            program_name(p),
            p.prog_type,
            places(p)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventKey;

    fn program(id: u32, name: &str, run_time_ns: u64) -> NetworkProgram {
        NetworkProgram {
            id,
            name: name.into(),
            tag: "0011223344556677".into(),
            prog_type: "xdp".into(),
            hook: "xdp".into(),
            attach: vec![AttachPoint {
                hook: "xdp".into(),
                iface: Some("eth0".into()),
                mode: Some("driver".into()),
                cgroup_id: None,
                link: true,
            }],
            runs: 1000,
            run_time_ns,
            ns_per_run: Some(run_time_ns as f64 / 1000.0),
            event: Some(EventKey::NetRxSoftirq),
            share_percent: Some(12.5),
            ..NetworkProgram::default()
        }
    }

    #[test]
    fn the_table_lists_costliest_first_with_where_and_share() {
        let n = NetworkPrograms {
            basis: Some(PriceBasis::Slice),
            stats_held_s: 0.1,
            programs: vec![
                program(7, "cheap", 10_000),
                program(9, "dear\x1b[2J", 90_000),
            ],
            not_attached: 3,
        };
        let text = render_table(&n, 1.0, &mut Legend::default());
        let dear = text.find("dear").unwrap();
        assert!(dear < text.find("cheap").unwrap(), "{text}");
        assert!(text.contains("dear\\x1b[2J"), "printable names: {text}");
        assert!(text.contains("xdp on eth0 (driver), link"), "{text}");
        assert!(text.contains("~12.5%"), "{text}");
        assert!(text.contains("net_rx_softirq"), "{text}");
        assert!(text.contains("estimated from 100 ms"), "{text}");
        assert!(text.contains("3 more loaded"), "{text}");
        assert!(text.contains("share of event:"), "explained once: {text}");
    }

    #[test]
    fn a_program_found_nowhere_says_so() {
        let p = NetworkProgram {
            attach: Vec::new(),
            hook: "tc".into(),
            ..program(1, "classic", 0)
        };
        assert_eq!(places(&p), "tc (not located)");
    }
}
