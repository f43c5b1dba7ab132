//! Stack samples as a pprof profile (gzip-compressed profile.proto), the
//! format Parca, Grafana Pyroscope, Polar Signals and `go tool pprof` read,
//! so netto's flame graphs reach the tools fleets already keep profiles in.
//!
//! Every sample carries two values: `samples/count` and `cpu/nanoseconds`.
//! The second is the exact event time, shared out as flame graphs in exact
//! time share it ([`super::exact_shares`]): within each snapshot, a
//! context's exact time goes to its stacks in proportion to their samples,
//! so the nanoseconds of a context add up to its measured time, not to
//! samples x period. The [`Weight`] says which of the two viewers show
//! first.
//!
//! Frames are kernel functions by name only: one function and one location
//! per name, every location address left at 0, so no kernel address can
//! leave netto this way either. A location's mapping is `[kernel.kallsyms]`,
//! or `[MODULE]` for a function of a module (`[bpf]` for BPF programs), as
//! perf names them. The sample context and the stack's category
//! are labels (`context`, `category`), not frames; so is the group a stack
//! was for (`group`) in a profile of every group ([`Scope::EachGroup`]).
//! A profile of one group ([`Scope::Group`]) holds its stacks and time
//! only.

use std::collections::HashMap;
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use super::folded::frame_label;
use super::{exact_shares, FlameError, Labels, Scope, Weight, UNATTRIBUTED_FRAME};
use crate::breakdown::{split_ns, Categorizer};
use crate::model::{SampleContext, Snapshot};

/// The messages of profile.proto that netto writes, declared here with the
/// field numbers of the published schema (github.com/google/pprof,
/// proto/profile.proto). Deriving them with prost keeps the schema in one
/// Rust file: no `.proto` compiler at build time, and no wire format
/// written by hand.
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Index 0 must be "".
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        /// String table indices of free-form notes.
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        /// String table index of the type (`cpu`) viewers show first.
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// `type` and `unit` are string table indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One per `sample_type`, in its order.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        /// Always 0 in netto's profiles: frames are names, never addresses.
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// The file name pprof tools show for the kernel's code, as perf names it.
pub const KERNEL_MAPPING: &str = "[kernel.kallsyms]";

/// Writes the stacks of `snapshots` as one gzip-compressed pprof profile,
/// `labels` as its comments. An empty profile (no samples) is still a valid
/// one: a scraper asking for a quiet minute gets an empty profile, not an
/// error.
pub fn write_pprof<'a>(
    snapshots: impl IntoIterator<Item = &'a Snapshot>,
    labels: &Labels,
    weight: Weight,
    scope: Scope<'a>,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let profile = profile(snapshots, labels, weight, scope);
    let mut gzip = GzEncoder::new(out, Compression::default());
    gzip.write_all(&profile.encode_to_vec())?;
    gzip.finish()?;
    Ok(())
}

/// One distinct stack of the profile and what it adds up to.
#[derive(Default)]
struct Totals {
    samples: u64,
    cpu_ns: u64,
}

/// The profile of `snapshots`, before encoding.
pub fn profile<'a>(
    snapshots: impl IntoIterator<Item = &'a Snapshot>,
    labels: &Labels,
    weight: Weight,
    scope: Scope<'a>,
) -> proto::Profile {
    let mut stacks: HashMap<StackKey<'_>, Totals> = HashMap::new();
    let mut modules: HashMap<&str, &str> = HashMap::new();
    let mut span: Option<(f64, f64)> = None;
    let mut frequency_hz = 0;
    for snapshot in snapshots {
        let start = snapshot.ts - snapshot.interval_s;
        span = Some(span.map_or((start, snapshot.ts), |(first, last)| {
            (first.min(start), last.max(snapshot.ts))
        }));
        if let Some(sampling) = &snapshot.sampling {
            frequency_hz = sampling.frequency_hz;
        }
        for (name, module) in &snapshot.modules {
            modules.entry(name).or_insert(module);
        }
        add_snapshot(snapshot, scope, &mut stacks);
    }

    let mut builder = Builder::default();
    builder.mapping(KERNEL_MAPPING);
    let mut sorted: Vec<_> = stacks.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut categorizer = Categorizer::default();
    let (context_key, category_key, cpu_key, group_key) = (
        builder.string("context"),
        builder.string("category"),
        builder.string("cpu"),
        builder.string("group"),
    );
    let sample = sorted
        .into_iter()
        .map(|((context, frames, cpu, group), totals)| proto::Sample {
            location_id: frames
                .iter()
                .rev()
                .map(|frame| {
                    let mapping = modules
                        .get(frame.as_str())
                        .map_or_else(|| KERNEL_MAPPING.to_owned(), |module| format!("[{module}]"));
                    builder.location(&frame_label(frame), &mapping)
                })
                .collect(),
            value: vec![
                saturating_i64(totals.samples),
                saturating_i64(totals.cpu_ns),
            ],
            label: [
                Some(builder.label(context_key, context.name())),
                Some(builder.label(category_key, categorizer.categorize(context, frames).name())),
                cpu.map(|cpu| builder.label(cpu_key, &cpu.to_string())),
                group.map(|group| builder.label(group_key, group)),
            ]
            .into_iter()
            .flatten()
            .collect(),
        })
        .collect();

    let value_type = |builder: &mut Builder, kind: &str, unit: &str| proto::ValueType {
        r#type: builder.string(kind),
        unit: builder.string(unit),
    };
    let sample_type = vec![
        value_type(&mut builder, "samples", "count"),
        value_type(&mut builder, "cpu", "nanoseconds"),
    ];
    let period_type = value_type(&mut builder, "cpu", "nanoseconds");
    let default_sample_type = match weight {
        Weight::Time => period_type.r#type,
        Weight::Samples => sample_type[0].r#type,
    };
    let comment = [&labels.title, &labels.subtitle]
        .map(|text| builder.string(text))
        .to_vec();
    let (start, end) = span.unwrap_or_default();
    proto::Profile {
        default_sample_type,
        sample_type,
        sample,
        mapping: builder.mappings,
        location: builder.locations,
        function: builder.functions,
        string_table: builder.strings,
        time_nanos: seconds_to_ns(start),
        duration_nanos: seconds_to_ns(end - start),
        period_type: Some(period_type),
        period: 1_000_000_000u64
            .checked_div(frequency_hz)
            .map_or(0, saturating_i64),
        comment,
    }
}

/// A sample of the profile: a stack of a context on one CPU (`None` for
/// recordings that did not keep the CPU), for a group (labelled only in a
/// profile of every group).
type StackKey<'a> = (SampleContext, &'a [String], Option<u32>, Option<&'a str>);

/// Adds one snapshot's stacks, each with its part of its context's exact
/// time in this snapshot under `scope` ([`exact_shares`]), and that part
/// split again among the CPUs the stack was sampled on.
fn add_snapshot<'a>(
    snapshot: &'a Snapshot,
    scope: Scope<'a>,
    stacks: &mut HashMap<StackKey<'a>, Totals>,
) {
    for (stack, cpu_ns) in exact_shares(snapshot, scope) {
        let context = stack.context;
        let group = (scope == Scope::EachGroup)
            .then(|| stack.group.as_deref().unwrap_or(UNATTRIBUTED_FRAME));
        if stack.cpus.is_empty() {
            let totals = stacks
                .entry((context, &stack.frames, None, group))
                .or_default();
            totals.samples += stack.count;
            totals.cpu_ns += cpu_ns;
            continue;
        }
        let per_cpu: Vec<u64> = stack.cpus.values().copied().collect();
        for ((&cpu, &samples), cpu_ns) in stack.cpus.iter().zip(split_ns(cpu_ns, &per_cpu)) {
            let totals = stacks
                .entry((context, &stack.frames, Some(cpu), group))
                .or_default();
            totals.samples += samples;
            totals.cpu_ns += cpu_ns;
        }
    }
}

/// The string table, mappings, functions and locations as they are handed
/// out. Function and location ids are the same number: one of each per
/// name.
struct Builder {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    mappings: Vec<proto::Mapping>,
    mapping_ids: HashMap<String, u64>,
    functions: Vec<proto::Function>,
    locations: Vec<proto::Location>,
    location_ids: HashMap<String, u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            strings: vec![String::new()],
            string_ids: HashMap::from([(String::new(), 0)]),
            mappings: Vec::new(),
            mapping_ids: HashMap::new(),
            functions: Vec::new(),
            locations: Vec::new(),
            location_ids: HashMap::new(),
        }
    }
}

impl Builder {
    fn string(&mut self, text: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(text.to_owned());
        self.string_ids.insert(text.to_owned(), id);
        id
    }

    /// The id of the mapping named `file`, made on first use.
    fn mapping(&mut self, file: &str) -> u64 {
        if let Some(&id) = self.mapping_ids.get(file) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let filename = self.string(file);
        self.mappings.push(proto::Mapping {
            id,
            filename,
            has_functions: true,
            ..Default::default()
        });
        self.mapping_ids.insert(file.to_owned(), id);
        id
    }

    /// The location of function `name` in the mapping named `file`; a
    /// name keeps the mapping it was first seen with.
    fn location(&mut self, name: &str, file: &str) -> u64 {
        if let Some(&id) = self.location_ids.get(name) {
            return id;
        }
        let mapping_id = self.mapping(file);
        let id = self.locations.len() as u64 + 1;
        let name_id = self.string(name);
        self.functions.push(proto::Function {
            id,
            name: name_id,
            system_name: name_id,
            ..Default::default()
        });
        self.locations.push(proto::Location {
            id,
            mapping_id,
            line: vec![proto::Line {
                function_id: id,
                line: 0,
            }],
            ..Default::default()
        });
        self.location_ids.insert(name.to_owned(), id);
        id
    }

    fn label(&mut self, key: i64, value: &str) -> proto::Label {
        proto::Label {
            key,
            str: self.string(value),
            ..Default::default()
        }
    }
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn seconds_to_ns(seconds: f64) -> i64 {
    (seconds.max(0.0) * 1e9).round() as i64
}

#[cfg(test)]
mod tests {
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
            }],
            unattributed,
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
            for b in crate::breakdown::breakdowns(&snapshot.stacks, &snapshot.events, 99) {
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
}
