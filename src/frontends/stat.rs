//! `netto stat` output: a readable table per interval, or one JSON object
//! per interval and line.

use std::fmt::Write as _;
use std::io::{self, Write};

use std::collections::BTreeMap;

use super::calibration_text::measured_agreement;
use super::label::printable;
use crate::model::{percent, Attribution, CpuTime, EventKey, Snapshot, SoftirqVector};

/// Per-CPU columns are shown up to this many CPUs; beyond, the table would
/// not fit a terminal and the JSON carries them anyway.
const MAX_CPU_COLUMNS: usize = 16;

/// One JSON object and a newline, flushed: the line-per-interval form of
/// every live command.
pub fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

pub fn write_table(out: &mut impl Write, snapshot: &Snapshot) -> io::Result<()> {
    out.write_all(render_table(snapshot).as_bytes())?;
    if let Some(sketch) = &snapshot.sketch {
        out.write_all(super::sketch::render_table(sketch).as_bytes())?;
    }
    out.flush()
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// One event's or vector's row; an estimate's total is marked `~`, has no
/// count, and ends with its error and the samples' agreement with the exact
/// time where the run measured that ([`crate::model::Calibration`]).
fn row(text: &mut String, name: &str, t: &CpuTime, s: &Snapshot, per_cpu: bool) {
    let (mark, count) = if t.estimated {
        ("~", "-".to_owned())
    } else {
        ("", t.count.to_string())
    };
    let _ = write!(
        text,
        "{name:<16} {:>11} {:>7.2} {count:>10}",
        format!("{mark}{}", ms(t.total_ns)),
        t.percent_of_cpu(s.interval_s),
    );
    if per_cpu {
        for &ns in &t.per_cpu_ns {
            let _ = write!(text, " {:>9}", ms(ns));
        }
    }
    if let Some(error_ns) = t.error_ns.filter(|_| t.estimated) {
        let _ = write!(text, "  estimated, +-{} ms", ms(error_ns));
    }
    if let Some(c) = t.calibration.filter(|_| t.estimated) {
        let _ = write!(text, ", {}", measured_agreement(&c, s.ts));
    }
    text.push('\n');
}

pub fn render_table(s: &Snapshot) -> String {
    let per_cpu = s.cpus <= MAX_CPU_COLUMNS;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "interval {:.3} s ending {:.3} (unix), backend {}, tier {}{}",
        s.interval_s,
        s.ts,
        s.backend,
        s.tier.name(),
        s.calibrating.map_or(String::new(), |back| format!(
            " (calibration interval: the run is in {})",
            back.name()
        ))
    );
    let mut header = format!(
        "{:<16} {:>11} {:>7} {:>10}",
        "EVENT", "TOTAL ms", "%CPU", "COUNT"
    );
    if per_cpu {
        for cpu in 0..s.cpus {
            let _ = write!(header, " {:>9}", format!("cpu{cpu} ms"));
        }
    }
    let _ = writeln!(text, "{header}");
    for key in EventKey::ALL {
        if let Some(t) = s.events.get(&key) {
            row(&mut text, key.name(), t, s, per_cpu);
        }
    }
    if s.softirq.is_empty() {
        let _ = writeln!(
            text,
            "softirq vectors and hardirq time: not measured in the {} tier",
            s.tier.name()
        );
    } else {
        let _ = writeln!(text, "{}", header.replacen("EVENT  ", "SOFTIRQ", 1));
        for vector in SoftirqVector::ALL {
            if let Some(t) = s.softirq.get(&vector) {
                row(&mut text, vector.name(), t, s, per_cpu);
            }
        }
        row(&mut text, "hardirq", &s.hardirq, s, per_cpu);
    }
    if !s.net_timer_callbacks.is_empty() {
        let callbacks: Vec<String> = s
            .net_timer_callbacks
            .iter()
            .map(|(name, ns)| format!("{name} {} ms", ms(*ns)))
            .collect();
        let _ = writeln!(text, "net_timers by callback: {}", callbacks.join(", "));
    }
    if let Some(attribution) = &s.attribution {
        who_pays(&mut text, attribution, s.interval_s);
    }
    let o = &s.overhead;
    let _ = write!(text, "netto cost: ");
    if let Some(cost) = o.cost_percent {
        let _ = write!(text, "{cost:.3}% of a CPU");
        if o.estimated {
            let _ = write!(text, " (estimated, +-{:.3}%)", o.error_percent);
        }
        text.push_str(": ");
    }
    let _ = write!(
        text,
        "process {} ms ({:.3}%)",
        ms(o.process_cpu_ns),
        percent(o.process_cpu_ns, s.interval_s)
    );
    if o.bpf_stats {
        let runs: u64 = o.programs.iter().map(|p| p.run_count).sum();
        let _ = write!(
            text,
            ", BPF programs {} ms ({:.3}%, {} runs, {:.0} ns/run, statistics on {:.2} s)",
            ms(o.bpf_run_time_ns),
            percent(o.bpf_run_time_ns, s.interval_s),
            runs,
            if runs > 0 {
                o.bpf_run_time_ns as f64 / runs as f64
            } else {
                0.0
            },
            o.bpf_stats_held_s
        );
    } else {
        text.push_str(", BPF program statistics off (not in the cost)");
    }
    text.push('\n');
    if let Some(b) = &s.budget {
        let state = match (b.over, b.at_floor, s.calibrating.is_some()) {
            (true, _, true) => "over in this calibration interval, not judged",
            (true, true, false) => "over, every knob at its floor",
            (true, false, false) => "over",
            (false, _, _) => "kept",
        };
        let _ = writeln!(
            text,
            "netto budget: {} % of a CPU, {state} ({} steps down, {} up)",
            b.percent, b.steps_down, b.steps_up
        );
    }
    if s.losses.any() {
        let _ = writeln!(
            text,
            "netto lost: {}",
            s.losses.describe(|kind| kind.name).join(", ")
        );
    }
    text.push('\n');
    text
}

/// Room for a group's label in the table; the full name follows last.
const LABEL_WIDTH: usize = 24;

/// The attribution table: each group's time per event, then what no group
/// claimed.
fn who_pays(text: &mut String, a: &Attribution, interval_s: f64) {
    if !a.on {
        let _ = writeln!(
            text,
            "by {}: attribution off in this interval, all time unattributed",
            a.by.name()
        );
        return;
    }
    let _ = write!(
        text,
        "{:<LABEL_WIDTH$} {:>11} {:>7}",
        format!("BY {}", a.by.name().to_uppercase()),
        "TOTAL ms",
        "%CPU"
    );
    for key in EventKey::ALL {
        let _ = write!(text, " {:>10}", short_event(key));
    }
    let _ = writeln!(text, "  NAME");
    let mut row = |label: &str, events: &BTreeMap<EventKey, u64>, name: &str| {
        let total: u64 = events.values().sum();
        let label: String = printable(label).chars().take(LABEL_WIDTH).collect();
        let _ = write!(
            text,
            "{label:<LABEL_WIDTH$} {:>11} {:>7.2}",
            ms(total),
            percent(total, interval_s)
        );
        for key in EventKey::ALL {
            let _ = write!(text, " {:>10}", ms(events.get(&key).copied().unwrap_or(0)));
        }
        let _ = writeln!(text, "  {}", printable(name));
    };
    for group in &a.groups {
        row(&group.label, &group.events, &group.name);
    }
    row("unattributed", &a.unattributed, "");
}

/// An event's column title in ms, short enough for five columns.
fn short_event(key: EventKey) -> &'static str {
    match key {
        EventKey::NetRxSoftirq => "net_rx ms",
        EventKey::NetTxSoftirq => "net_tx ms",
        EventKey::SockSend => "send ms",
        EventKey::SockRecv => "recv ms",
        EventKey::NetTimers => "timers ms",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Calibration, Overhead};
    use std::collections::BTreeMap;

    fn snapshot() -> Snapshot {
        let t = |ns: Vec<u64>| CpuTime {
            total_ns: ns.iter().sum(),
            per_cpu_ns: ns,
            count: 3,
            ..CpuTime::default()
        };
        Snapshot {
            ts: 1_700_000_000.5,
            interval_s: 1.0,
            events: EventKey::ALL
                .iter()
                .map(|&k| (k, t(vec![1_000_000, 2_000_000])))
                .collect(),
            softirq: SoftirqVector::ALL
                .iter()
                .map(|&v| (v, t(vec![0, 500_000])))
                .collect(),
            hardirq: t(vec![100_000, 0]),
            net_timer_callbacks: BTreeMap::from([("tcp_pace_kick".into(), 250_000)]),
            overhead: Overhead {
                process_cpu_ns: 400_000,
                bpf_stats: true,
                bpf_stats_held_s: 0.1,
                bpf_run_time_ns: 3_600_000,
                bpf_error_ns: 200_000,
                cost_percent: Some(0.4),
                estimated: true,
                error_percent: 0.02,
                programs: vec![],
                ..Overhead::default()
            },
            ..Snapshot::empty("tracepoint", 2)
        }
    }

    #[test]
    fn table_shows_every_event_vector_and_overhead() {
        let text = render_table(&snapshot());
        for key in EventKey::ALL {
            assert!(text.contains(key.name()), "{} missing:\n{text}", key.name());
        }
        for vector in SoftirqVector::ALL {
            assert!(text.contains(vector.name()));
        }
        assert!(text.contains("3.000"), "total of 1+2 ms:\n{text}");
        assert!(
            text.contains(" 0.30 "),
            "3 ms is 0.3% of a CPU-second:\n{text}"
        );
        assert!(text.contains("tcp_pace_kick 0.250 ms"));
        assert!(
            text.contains("netto cost: 0.400% of a CPU (estimated, +-0.020%): process 0.400 ms"),
            "{text}"
        );
        assert!(text.contains("BPF programs 3.600 ms (0.360%"), "{text}");
        assert!(!text.contains("lost"), "nothing lost, no line:\n{text}");
    }

    #[test]
    fn estimates_are_marked_with_their_error_and_no_count() {
        let mut s = snapshot();
        s.tier = crate::model::Tier::Sampled;
        for time in s.events.values_mut() {
            time.estimated = true;
            time.error_ns = Some(1_500_000);
            time.count = 0;
        }
        s.softirq.clear();
        let text = render_table(&s);
        assert!(text.starts_with("interval 1.000 s"), "{text}");
        assert!(text.lines().next().unwrap().ends_with("tier sampled"));
        let send = text.lines().find(|l| l.starts_with("sock_send")).unwrap();
        assert!(send.contains("~3.000"), "{send}");
        assert!(send.contains(" - "), "no count for an estimate: {send}");
        assert!(send.ends_with("estimated, +-1.500 ms"), "{send}");
        // With the samples' agreement where the run measured the event.
        s.events.get_mut(&EventKey::NetTimers).unwrap().calibration = Some(Calibration {
            agreement: 0.784,
            samples: 400,
            ts: s.ts - 120.0,
        });
        let text = render_table(&s);
        let timers = text
            .lines()
            .find(|l| l.starts_with("net_timers") && l.contains("estimated"))
            .unwrap();
        assert!(
            timers.ends_with("estimated, +-1.500 ms, measured agreement 0.78 +-0.04, 2 min ago"),
            "{timers}"
        );
        assert!(text.contains("softirq vectors and hardirq time: not measured in the sampled tier"));
        assert!(!text.contains("HRTIMER"), "{text}");
        // Exact rows carry no mark.
        let exact = render_table(&snapshot());
        assert!(exact.lines().next().unwrap().ends_with("tier exact"));
        assert!(
            !exact.contains('~') && !exact.contains("ms  estimated"),
            "{exact}"
        );
    }

    #[test]
    fn a_calibration_interval_names_the_tier_the_run_is_in() {
        let mut s = snapshot();
        s.calibrating = Some(crate::model::Tier::Softirq);
        let text = render_table(&s);
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with("tier exact (calibration interval: the run is in softirq)"),
            "{text}"
        );
        // Over the budget by design: not the budget exceeded.
        s.budget = Some(crate::model::BudgetStatus::over_at_floor(1.0));
        let budget = |s: &Snapshot| {
            render_table(s)
                .lines()
                .find(|l| l.starts_with("netto budget:"))
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            budget(&s),
            "netto budget: 1 % of a CPU, over in this calibration interval, not judged \
             (4 steps down, 0 up)"
        );
        s.calibrating = None;
        assert!(budget(&s).contains(", over, every knob at its floor ("));
    }

    #[test]
    fn losses_get_a_line_naming_each_kind() {
        let mut s = snapshot();
        s.losses.task_storage_failures = 2;
        s.losses.dropped_halves = 1;
        let text = render_table(&s);
        assert!(
            text.contains("\nnetto lost: 2 task_storage_failures, 1 dropped_halves\n"),
            "{text}"
        );
    }

    #[test]
    fn who_pays_lists_groups_then_unattributed() {
        let mut s = snapshot();
        let ms = |n: u64| n * 1_000_000;
        let events = |rx: u64, send: u64| {
            let mut e = Attribution::zero_events();
            e.insert(EventKey::NetRxSoftirq, rx);
            e.insert(EventKey::SockSend, send);
            e
        };
        s.attribution = Some(Attribution {
            by: crate::model::GroupBy::Cgroup,
            on: true,
            groups: vec![crate::model::Group {
                name: "/system.slice/docker-3f2a1b4c5d6e.scope".into(),
                label: "docker 3f2a1b4c5d6e".into(),
                events: events(ms(2), ms(1)),
            }],
            unattributed: events(ms(1), ms(2)),
        });
        let text = render_table(&s);
        let lines: Vec<&str> = text.lines().collect();
        let header = lines
            .iter()
            .position(|l| l.starts_with("BY CGROUP"))
            .unwrap();
        assert!(lines[header].contains("net_rx ms") && lines[header].ends_with("NAME"));
        let docker = lines[header + 1];
        assert!(docker.starts_with("docker 3f2a1b4c5d6e"), "{text}");
        assert!(
            docker.contains("     3.000 "),
            "total of 2 + 1 ms: {docker}"
        );
        assert!(docker.ends_with("/system.slice/docker-3f2a1b4c5d6e.scope"));
        assert!(lines[header + 2].starts_with("unattributed"), "{text}");

        s.attribution.as_mut().unwrap().on = false;
        assert!(render_table(&s).contains("by cgroup: attribution off in this interval"));
    }

    #[test]
    fn json_is_one_line_with_the_documented_shape() {
        let mut out = Vec::new();
        write_json(&mut out, &snapshot()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["backend"], "tracepoint");
        assert_eq!(v["events"]["net_rx_softirq"]["total_ns"], 3_000_000);
        assert_eq!(v["events"]["sock_send"]["per_cpu_ns"][1], 2_000_000);
        assert_eq!(v["softirq"]["NET_RX"]["per_cpu_ns"][1], 500_000);
        assert!(v["ts"].is_f64() && v["interval_s"].is_f64());
        assert!(v.get("sketch").is_none(), "no sketch, no key");
        assert_eq!(v["losses"]["recursion_misses"], 0);
        let back: Snapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(back, snapshot());
    }
}
