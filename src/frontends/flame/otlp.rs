//! Stack samples as OpenTelemetry profiles (OTLP profiles, proto v1.10.0,
//! package `v1development`), the signal an OpenTelemetry Collector,
//! Pyroscope, Elastic and OpenObserve ingest, so netto's profiles reach a
//! fleet that sends every signal through its collector.
//!
//! It is the pprof profile ([`super::pprof::profile`]) said again in OTLP's
//! terms, so both formats hold the same samples, the same exact time and
//! the same names: a pprof sample carries two values, an OTLP profile one,
//! so one export holds two profiles over one shared dictionary, `cpu`
//! `nanoseconds` (each context's exact time shared out over its stacks)
//! and `samples` `count`. Frames are kernel function names only: every
//! address and mapping range is 0. The pprof labels (`context`,
//! `category`, `cpu`, `group`) become sample attributes; who measured
//! what (host, kernel, netto's version) is the resource.
//!
//! The messages are opentelemetry-proto's, generated from the published
//! .proto files: no wire format is written here.

use std::collections::HashMap;

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development as otlp;
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde::{Deserialize, Serialize};

use super::pprof::proto as pprof;

/// Who measured: the resource of every export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// The host's name (`host.name`).
    pub host: String,
    /// The kernel's release (`os.version`).
    pub kernel: String,
}

/// The resource's attributes, as OpenTelemetry's semantic conventions name
/// them; `service.*` is netto itself.
fn resource(measured: &Measured) -> Resource {
    let attributes = [
        ("host.name", measured.host.as_str()),
        ("os.type", "linux"),
        ("os.version", measured.kernel.as_str()),
        ("service.name", "netto"),
        ("service.version", env!("CARGO_PKG_VERSION")),
    ]
    .into_iter()
    .map(|(key, value)| KeyValue {
        key: key.to_owned(),
        value: Some(string_value(value)),
        ..Default::default()
    })
    .collect();
    Resource {
        attributes,
        ..Default::default()
    }
}

fn string_value(text: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(text.to_owned())),
    }
}

/// The two profiles of `profile` (a pprof profile of one flame window) as
/// one export request.
pub fn request(profile: &pprof::Profile, measured: &Measured) -> ExportProfilesServiceRequest {
    let mut dictionary = Dictionary::new(profile);
    let samples: Vec<(i32, Vec<i32>, &[i64])> = profile
        .sample
        .iter()
        .map(|sample| {
            let stack = dictionary.stack(&sample.location_id);
            let attributes = sample
                .label
                .iter()
                .map(|label| dictionary.attribute(label.key, label.str))
                .collect();
            (stack, attributes, sample.value.as_slice())
        })
        .collect();
    let period_type = profile
        .period_type
        .as_ref()
        .map(|kind| dictionary.value_type(kind));
    let profiles = profile
        .sample_type
        .iter()
        .enumerate()
        .map(|(at, kind)| otlp::Profile {
            sample_type: Some(dictionary.value_type(kind)),
            samples: samples
                .iter()
                .map(|(stack, attributes, values)| otlp::Sample {
                    stack_index: *stack,
                    attribute_indices: attributes.clone(),
                    values: vec![values.get(at).copied().unwrap_or(0)],
                    ..Default::default()
                })
                .collect(),
            time_unix_nano: u64::try_from(profile.time_nanos).unwrap_or(0),
            duration_nano: u64::try_from(profile.duration_nanos).unwrap_or(0),
            period_type,
            period: profile.period,
            profile_id: profile_id(profile, at),
            ..Default::default()
        })
        .collect();
    ExportProfilesServiceRequest {
        resource_profiles: vec![otlp::ResourceProfiles {
            resource: Some(resource(measured)),
            scope_profiles: vec![otlp::ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "netto".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..Default::default()
                }),
                profiles,
                ..Default::default()
            }],
            ..Default::default()
        }],
        dictionary: Some(dictionary.finish()),
    }
}

/// A profile's id: 16 bytes, never all zero (which means none), distinct
/// per window and sample type, so a receiver that deduplicates keeps both.
fn profile_id(profile: &pprof::Profile, sample_type: usize) -> Vec<u8> {
    let mut id = Vec::with_capacity(16);
    id.extend_from_slice(&profile.time_nanos.to_be_bytes());
    id.extend_from_slice(&profile.duration_nanos.to_be_bytes());
    id[15] ^= 1 + sample_type as u8;
    id
}

/// The shared tables of an export. pprof's ids start at 1 and are dense,
/// and each OTLP table holds its zero value at index 0: so a pprof id is
/// its OTLP index, and only stacks and attributes are made here.
struct Dictionary<'a> {
    pprof: &'a pprof::Profile,
    stacks: Vec<otlp::Stack>,
    stack_ids: HashMap<&'a [u64], i32>,
    attributes: Vec<otlp::KeyValueAndUnit>,
    attribute_ids: HashMap<(i64, i64), i32>,
}

impl<'a> Dictionary<'a> {
    fn new(pprof: &'a pprof::Profile) -> Self {
        Dictionary {
            pprof,
            stacks: vec![otlp::Stack::default()],
            stack_ids: HashMap::new(),
            attributes: vec![otlp::KeyValueAndUnit::default()],
            attribute_ids: HashMap::new(),
        }
    }

    /// The stack of `locations` (leaf first, as in both formats).
    fn stack(&mut self, locations: &'a [u64]) -> i32 {
        let next = self.stacks.len() as i32;
        *self.stack_ids.entry(locations).or_insert_with(|| {
            self.stacks.push(otlp::Stack {
                location_indices: locations.iter().map(|&id| index(id)).collect(),
            });
            next
        })
    }

    /// The attribute of a pprof label's key and string value.
    fn attribute(&mut self, key: i64, value: i64) -> i32 {
        let next = self.attributes.len() as i32;
        let strings = &self.pprof.string_table;
        *self.attribute_ids.entry((key, value)).or_insert_with(|| {
            let text = usize::try_from(value)
                .ok()
                .and_then(|at| strings.get(at))
                .map_or("", String::as_str);
            self.attributes.push(otlp::KeyValueAndUnit {
                key_strindex: string_index(key),
                value: Some(string_value(text)),
                unit_strindex: 0,
            });
            next
        })
    }

    fn value_type(&self, kind: &pprof::ValueType) -> otlp::ValueType {
        otlp::ValueType {
            type_strindex: string_index(kind.r#type),
            unit_strindex: string_index(kind.unit),
        }
    }

    fn finish(self) -> otlp::ProfilesDictionary {
        let pprof = self.pprof;
        let mapping_table = std::iter::once(otlp::Mapping::default())
            .chain(pprof.mapping.iter().map(|mapping| otlp::Mapping {
                filename_strindex: string_index(mapping.filename),
                ..Default::default()
            }))
            .collect();
        let function_table = std::iter::once(otlp::Function::default())
            .chain(pprof.function.iter().map(|function| otlp::Function {
                name_strindex: string_index(function.name),
                system_name_strindex: string_index(function.system_name),
                ..Default::default()
            }))
            .collect();
        let location_table = std::iter::once(otlp::Location::default())
            .chain(pprof.location.iter().map(|location| {
                otlp::Location {
                    mapping_index: index(location.mapping_id),
                    address: 0,
                    lines: location
                        .line
                        .iter()
                        .map(|line| otlp::Line {
                            function_index: index(line.function_id),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            }))
            .collect();
        otlp::ProfilesDictionary {
            mapping_table,
            location_table,
            function_table,
            link_table: vec![otlp::Link::default()],
            string_table: pprof.string_table.clone(),
            attribute_table: self.attributes,
            stack_table: self.stacks,
        }
    }
}

/// A pprof id as an OTLP table index (ids are table positions, bounded by
/// the number of distinct frames, far below `i32::MAX`).
fn index(id: u64) -> i32 {
    i32::try_from(id).unwrap_or(0)
}

fn string_index(id: i64) -> i32 {
    i32::try_from(id).unwrap_or(0)
}

#[cfg(test)]
mod tests;
