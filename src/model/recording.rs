//! A recording: one run's header and its snapshots.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{merge_stacks, SchemaVersion, Snapshot, StackCount};

/// What `netto record` writes and `netto report` / `--replay` read: the
/// snapshots of a run, each with the stacks sampled in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Recording {
    pub header: RecordingHeader,
    pub snapshots: Vec<Snapshot>,
}

impl Recording {
    /// Every stack sampled in the recording.
    pub fn stacks(&self) -> Vec<StackCount> {
        merge_stacks(&self.snapshots)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecordingHeader {
    /// The version of this JSON format, as in each snapshot.
    #[serde(default)]
    pub schema_version: SchemaVersion,
    pub netto_version: String,
    pub host: String,
    pub kernel: String,
    /// Unix seconds.
    pub started: f64,
    pub duration_s: f64,
    pub frequency_hz: u64,
    pub backend: String,
    pub transport: String,
}
