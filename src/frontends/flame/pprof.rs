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
    categorizer.learn_programs(&modules);
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
                Some(builder.label(category_key, &categorizer.stage(context, frames).name())),
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
mod tests;
