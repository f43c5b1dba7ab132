//! The one data model every front end consumes: a [`Snapshot`] is what netto
//! measured over one interval. The live collector produces them and later a
//! recording replays them, so `stat`, the TUI, the web view and recordings
//! all agree on what a number means. No I/O here.

mod attribution;
mod events;
mod losses;
mod network_programs;
mod overhead;
mod recording;
mod sketch;
mod stacks;
#[cfg(test)]
mod tests;

pub use attribution::*;
pub use events::*;
pub use losses::*;
pub use network_programs::*;
pub use overhead::*;
pub use recording::*;
pub use sketch::*;
pub use stacks::*;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Shortest and longest interval a run may be asked for, and its longest
/// duration: a typo such as 1e9 gets an error instead of a process that
/// never ends, and a recording outside them is refused.
pub const MIN_INTERVAL_S: f64 = 0.05;
pub const MAX_INTERVAL_S: f64 = 3600.0;
pub const MAX_DURATION_S: f64 = 30.0 * 24.0 * 3600.0;

/// The version of netto's JSON formats, snapshots and recordings, that this
/// netto writes. The compatibility policy (docs/src/reference/
/// json-compatibility.md) says what may change within a version and what
/// makes the next one.
pub const SCHEMA_VERSION: u32 = 1;

/// The `schema_version` of a snapshot and of a recording's header: not
/// data but the format, so it is always written as [`SCHEMA_VERSION`],
/// whatever version the value was read from. Reading takes any version up
/// to this netto's and refuses a newer one by name, rather than failing
/// later on a field or value it does not know; files from before the
/// field existed are version 1.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaVersion;

impl Serialize for SchemaVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(SCHEMA_VERSION)
    }
}

impl<'de> Deserialize<'de> for SchemaVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match u32::deserialize(deserializer)? {
            0 => Err(serde::de::Error::custom(
                "schema version 0 does not exist (versions start at 1)",
            )),
            version if version <= SCHEMA_VERSION => Ok(SchemaVersion),
            newer => Err(serde::de::Error::custom(format!(
                "schema version {newer} is newer than this netto reads (up to \
                 {SCHEMA_VERSION}): a newer netto wrote it"
            ))),
        }
    }
}

impl JsonSchema for SchemaVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SchemaVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The version of netto's JSON formats (see the compatibility policy). \
                Absent from files written before netto versioned them, which are version 1.",
            "type": "integer",
            "minimum": 1,
            "maximum": SCHEMA_VERSION,
            "default": 1,
        })
    }
}

/// Everything measured over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Snapshot {
    /// The version of this JSON format (its compatibility policy says what
    /// changes it).
    // First, so that a reader meets it before anything a newer format may
    // have changed.
    #[serde(default)]
    pub schema_version: SchemaVersion,
    /// End of the interval, unix seconds.
    pub ts: f64,
    /// Measured length of the interval.
    pub interval_s: f64,
    /// Accounting backend in use (`tracepoint`, ...).
    pub backend: String,
    /// The tier in force for the whole interval (tiers change only
    /// between intervals); recordings from before tiers are `exact`.
    #[serde(default)]
    pub tier: Tier,
    /// Set on a calibration interval (`--calibrate-every`): the tier the
    /// run is in, left for this one interval so that every event is
    /// measured exactly and its estimates get a fresh
    /// [`CpuTime::calibration`]. Such an interval is always `exact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrating: Option<Tier>,
    /// Number of CPUs in the per-CPU arrays.
    pub cpus: usize,
    pub events: BTreeMap<EventKey, CpuTime>,
    pub softirq: BTreeMap<SoftirqVector, CpuTime>,
    /// Time in hardirq handlers, which no event is charged for.
    pub hardirq: CpuTime,
    /// `net_timers` split by the kernel callback that ran (e.g.
    /// `tcp_pace_kick`), plus `timer_softirq_overhead`: the timer softirq's
    /// own time around network callbacks. Sums to `net_timers`; only
    /// entries that ran in the interval appear.
    pub net_timer_callbacks: BTreeMap<String, u64>,
    pub overhead: Overhead,
    /// Stack sampling over the interval; absent when netto does not sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingStats>,
    /// Where the time of each sampled context went, by category.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakdown: Vec<Breakdown>,
    /// The symbolized stacks sampled in the interval, most samples first
    /// within each context: what flame graphs of any time range are drawn
    /// from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<StackCount>,
    /// The module (`veth`, `bridge`, `bpf` for BPF programs) of every
    /// function in `stacks` that is not in the core kernel: frames are bare
    /// names, and pprof profiles name a mapping per module.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub modules: BTreeMap<String, String>,
    /// The co-hosted XDP sketch over the interval; absent when none runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sketch: Option<SketchSnapshot>,
    /// The host's BPF programs on the network path, priced; absent when
    /// netto did not look (a replay of a recording made before it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_programs: Option<NetworkPrograms>,
    /// What netto could not measure in the interval (all zero when nothing
    /// was lost; absent from recordings made before it existed).
    #[serde(default)]
    pub losses: Losses,
    /// Whom each event's time was for (`--by`); absent when not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// What `--budget` saw and did in the interval; absent without a
    /// budget (and from recordings made before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetStatus>,
}

impl Snapshot {
    /// An interval in which nothing ran: every event and vector present,
    /// at zero, on `cpus` CPUs.
    pub fn empty(backend: &str, cpus: usize) -> Snapshot {
        let zero = CpuTime {
            per_cpu_ns: vec![0; cpus],
            ..CpuTime::default()
        };
        Snapshot {
            schema_version: SchemaVersion,
            ts: 0.0,
            interval_s: 0.0,
            backend: backend.to_owned(),
            tier: Tier::Exact,
            calibrating: None,
            cpus,
            events: EventKey::ALL.map(|k| (k, zero.clone())).into(),
            softirq: SoftirqVector::ALL.map(|v| (v, zero.clone())).into(),
            hardirq: zero.clone(),
            net_timer_callbacks: BTreeMap::new(),
            overhead: Overhead::default(),
            sampling: None,
            breakdown: Vec::new(),
            stacks: Vec::new(),
            modules: BTreeMap::new(),
            sketch: None,
            network_programs: None,
            losses: Losses::default(),
            attribution: None,
            budget: None,
        }
    }

    pub fn event(&self, key: EventKey) -> &CpuTime {
        &self.events[&key]
    }

    /// Whether netto could not keep its budget in this interval: over it
    /// with every knob at its floor. A calibration interval is over any
    /// budget a lower tier was needed for, by design, and says nothing of
    /// whether the budget is kept.
    pub fn budget_exceeded(&self) -> bool {
        self.calibrating.is_none() && self.budget.as_ref().is_some_and(|b| b.over && b.at_floor)
    }

    pub fn softirq_total_ns(&self) -> u64 {
        self.softirq.values().map(|t| t.total_ns).sum()
    }
}
