use super::*;
use crate::frontends::flame::{pprof, Labels, Scope, Weight};
use crate::model::{EventKey, SampleContext, SamplingStats, Snapshot, StackCount};

fn snapshot(ts: f64, rx_ns: u64, stacks: Vec<StackCount>) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 1);
    s.ts = ts;
    s.interval_s = 1.0;
    s.events.get_mut(&EventKey::NetRxSoftirq).unwrap().total_ns = rx_ns;
    s.sampling = Some(SamplingStats {
        frequency_hz: 250,
        ..Default::default()
    });
    s.stacks = stacks;
    s
}

fn measured() -> Measured {
    Measured {
        host: "box".into(),
        kernel: "6.8.0".into(),
    }
}

fn pprof_of(snapshots: &[Snapshot]) -> pprof::proto::Profile {
    let labels = Labels {
        title: String::new(),
        subtitle: String::new(),
        estimated: false,
    };
    pprof::profile(snapshots, &labels, Weight::Time, Scope::All)
}

fn two_snapshots() -> Vec<Snapshot> {
    let tcp = ["net_rx_action", "__napi_poll", "tcp_v4_rcv"];
    let bridge = ["net_rx_action", "__napi_poll", "br_handle_frame"];
    vec![
        snapshot(
            1_700_000_001.0,
            1_000,
            vec![
                StackCount::of(SampleContext::NetRx, &tcp, 2),
                StackCount::of(SampleContext::NetRx, &bridge, 1),
            ],
        ),
        snapshot(
            1_700_000_002.0,
            501,
            vec![StackCount::of(SampleContext::NetRx, &tcp, 3)],
        ),
    ]
}

/// The values of the profile whose sample type is `kind`, summed.
fn total(request: &ExportProfilesServiceRequest, kind: &str) -> i64 {
    let strings = &request.dictionary.as_ref().unwrap().string_table;
    request.resource_profiles[0].scope_profiles[0]
        .profiles
        .iter()
        .filter(|p| strings[p.sample_type.unwrap().type_strindex as usize] == kind)
        .flat_map(|p| p.samples.iter().flat_map(|s| s.values.iter()))
        .sum()
}

#[test]
fn two_profiles_hold_the_pprof_profiles_time_and_samples() {
    let snapshots = two_snapshots();
    let pprof = pprof_of(&snapshots);
    let request = request(&pprof, &measured());
    let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
    assert_eq!(profiles.len(), 2);
    assert_eq!(total(&request, "cpu"), 1_501, "every exact nanosecond");
    assert_eq!(total(&request, "samples"), 6);
    for profile in profiles {
        assert_eq!(profile.samples.len(), pprof.sample.len());
        assert_eq!(profile.time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(profile.duration_nano, 2_000_000_000);
        assert_eq!(profile.profile_id.len(), 16);
    }
    assert_ne!(profiles[0].profile_id, profiles[1].profile_id);
}

#[test]
fn frames_are_names_and_never_addresses() {
    let request = request(&pprof_of(&two_snapshots()), &measured());
    let dictionary = request.dictionary.unwrap();
    let name = |location: &otlp::Location| {
        let function = &dictionary.function_table[location.lines[0].function_index as usize];
        dictionary.string_table[function.name_strindex as usize].clone()
    };
    assert!(dictionary.location_table.iter().all(|l| l.address == 0));
    assert!(dictionary
        .mapping_table
        .iter()
        .all(|m| m.memory_start == 0 && m.memory_limit == 0 && m.file_offset == 0));
    // Each table starts with its zero value, as the proto requires.
    assert_eq!(dictionary.stack_table[0], otlp::Stack::default());
    assert_eq!(
        dictionary.attribute_table[0],
        otlp::KeyValueAndUnit::default()
    );
    assert_eq!(dictionary.location_table[0], otlp::Location::default());
    let stack = &dictionary.stack_table[1];
    let names: Vec<String> = stack
        .location_indices
        .iter()
        .map(|&i| name(&dictionary.location_table[i as usize]))
        .collect();
    assert_eq!(names.last().unwrap(), "net_rx_action", "leaf first");
}

#[test]
fn samples_carry_context_category_and_cpu_and_the_resource_says_who() {
    let request = request(&pprof_of(&two_snapshots()), &measured());
    let dictionary = request.dictionary.as_ref().unwrap();
    let keys: Vec<&str> = dictionary.attribute_table[1..]
        .iter()
        .map(|a| dictionary.string_table[a.key_strindex as usize].as_str())
        .collect();
    assert!(keys.contains(&"context") && keys.contains(&"category"));
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    let attribute = |key: &str| {
        resource
            .attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.clone())
            .and_then(|v| v.value)
    };
    let text = |s: &str| Some(any_value::Value::StringValue(s.into()));
    assert_eq!(attribute("host.name"), text("box"));
    assert_eq!(attribute("os.type"), text("linux"));
    assert_eq!(attribute("os.version"), text("6.8.0"));
    assert_eq!(attribute("service.name"), text("netto"));
    assert_eq!(
        attribute("service.version"),
        text(env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_quiet_window_is_two_empty_profiles() {
    let request = request(&pprof_of(&[]), &measured());
    let profiles = &request.resource_profiles[0].scope_profiles[0].profiles;
    assert_eq!(profiles.len(), 2);
    assert!(profiles.iter().all(|p| p.samples.is_empty()));
}
