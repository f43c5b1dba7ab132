use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use super::*;
use crate::model::{EventKey, SamplingStats, StackCount};

fn labels() -> Labels {
    Labels {
        title: "Kernel network stack CPU on box".into(),
        subtitle: "kernel 6.8, 2.0 s sampled at 250 Hz, tracepoint backend".into(),
        estimated: false,
    }
}

fn snapshot(ts: f64, rx_ns: u64, send_ns: u64, stacks: Vec<StackCount>) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 1);
    s.ts = ts;
    s.interval_s = 1.0;
    s.events.get_mut(&EventKey::NetRxSoftirq).unwrap().total_ns = rx_ns;
    s.events.get_mut(&EventKey::SockSend).unwrap().total_ns = send_ns;
    s.sampling = Some(SamplingStats {
        frequency_hz: 250,
        ..Default::default()
    });
    s.stacks = stacks;
    s
}

const TCP_RX: &[&str] = &["net_rx_action", "__napi_poll", "tcp_v4_rcv"];
const BRIDGE_RX: &[&str] = &["net_rx_action", "__napi_poll", "br_handle_frame"];
const SEND: &[&str] = &["__sys_sendto", "tcp_sendmsg"];

fn snapshots() -> Vec<Snapshot> {
    vec![
        snapshot(
            1_700_000_001.0,
            1_000,
            0,
            vec![
                StackCount::of(SampleContext::NetRx, TCP_RX, 2),
                StackCount::of(SampleContext::NetRx, BRIDGE_RX, 1),
            ],
        ),
        snapshot(
            1_700_000_002.0,
            500,
            90,
            vec![
                StackCount::of(SampleContext::NetRx, TCP_RX, 1),
                StackCount::of(SampleContext::SockSend, SEND, 3),
                StackCount::of(SampleContext::SockSend, &["unused"], 0),
            ],
        ),
    ]
}

fn decode(bytes: &[u8]) -> proto::Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .expect("gzip");
    proto::Profile::decode(raw.as_slice()).expect("profile.proto")
}

fn written(snapshots: &[Snapshot]) -> proto::Profile {
    let mut out = Vec::new();
    write_pprof(snapshots, &labels(), Weight::Time, Scope::All, &mut out).unwrap();
    decode(&out)
}

/// A sample as text: frames outermost first, labels, values.
type Decoded = (Vec<String>, BTreeMap<String, String>, Vec<i64>);

fn samples(p: &proto::Profile) -> Vec<Decoded> {
    let s = |i: i64| p.string_table[usize::try_from(i).unwrap()].clone();
    let function_name = |location: u64| {
        let location = p.location.iter().find(|l| l.id == location).unwrap();
        let line = &location.line[0];
        let function = p
            .function
            .iter()
            .find(|f| f.id == line.function_id)
            .unwrap();
        s(function.name)
    };
    p.sample
        .iter()
        .map(|sample| {
            let mut frames: Vec<String> = sample
                .location_id
                .iter()
                .map(|&l| function_name(l))
                .collect();
            frames.reverse();
            let labels = sample.label.iter().map(|l| (s(l.key), s(l.str))).collect();
            (frames, labels, sample.value.clone())
        })
        .collect()
}

fn strings(frames: &[&str]) -> Vec<String> {
    frames.iter().map(|&f| f.to_owned()).collect()
}

/// The second snapshot's sends were for process 7 (60 of its 90 ns)
/// and nobody known (30 ns), sampled 2:1.
fn attributed() -> Vec<Snapshot> {
    use crate::model::{Attribution, Group, GroupBy};
    let mut snapshots = snapshots();
    let s = &mut snapshots[1];
    s.stacks = vec![
        StackCount::of(SampleContext::SockSend, SEND, 2).for_group("7"),
        StackCount::of(SampleContext::SockSend, SEND, 1),
    ];
    let sends = |ns| {
        let mut events = Attribution::zero_events();
        events.insert(EventKey::SockSend, ns);
        events
    };
    let mut unattributed = sends(30);
    unattributed.insert(EventKey::NetRxSoftirq, 500);
    s.attribution = Some(Attribution {
        by: GroupBy::Process,
        on: true,
        groups: vec![Group {
            name: "7".into(),
            label: "iperf3".into(),
            events: sends(60),
            traffic: None,
        }],
        unattributed,
        unattributed_why: BTreeMap::new(),
    });
    snapshots
}

#[test]
fn a_groups_profile_holds_its_time_and_every_groups_labels_it() {
    let one = samples(&profile(
        &attributed(),
        &labels(),
        Weight::Time,
        Scope::Group("7"),
    ));
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].0, strings(SEND));
    assert_eq!(one[0].2, [2, 60]);
    assert!(!one[0].1.contains_key("group"));
    let each = samples(&profile(
        &attributed(),
        &labels(),
        Weight::Time,
        Scope::EachGroup,
    ));
    let sends: BTreeMap<String, Vec<i64>> = each
        .iter()
        .filter(|(_, labels, _)| labels["context"] == "sock_send")
        .map(|(_, labels, values)| (labels["group"].clone(), values.clone()))
        .collect();
    assert_eq!(
        sends,
        BTreeMap::from([
            ("7".to_owned(), vec![2, 60]),
            (UNATTRIBUTED_FRAME.to_owned(), vec![1, 30]),
        ])
    );
}

#[test]
fn header_fields_name_types_period_time_and_kernel_mapping() {
    let p = written(&snapshots());
    let s = |i: i64| p.string_table[usize::try_from(i).unwrap()].as_str();
    assert_eq!(p.string_table[0], "");
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    assert_eq!(s(p.default_sample_type), "cpu");
    let by_samples = profile(&snapshots(), &labels(), Weight::Samples, Scope::All);
    assert_eq!(
        by_samples.string_table[usize::try_from(by_samples.default_sample_type).unwrap()],
        "samples",
        "--weight samples: viewers show samples first"
    );
    let period_type = p.period_type.as_ref().unwrap();
    assert_eq!(
        (s(period_type.r#type), s(period_type.unit)),
        ("cpu", "nanoseconds")
    );
    assert_eq!(p.period, 4_000_000);
    assert_eq!(p.time_nanos, 1_700_000_000_000_000_000);
    assert_eq!(p.duration_nanos, 2_000_000_000);
    let comments: Vec<&str> = p.comment.iter().map(|&c| s(c)).collect();
    assert_eq!(
        comments,
        [labels().title.as_str(), labels().subtitle.as_str()]
    );
    assert_eq!(p.mapping.len(), 1, "no module in these stacks");
    assert_eq!(s(p.mapping[0].filename), KERNEL_MAPPING);
    assert!(p.mapping[0].has_functions);
    assert_eq!(
        (p.mapping[0].memory_start, p.mapping[0].memory_limit),
        (0, 0)
    );
}

#[test]
fn one_function_and_location_per_name_and_no_address() {
    let p = written(&snapshots());
    let names: Vec<&str> = p
        .function
        .iter()
        .map(|f| p.string_table[usize::try_from(f.name).unwrap()].as_str())
        .collect();
    let distinct: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(names.len(), distinct.len(), "{names:?}");
    let expected: BTreeSet<&str> = TCP_RX
        .iter()
        .chain(BRIDGE_RX)
        .chain(SEND)
        .copied()
        .collect();
    assert_eq!(distinct, expected);
    assert_eq!(p.location.len(), p.function.len());
    for location in &p.location {
        assert_eq!(location.address, 0);
        assert_eq!(location.mapping_id, p.mapping[0].id);
        assert_eq!(location.line.len(), 1);
        assert_eq!(location.line[0].function_id, location.id);
    }
}

#[test]
fn samples_carry_counts_exact_time_shares_and_labels() {
    let decoded = samples(&written(&snapshots()));
    let label = |context: &str, category: &str| {
        BTreeMap::from([
            ("category".to_owned(), category.to_owned()),
            ("context".to_owned(), context.to_owned()),
        ])
    };
    // First snapshot: 1000 ns over 2 + 1 samples -> 667 + 333 (largest
    // remainder); second: 500 ns all to the one NET_RX stack, 90 ns to
    // the send stack; the zero-count stack is left out.
    let expected: Vec<Decoded> = vec![
        (
            strings(TCP_RX),
            label("net_rx", "local_tcp"),
            vec![3, 667 + 500],
        ),
        (strings(BRIDGE_RX), label("net_rx", "bridge"), vec![1, 333]),
        (strings(SEND), label("sock_send", "tcp_output"), vec![3, 90]),
    ];
    let mut decoded = decoded;
    decoded.sort();
    let mut expected = expected;
    expected.sort();
    assert_eq!(decoded, expected);
}

#[test]
fn cpu_time_of_each_context_is_its_exact_time() {
    let snapshots = snapshots();
    let decoded = samples(&written(&snapshots));
    let mut by_context: BTreeMap<String, i64> = BTreeMap::new();
    for (_, labels, values) in &decoded {
        *by_context.entry(labels["context"].clone()).or_default() += values[1];
    }
    let mut exact: BTreeMap<String, i64> = BTreeMap::new();
    for snapshot in &snapshots {
        for b in
            crate::breakdown::breakdowns(&snapshot.stacks, &snapshot.events, &snapshot.modules, 99)
        {
            let ns: u64 = b.categories.iter().map(|c| c.cpu_ns).sum();
            *exact.entry(b.context.name().to_owned()).or_default() += ns as i64;
        }
    }
    assert_eq!(by_context, exact);
    assert_eq!(exact["net_rx"], 1_500);
}

#[test]
fn stacks_with_cpus_are_one_sample_per_cpu_with_its_share_of_time() {
    // 1000 ns of NET_RX: the TCP stack has 3 of 4 samples (750 ns),
    // taken 2 on CPU 0 and 1 on CPU 5 (500 + 250 ns).
    let mut tcp = StackCount::of(SampleContext::NetRx, TCP_RX, 3);
    tcp.cpus = [(0, 2), (5, 1)].into();
    let mut bridge = StackCount::of(SampleContext::NetRx, BRIDGE_RX, 1);
    bridge.cpus = [(1, 1)].into();
    let decoded = samples(&written(&[snapshot(1.0, 1_000, 0, vec![tcp, bridge])]));
    let by_cpu: Vec<(String, String, Vec<i64>)> = decoded
        .into_iter()
        .map(|(frames, labels, values)| {
            (
                frames.last().unwrap().clone(),
                labels["cpu"].clone(),
                values,
            )
        })
        .collect();
    assert_eq!(
        by_cpu,
        [
            ("br_handle_frame".to_owned(), "1".to_owned(), vec![1, 250]),
            ("tcp_v4_rcv".to_owned(), "0".to_owned(), vec![2, 500]),
            ("tcp_v4_rcv".to_owned(), "5".to_owned(), vec![1, 250]),
        ]
    );
}

#[test]
fn module_functions_sit_in_their_modules_mapping() {
    let mut snapshots = snapshots();
    snapshots[0].modules = BTreeMap::from([("br_handle_frame".into(), "bridge".into())]);
    snapshots[1].modules = BTreeMap::from([("tcp_sendmsg".into(), "bpf".into())]);
    let p = written(&snapshots);
    let s = |i: i64| p.string_table[usize::try_from(i).unwrap()].as_str();
    let mapping_of = |function: &str| {
        let f = p.function.iter().find(|f| s(f.name) == function).unwrap();
        let location = p.location.iter().find(|l| l.id == f.id).unwrap();
        let mapping = p
            .mapping
            .iter()
            .find(|m| m.id == location.mapping_id)
            .unwrap();
        assert!(mapping.has_functions);
        assert_eq!((mapping.memory_start, mapping.memory_limit), (0, 0));
        s(mapping.filename)
    };
    assert_eq!(mapping_of("br_handle_frame"), "[bridge]");
    assert_eq!(mapping_of("tcp_sendmsg"), "[bpf]");
    assert_eq!(mapping_of("tcp_v4_rcv"), KERNEL_MAPPING);
    assert_eq!(mapping_of("__sys_sendto"), KERNEL_MAPPING);
    let files: BTreeSet<&str> = p.mapping.iter().map(|m| s(m.filename)).collect();
    assert_eq!(files, BTreeSet::from([KERNEL_MAPPING, "[bridge]", "[bpf]"]));
    let ids: BTreeSet<u64> = p.mapping.iter().map(|m| m.id).collect();
    assert_eq!(ids.len(), 3);
}

#[test]
fn address_looking_frames_are_unknown() {
    let p = written(&[snapshot(
        2.0,
        10,
        0,
        vec![StackCount::of(
            SampleContext::NetRx,
            &["ffffffff81a2b3c4", "net_rx_action"],
            1,
        )],
    )]);
    assert_eq!(samples(&p)[0].0, ["[unknown]", "net_rx_action"]);
    assert!(!p.string_table.iter().any(|s| s.contains("ffffffff")));
}

#[test]
fn no_samples_is_an_empty_valid_profile() {
    let p = written(&[]);
    assert!(p.sample.is_empty() && p.function.is_empty());
    assert_eq!(p.sample_type.len(), 2);
    assert_eq!((p.period, p.time_nanos, p.duration_nanos), (0, 0, 0));
}
