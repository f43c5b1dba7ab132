use super::*;
use crate::model::{Attribution, EventKey, Group, GroupBy, SampleContext, Snapshot, StackCount};
use crate::source::{Origin, SourceInfo};
use opentelemetry_proto::tonic::common::v1::any_value::Value;

fn state() -> State {
    let info = SourceInfo {
        host: "box".into(),
        kernel: "6.8".into(),
        backend: "tracepoint".into(),
        frequency_hz: Some(99),
        origin: Origin::Live,
        notes: vec![],
    };
    let settings = crate::frontends::web::state::ServeSettings {
        history_s: 60.0,
        flame_s: 30.0,
        serve_budget_percent: 2.0,
        otlp: true,
    };
    State::new(info, settings).unwrap()
}

/// A snapshot whose sends were 60 ns for group 7 and 30 ns for nobody.
fn attributed(ts: f64) -> Snapshot {
    let send = ["__sys_sendto", "tcp_sendmsg"];
    let mut s = Snapshot::empty("tracepoint", 1);
    s.ts = ts;
    s.interval_s = 1.0;
    s.events.get_mut(&EventKey::SockSend).unwrap().total_ns = 90;
    s.stacks = vec![
        StackCount::of(SampleContext::SockSend, &send, 2).for_group("7"),
        StackCount::of(SampleContext::SockSend, &send, 1),
    ];
    let sends = |ns| {
        let mut events = Attribution::zero_events();
        events.insert(EventKey::SockSend, ns);
        events
    };
    s.attribution = Some(Attribution {
        by: GroupBy::Process,
        on: true,
        groups: vec![Group {
            name: "7".into(),
            label: "iperf3".into(),
            events: sends(60),
            traffic: None,
        }],
        unattributed: sends(30),
        unattributed_why: Default::default(),
    });
    s
}

fn measured() -> Measured {
    Measured {
        host: "box".into(),
        kernel: "6.8".into(),
    }
}

/// Each `group` attribute's value and the cpu profile's time under it.
fn time_by_group(
    request: &opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest,
) -> Vec<(String, i64)> {
    let d = request.dictionary.as_ref().unwrap();
    let cpu = request.resource_profiles[0].scope_profiles[0]
        .profiles
        .iter()
        .find(|p| d.string_table[p.sample_type.unwrap().type_strindex as usize] == "cpu")
        .unwrap();
    let mut found: Vec<(String, i64)> = cpu
        .samples
        .iter()
        .map(|sample| {
            let group = sample
                .attribute_indices
                .iter()
                .map(|&i| &d.attribute_table[i as usize])
                .find(|a| d.string_table[a.key_strindex as usize] == "group")
                .and_then(|a| a.value.clone()?.value);
            let Some(Value::StringValue(group)) = group else {
                panic!("a sample without a group");
            };
            (group, sample.values[0])
        })
        .collect();
    found.sort();
    found
}

#[test]
fn where_attribution_runs_each_sample_says_its_group_and_windows_never_overlap() {
    let state = state();
    state.publish(attributed(1_700_000_001.0));
    let (first, newest) = draw(&state, f64::NEG_INFINITY, 1.0, &measured());
    assert_eq!(newest, Some(1_700_000_001.0));
    assert_eq!(
        time_by_group(&first),
        [("7".to_owned(), 60), ("[unattributed]".to_owned(), 30)]
    );
    // Nothing new: an empty window, still dated.
    let (quiet, none) = draw(&state, 1_700_000_001.0, 1.0, &measured());
    assert_eq!(none, None);
    let profiles = &quiet.resource_profiles[0].scope_profiles[0].profiles;
    assert!(profiles.iter().all(|p| p.samples.is_empty()));
    assert!(profiles
        .iter()
        .all(|p| p.time_unix_nano > 0 && p.duration_nano == 1_000_000_000));
    // The next snapshot alone in the next window.
    state.publish(attributed(1_700_000_002.0));
    let (next, _) = draw(&state, 1_700_000_001.0, 1.0, &measured());
    assert_eq!(time_by_group(&next).iter().map(|g| g.1).sum::<i64>(), 90);
}

#[test]
fn each_snapshot_taken_in_says_what_was_pushed() {
    let state = state();
    state.metrics.otlp_sent();
    state.metrics.otlp_dropped(Dropped::Timeout);
    state.metrics.otlp_dropped(Dropped::QueueFull);
    state.publish(attributed(1_700_000_001.0));
    let latest: serde_json::Value = serde_json::from_slice(&state.latest_json().unwrap()).unwrap();
    assert_eq!(
        latest["overhead"]["otlp"],
        serde_json::json!({"sent_windows": 1, "dropped_windows": 2})
    );
}
