//! The agent's hindsight: the last N seconds it keeps, written as a
//! recording (`GET /api/v1/recording`) that `report`, `top --replay` and
//! `serve --replay` read like one `netto record` wrote.
//!
//! The file is made one snapshot at a time from what the server keeps
//! apart (each snapshot's JSON without stacks, and its stacks), and each
//! is checked as [`crate::recording::load`] checks a file before it is
//! written, so a long history costs the file's bytes and one snapshot,
//! and what is served always loads.

use std::cell::RefCell;
use std::sync::Arc;

use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::model::{RecordingHeader, SchemaVersion, Snapshot};
use crate::recording::Checker;
use crate::source::SourceInfo;

/// One kept snapshot: its JSON without stacks, and its stacks when they
/// are still kept (a snapshot holding only stacks and modules).
pub struct Kept {
    pub ts: f64,
    pub interval_s: f64,
    pub json: actix_web::web::Bytes,
    pub stacks: Option<Arc<Snapshot>>,
}

/// The header of a recording of `kept` (oldest first, not empty) from
/// the source `info`: it starts where the first interval began and lasts
/// as long as the intervals together.
pub fn header(info: &SourceInfo, transport: Option<&str>, kept: &[Kept]) -> RecordingHeader {
    let started = kept.first().map_or(0.0, |k| (k.ts - k.interval_s).max(0.0));
    RecordingHeader {
        schema_version: SchemaVersion,
        netto_version: env!("CARGO_PKG_VERSION").to_owned(),
        host: info.host.clone(),
        kernel: info.kernel.clone(),
        started,
        duration_s: kept.iter().map(|k| k.interval_s).sum(),
        frequency_hz: info.frequency_hz.unwrap_or(0),
        backend: info.backend.clone(),
        // What `record` names when it does not sample.
        transport: transport.unwrap_or("mmap").to_owned(),
    }
}

/// The recording's JSON, or what is wrong with a kept snapshot (which
/// would be a fault of netto's: they come from its own source).
pub fn write(header: &RecordingHeader, kept: &[Kept]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let snapshots = Snapshots {
        header,
        kept: RefCell::new(kept.iter()),
    };
    let mut json = serde_json::Serializer::new(&mut out);
    let mut recording = json
        .serialize_struct("Recording", 2)
        .map_err(|e| e.to_string())?;
    recording
        .serialize_field("header", header)
        .and_then(|()| recording.serialize_field("snapshots", &snapshots))
        .and_then(|()| SerializeStruct::end(recording))
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// The kept snapshots as a JSON array, each made whole and checked as it
/// is written.
struct Snapshots<'a, I> {
    header: &'a RecordingHeader,
    kept: RefCell<I>,
}

impl<'a, I: Iterator<Item = &'a Kept>> Serialize for Snapshots<'a, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut checker = Checker::new(self.header).map_err(S::Error::custom)?;
        let mut seq = serializer.serialize_seq(None)?;
        for kept in &mut *self.kept.borrow_mut() {
            let snapshot = whole(kept).map_err(S::Error::custom)?;
            checker.next(&snapshot).map_err(S::Error::custom)?;
            seq.serialize_element(&snapshot)?;
        }
        seq.end()
    }
}

/// The snapshot `kept` stands for, its stacks (and their modules) back
/// in it.
fn whole(kept: &Kept) -> Result<Snapshot, String> {
    let mut snapshot: Snapshot = serde_json::from_slice(&kept.json)
        .map_err(|e| format!("a kept snapshot does not parse: {e}"))?;
    if let Some(sampled) = &kept.stacks {
        snapshot.stacks = sampled.stacks.clone();
        snapshot.modules = sampled.modules.clone();
    }
    Ok(snapshot)
}
