use super::drawings::{clock, take_window};
use super::*;
use crate::frontends::flame::pprof;
use crate::model::SampleContext;
use crate::source::Origin;

fn state_with(history_s: f64) -> State {
    let info = SourceInfo {
        host: "box".into(),
        kernel: "6.8".into(),
        backend: "tracepoint".into(),
        frequency_hz: Some(99),
        origin: Origin::Live,
        notes: vec![],
    };
    let settings = ServeSettings {
        history_s,
        flame_s: 30.0,
        serve_budget_percent: 2.0,
        otlp: false,
    };
    State::new(info, settings).unwrap()
}

fn state() -> State {
    state_with(10.0)
}

fn snapshot(ts: f64, samples: u64) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 1);
    s.ts = ts;
    s.interval_s = 1.0;
    if samples > 0 {
        s.stacks = vec![StackCount::of(
            SampleContext::NetRx,
            &["net_rx_action", "tcp_v4_rcv"],
            samples,
        )];
    }
    s
}

fn drain(rx: &mut tokio::sync::mpsc::Receiver<Bytes>) -> Vec<String> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
        .collect()
}

fn window(seconds: f64) -> FlameWindow {
    FlameWindow::of(seconds).unwrap()
}

#[test]
fn history_and_events_leave_the_stacks_out() {
    let state = state();
    let mut client = state.subscribe(None).unwrap();
    state.publish(snapshot(1.0, 3));
    let events = drain(&mut client);
    assert_eq!(events.len(), 1);
    assert!(events[0].starts_with("event: snapshot\ndata: {"));
    assert!(!events[0].contains("tcp_v4_rcv"));
    let history = state.history(10.0);
    assert_eq!(history.len(), 1);
    let parsed: serde_json::Value = serde_json::from_slice(&history[0]).unwrap();
    assert_eq!(parsed["ts"], 1.0);
    assert!(parsed.get("stacks").is_none());
    // The stacks are still there for the latest snapshot and the graphs.
    let latest: Snapshot = serde_json::from_slice(&state.latest_json().unwrap()).unwrap();
    assert_eq!(latest.stacks.len(), 1);
    assert_eq!(latest, snapshot(1.0, 3));
    assert_eq!(
        &state.folded(window(10.0), Weight::Samples)[..],
        b"net_rx;net_rx_action;tcp_v4_rcv 3\n"
    );
}

#[test]
fn folded_stacks_in_exact_time_or_samples() {
    let state = state();
    let mut sampled = snapshot(1.0, 3);
    let rx = sampled
        .events
        .get_mut(&crate::model::EventKey::NetRxSoftirq)
        .unwrap();
    rx.total_ns = 9_000;
    sampled
        .events
        .get_mut(&crate::model::EventKey::NetTimers)
        .unwrap()
        .total_ns = 500;
    state.publish(sampled);
    assert_eq!(
        &state.folded(window(10.0), Weight::Time)[..],
        &b"net_rx;net_rx_action;tcp_v4_rcv 9000\nnet_timers;[not sampled] 500\n"[..]
    );
    assert_eq!(
        &state.folded(window(10.0), Weight::Samples)[..],
        b"net_rx;net_rx_action;tcp_v4_rcv 3\n"
    );
}

#[test]
fn history_and_streams_share_one_serialization() {
    let state = state();
    state.publish(snapshot(1.0, 3));
    state.publish(snapshot(2.0, 3));
    let mut client = state.subscribe(Some(0.0)).unwrap();
    let event = client.try_recv().unwrap();
    let first = state.history(10.0);
    let again = state.history(10.0);
    // The same bytes, not a copy: the history's JSON lies inside the
    // event every stream client gets.
    assert_eq!(first[0].as_ptr(), again[0].as_ptr());
    let inside = event.as_ptr_range();
    assert!(inside.contains(&first[0].as_ptr()));
    assert_eq!(
        event,
        Bytes::from(format!(
            "event: snapshot\ndata: {}\n\n",
            std::str::from_utf8(&first[0]).unwrap()
        ))
    );
    assert_eq!(
        state.latest_json().unwrap().as_ptr(),
        state.latest_json().unwrap().as_ptr()
    );
}

#[test]
fn new_clients_get_what_they_missed_then_the_end() {
    let state = state();
    for ts in 1..=4 {
        state.publish(snapshot(f64::from(ts), 0));
    }
    let mut since = state.subscribe(Some(2.0)).unwrap();
    let mut latest = state.subscribe(None).unwrap();
    let missed = drain(&mut since);
    assert_eq!(missed.len(), 2);
    assert!(missed[0].contains("\"ts\":3.0"));
    let only = drain(&mut latest);
    assert_eq!(only.len(), 1);
    assert!(only[0].contains("\"ts\":4.0"));
    state.end();
    assert!(state.ended());
    assert_eq!(drain(&mut since), ["event: end\ndata: {}\n\n"]);
    assert!(since.is_closed());
    let mut late = state.subscribe(None).unwrap();
    assert_eq!(drain(&mut late).len(), 2);
    assert!(late.is_closed());
}

#[test]
fn only_the_offered_windows() {
    assert_eq!(FlameWindow::of(30.0), Some(FlameWindow::DEFAULT));
    assert_eq!(FlameWindow::DEFAULT.seconds(), 30.0);
    for seconds in FLAME_WINDOWS_S {
        assert_eq!(window(seconds).seconds(), seconds);
    }
    for seconds in [0.0, 29.999_999, 30.000_000_1, 301.0, f64::NAN] {
        assert_eq!(FlameWindow::of(seconds), None, "{seconds}");
    }
}

#[test]
fn flame_graph_drawn_once_per_snapshot_and_window() {
    let state = state();
    assert_eq!(
        state.flame_svg(window(10.0), Weight::Samples).unwrap_err(),
        FlameFailure::NoSamples
    );
    state.publish(snapshot(1.0, 5));
    let first = state.flame_svg(window(10.0), Weight::Samples).unwrap();
    assert_eq!(
        first.as_ptr(),
        state
            .flame_svg(window(10.0), Weight::Samples)
            .unwrap()
            .as_ptr()
    );
    let other = state.flame_svg(window(30.0), Weight::Samples).unwrap();
    assert_ne!(first.as_ptr(), other.as_ptr());
    state.publish(snapshot(2.0, 5));
    let second = state.flame_svg(window(10.0), Weight::Samples).unwrap();
    assert_ne!(first.as_ptr(), second.as_ptr());
    let text = String::from_utf8(second.to_vec()).unwrap();
    assert!(text.contains("tcp_v4_rcv"));
    assert!(text.contains("Kernel network stack CPU on box"));
    assert!(text.contains("last 2 s up to 00:00:02 UTC"), "{text}");
}

#[test]
fn profile_windows_round_up_to_a_few_up_to_the_kept_stacks() {
    assert_eq!(ProfileWindow::of(15.0).unwrap().seconds(), 15.0);
    assert_eq!(ProfileWindow::of(14.2).unwrap().seconds(), 15.0);
    assert_eq!(ProfileWindow::of(7.0).unwrap().seconds(), 10.0);
    assert_eq!(ProfileWindow::of(0.001).unwrap().seconds(), 1.0);
    assert_eq!(ProfileWindow::of(300.0).unwrap().seconds(), 300.0);
    for bad in [0.0, -1.0, 300.5, f64::NAN, f64::INFINITY] {
        assert_eq!(ProfileWindow::of(bad), None, "{bad}");
    }
    // Whatever windows clients ask for, a snapshot has a few profiles.
    let distinct: std::collections::BTreeSet<u32> = (1..=300)
        .map(|s| ProfileWindow::of(f64::from(s)).unwrap().0)
        .collect();
    assert_eq!(distinct.len(), PROFILE_WINDOWS_S.len());
}

#[test]
fn profile_encoded_once_per_snapshot_and_window_with_exact_time() {
    let state = state();
    let mut first = snapshot(1.0, 4);
    first
        .events
        .get_mut(&crate::model::EventKey::NetRxSoftirq)
        .unwrap()
        .total_ns = 8_000;
    state.publish(first);
    let window = ProfileWindow::of(10.0).unwrap();
    let profile = state.pprof(window, Weight::Time);
    assert_eq!(profile.as_ptr(), state.pprof(window, Weight::Time).as_ptr());
    let other = state.pprof(ProfileWindow::of(15.0).unwrap(), Weight::Time);
    assert_ne!(profile.as_ptr(), other.as_ptr());
    // The kept stacks still know the exact time they stand for.
    let mut gz = flate2::read::GzDecoder::new(&profile[..]);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut gz, &mut bytes).unwrap();
    let decoded: pprof::proto::Profile = prost::Message::decode(&bytes[..]).unwrap();
    let values: Vec<Vec<i64>> = decoded.sample.iter().map(|s| s.value.clone()).collect();
    assert_eq!(values, [vec![4, 8_000]]);
    state.publish(snapshot(2.0, 1));
    assert_ne!(profile.as_ptr(), state.pprof(window, Weight::Time).as_ptr());
}

#[test]
fn drawing_does_not_hold_the_history() {
    let state = Arc::new(state());
    state.publish(snapshot(1.0, 5));
    // While a window is being drawn, snapshots still arrive and the
    // history is read.
    let drawing = state.flames[0][Weight::Samples as usize].svg.get(
        &state,
        |r| take_window(r, window(10.0)),
        |part| {
            state.publish(snapshot(2.0, 5));
            assert_eq!(state.history(10.0).len(), 2);
            Ok(Bytes::from(
                part.towers(Weight::Samples)[0].width.to_string(),
            ))
        },
    );
    // The drawing is of what was taken, and stale now.
    assert_eq!(drawing.unwrap(), "5");
    assert!(state
        .flame_svg(window(10.0), Weight::Samples)
        .unwrap()
        .starts_with(b"<?xml"));
}

#[test]
fn stacks_are_kept_as_long_as_the_history() {
    for (history_s, kept) in [(3600.0, 400), (100.0, 100)] {
        let state = state_with(history_s);
        for ts in 1..=400 {
            state.publish(snapshot(f64::from(ts), 1));
        }
        let recent = state.read();
        assert_eq!(recent.summaries.len(), kept);
        assert_eq!(recent.stacks.len(), kept);
    }
    let state = state_with(3600.0);
    for ts in 1..=400 {
        state.publish(snapshot(f64::from(ts), 1));
    }
    assert_eq!(
        &state.folded(window(300.0), Weight::Samples)[..],
        b"net_rx;net_rx_action;tcp_v4_rcv 300\n"
    );
}

/// A recording of the last N seconds holds the snapshots the history
/// endpoint gives for N, whole: their stacks back in, and the header
/// of the source, checked as `load` checks a file.
#[test]
fn a_recording_of_the_last_seconds_is_the_history_with_its_stacks() {
    let state = state();
    assert_eq!(state.recording(10.0), None);
    for ts in 1..=12 {
        let mut s = snapshot(f64::from(ts), u64::try_from(ts).unwrap());
        s.modules.insert("tcp_v4_rcv".into(), "vmlinux".into());
        state.publish(s);
    }
    let file = state.recording(4.0).unwrap().unwrap();
    let recording = crate::recording::parse(&file).unwrap();
    crate::recording::validate(&recording).unwrap();
    let history: Vec<Snapshot> = state
        .history(4.0)
        .iter()
        .map(|json| serde_json::from_slice(json).unwrap())
        .collect();
    assert_eq!(history.len(), 4);
    for (got, kept) in recording.snapshots.iter().zip(&history) {
        let whole = snapshot(kept.ts, kept.ts as u64);
        assert_eq!(got.stacks, whole.stacks);
        assert_eq!(got.modules["tcp_v4_rcv"], "vmlinux");
        assert_eq!(
            Snapshot {
                stacks: vec![],
                modules: Default::default(),
                ..got.clone()
            },
            *kept
        );
    }
    assert_eq!(recording.snapshots.len(), history.len());
    let header = &recording.header;
    assert_eq!((header.started, header.duration_s), (8.0, 4.0));
    assert_eq!((header.host.as_str(), header.frequency_hz), ("box", 99));
    assert_eq!(header.transport, "mmap");
    // Made once per snapshot and span.
    assert_eq!(
        file.as_ptr(),
        state.recording(4.0).unwrap().unwrap().as_ptr()
    );
    assert_ne!(
        file.as_ptr(),
        state.recording(5.0).unwrap().unwrap().as_ptr()
    );
}

/// The stacks the budget no longer keeps are left out, the snapshots
/// kept: the newest stacks go with the newest snapshots.
#[test]
fn a_recording_has_stacks_only_where_they_are_kept() {
    let state = state_with(60.0);
    {
        let mut recent = state.write();
        recent.stacks = History::with_budget(60.0, 1);
    }
    for ts in 1..=5 {
        state.publish(snapshot(f64::from(ts), 2));
    }
    let file = state.recording(60.0).unwrap().unwrap();
    let recording = crate::recording::parse(&file).unwrap();
    let stacks: Vec<usize> = recording.snapshots.iter().map(|s| s.stacks.len()).collect();
    assert_eq!(stacks, [0, 0, 0, 0, 1]);
}

#[test]
fn health_says_whether_snapshots_arrive() {
    let state = state();
    let health = state.health();
    assert_eq!(
        (health.status, health.source, health.last_snapshot_age_s),
        (HealthStatus::Starting, "live", None)
    );
    state.publish(snapshot(1.0, 0));
    let health = state.health();
    assert_eq!((health.status, health.snapshots), (HealthStatus::Ok, 1));
    assert!(health.last_snapshot_age_s.unwrap() < 5.0);
    // The last one arrived long ago.
    state.write().arrived = Some(Instant::now() - std::time::Duration::from_secs(14));
    assert_eq!(state.health().status, HealthStatus::Stale);
    assert!(!HealthStatus::Stale.healthy());
    state.end();
    assert_eq!(state.health().status, HealthStatus::Ended);
}

#[test]
fn clock_of_a_timestamp() {
    assert_eq!(clock(86_400.0 + 3_723.9), "01:02:03 UTC");
}
