//! The events, breakdown, history and timers panels.

use super::*;

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
    snapshot.breakdown = breakdowns(&snapshot.stacks, &snapshot.events, &snapshot.modules, 499);
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
