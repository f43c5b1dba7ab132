use super::*;
use crate::model::{Calibration, Overhead, Tier};
use std::collections::BTreeMap;

fn render_table(s: &Snapshot) -> String {
    Table::default().render(s)
}

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
    assert!(
        text.contains("\nnet_timers by callback: tcp_pace_kick 0.250 ms (100%)\n"),
        "{text}"
    );
    // An estimate to the precision of its error: 0.400 +- 0.020.
    assert!(
        text.contains("netto cost: ~0.40% of one CPU (estimated, +-0.02%): process 0.400 ms"),
        "{text}"
    );
    assert!(text.contains("BPF programs ~3.6 ms (~0.36%"), "{text}");
    assert!(
        text.contains("priced from 0.10 s of BPF statistics"),
        "{text}"
    );
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
    // 3 ms +- 1.5 ms: to a tenth of a millisecond, per CPU too.
    assert_eq!(
        send.split_whitespace().collect::<Vec<_>>(),
        [
            "sock_send",
            "~3.0",
            "~0.30",
            "-",
            "~1.0",
            "~2.0",
            "estimated,",
            "+-1.5",
            "ms"
        ],
        "{send}"
    );
    assert!(text.contains(&format!("\n  {}\n", glossary::ESTIMATE.line())));
    // With the samples' agreement where the run measured the event.
    s.events.get_mut(&EventKey::NetTimers).unwrap().calibration = Some(Calibration {
        agreement: 0.784,
        samples: 400,
        ts: s.ts - 120.0,
        ..Default::default()
    });
    let text = render_table(&s);
    let timers = text
        .lines()
        .find(|l| l.starts_with("net_timers") && l.contains("estimated"))
        .unwrap();
    assert!(
        timers.ends_with("estimated, +-1.5 ms, calibration 0.78 +-0.04 (not applied), 2 min ago"),
        "{timers}"
    );
    assert!(text.contains(&format!("\n  {}\n", glossary::CALIBRATION.line())));
    assert!(text.contains("softirq vectors and hardirq time: not measured in the sampled tier"));
    assert!(!text.contains("HRTIMER"), "{text}");
    // Exact rows carry no mark.
    let exact = render_table(&snapshot());
    assert!(exact.lines().next().unwrap().ends_with("tier exact"));
    let rows = exact.lines().filter(|l| !l.starts_with("netto cost"));
    assert!(
        rows.clone().all(|l| !l.contains('~')) && !exact.contains("ms  estimated"),
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
        "netto budget: 1 % of one CPU, over in this calibration interval, not judged \
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
    let mut table = Table::default();
    let text = table.render(&s);
    assert!(
        text.contains("\nnetto lost: 2 task windows, 1 sample halves\n"),
        "{text}"
    );
    // Each kind explained once in the run, below its first use.
    for kind in &Losses::KINDS[..] {
        let line = format!("\n  {}: {}\n", kind.short, kind.meaning);
        assert_eq!(
            text.contains(&line),
            (kind.count)(&s.losses) > 0,
            "{}:\n{text}",
            kind.name
        );
    }
    let again = table.render(&s);
    assert!(again.contains("netto lost: 2 task windows"), "{again}");
    assert!(!again.contains(Losses::KINDS[0].meaning), "{again}");
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
            traffic: None,
        }],
        unattributed: events(ms(1), ms(2)),
        unattributed_why: BTreeMap::new(),
    });
    let text = render_table(&s);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("BY CGROUP"))
        .unwrap();
    assert!(lines[header].contains("net_rx ms") && lines[header].ends_with("  CGROUP PATH"));
    let docker = lines[header + 1];
    assert!(docker.starts_with("docker 3f2a1b4c5d6e"), "{text}");
    assert!(
        docker.contains("     3.000 "),
        "total of 2 + 1 ms: {docker}"
    );
    assert!(docker.ends_with("/system.slice/docker-3f2a1b4c5d6e.scope"));
    assert!(lines[header + 2].starts_with("unattributed"), "{text}");

    // By process, the last column is the process id.
    s.attribution.as_mut().unwrap().by = crate::model::GroupBy::Process;
    let text = render_table(&s);
    assert!(
        text.lines()
            .any(|l| l.starts_with("BY PROCESS") && l.ends_with("  PID")),
        "{text}"
    );
    s.attribution.as_mut().unwrap().on = false;
    assert!(render_table(&s).contains("by process: attribution off in this interval"));
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

#[test]
fn the_table_reads_for_a_newcomer() {
    let mut s = snapshot();
    s.net_timer_callbacks = BTreeMap::from([
        ("tcp_pace_kick".into(), 1_000_000),
        (TIMER_SOFTIRQ_OVERHEAD.into(), 4_000_000),
    ]);
    let mut table = Table::default();
    let text = table.render(&s);
    let lines: Vec<&str> = text.lines().collect();
    // The time of day, not unix seconds.
    assert_eq!(
        lines[0],
        format!(
            "interval 1.000 s ending {}, backend tracepoint, tier exact",
            time_of_day(s.ts, 3)
        )
    );
    // The share's heading says of what, and says it once.
    assert!(lines[1].starts_with("EVENT               TOTAL ms  % 1 CPU      COUNT"));
    assert_eq!(
        lines[2],
        format!("  % 1 CPU: {}", glossary::PERCENT_OF_ONE_CPU.meaning)
    );
    // hardirq is no softirq: a heading of its own.
    let softirq = lines.iter().position(|l| l.starts_with("SOFTIRQ")).unwrap();
    let hardirq = lines.iter().position(|l| l.starts_with("HARDIRQ")).unwrap();
    assert_eq!(hardirq, softirq + SoftirqVector::ALL.len() + 1, "{text}");
    assert!(lines[hardirq + 1].starts_with("all handlers "), "{text}");
    // The timers' heaviest part first, with what it is.
    let timers = lines
        .iter()
        .position(|l| l.starts_with("net_timers by"))
        .unwrap();
    assert_eq!(
        lines[timers],
        "net_timers by callback: timer_softirq_overhead 4.000 ms (80%), \
             tcp_pace_kick 1.000 ms (20%)"
    );
    assert_eq!(
        lines[timers + 1],
        format!("  {}", glossary::TIMER_SOFTIRQ_OVERHEAD.line())
    );
    // The next interval: the same table without the explanations.
    let next = table.render(&s);
    assert_eq!(next.lines().count(), text.lines().count() - 2, "{next}");
}

#[test]
fn brief_is_one_line_per_interval_under_a_heading() {
    let mut brief = Brief::new(false, 1.0);
    let first = brief.render(&snapshot());
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["TIME", "net_rx", "net_tx", "send", "recv", "timers", "total", "netto", "NOTE"]
    );
    assert!(
        lines[1].starts_with("  % of one CPU: every column but TIME"),
        "{first}"
    );
    // 3 ms of each event in 1 s; 15 ms in all; netto 0.40 +- 0.02.
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        [
            &time_of_day(1_700_000_000.5, 0),
            "0.30",
            "0.30",
            "0.30",
            "0.30",
            "0.30",
            "1.50",
            "~0.40"
        ]
    );
    assert_eq!(lines.len(), 3);
    // A measured interval a little short of the one asked for keeps
    // the TIME column as it was.
    let mut short = snapshot();
    short.interval_s = 0.999;
    let line = brief.render(&short);
    assert!(
        line.starts_with(&format!("{} ", time_of_day(short.ts, 0))),
        "{line}"
    );
    for _ in 0..Brief::REPEAT {
        let next = brief.render(&snapshot());
        assert_eq!(
            next.lines().count(),
            1,
            "no heading again into a file: {next}"
        );
    }
    // On a terminal the heading comes back every REPEAT lines.
    let mut terminal = Brief::new(true, 1.0);
    let headings = (0..=Brief::REPEAT)
        .map(|_| terminal.render(&snapshot()))
        .filter(|text| text.starts_with("TIME"))
        .count();
    assert_eq!(headings, 2);
}

#[test]
fn brief_marks_estimates_and_notes_what_is_unusual() {
    let mut s = snapshot();
    s.tier = Tier::Softirq;
    s.interval_s = 0.5;
    let send = s.events.get_mut(&EventKey::SockSend).unwrap();
    send.estimated = true;
    send.error_ns = Some(1_500_000);
    s.losses.task_storage_failures = 2;
    let mut brief = Brief::new(false, 0.5);
    let text = brief.render(&s);
    let line = text
        .lines()
        .find(|l| l.starts_with(&time_of_day(s.ts, 1)))
        .unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    // 3 ms +- 1.5 ms of 0.5 s: 0.6 +- 0.3 %.
    assert_eq!(cells[3], "~0.6", "{line}");
    assert_eq!(cells[1], "0.60", "{line}");
    assert!(
        line.ends_with("  tier softirq; lost 2 task windows"),
        "{line}"
    );
    assert!(
        text.contains(&format!("\n  {}\n", glossary::ESTIMATE.line())),
        "{text}"
    );
    assert!(text.contains(Losses::KINDS[0].meaning), "{text}");
}

/// A table as wide as its per-CPU columns make it fits the terminal, or
/// leaves them out and says why, once in the run; a pipe takes them all.
#[test]
fn per_cpu_columns_fit_the_terminal_or_are_left_out_once() {
    let wide = Snapshot {
        cpus: 4,
        events: EventKey::ALL
            .iter()
            .map(|&k| {
                (
                    k,
                    CpuTime {
                        total_ns: 4_000_000,
                        per_cpu_ns: vec![1_000_000; 4],
                        count: 3,
                        ..CpuTime::default()
                    },
                )
            })
            .collect(),
        ..snapshot()
    };
    let longest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap();
    let mut piped = Table::default();
    let text = piped.render(&wide);
    assert!(text.contains("cpu3 ms"), "{text}");
    assert!(!text.contains("left out"), "{text}");
    let needed = longest(&text);
    assert!(needed > 80, "4 CPUs' columns are wider than 80:\n{text}");

    let mut narrow = Table::default();
    narrow.fit_to(Some(80));
    let first = narrow.render(&wide);
    assert!(!first.contains("cpu0 ms"), "{first}");
    assert!(
        first.contains("per-CPU columns left out: 4 CPUs need 88 columns, the terminal has 80"),
        "{first}"
    );
    let heading = first.lines().find(|l| l.starts_with("EVENT")).unwrap();
    assert!(heading.chars().count() <= 80, "{heading}");
    let second = narrow.render(&wide);
    assert!(!second.contains("left out"), "said once a run:\n{second}");

    let mut roomy = Table::default();
    roomy.fit_to(Some(88));
    assert!(roomy.render(&wide).contains("cpu3 ms"));
}
