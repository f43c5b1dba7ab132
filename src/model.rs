//! The one data model every front end consumes: a [`Snapshot`] is what netto
//! measured over one interval. The live collector produces them and later a
//! recording replays them, so `stat`, the TUI, the web view and recordings
//! all agree on what a number means. No I/O here.

use std::collections::{BTreeMap, HashMap};

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

/// The network entry points netto times. The serialized names are the
/// public JSON keys (the manual's JSON formats page documents them), so
/// they never change.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EventKey {
    NetRxSoftirq,
    NetTxSoftirq,
    SockSend,
    SockRecv,
    NetTimers,
}

impl EventKey {
    pub const ALL: [EventKey; 5] = [
        EventKey::NetRxSoftirq,
        EventKey::NetTxSoftirq,
        EventKey::SockSend,
        EventKey::SockRecv,
        EventKey::NetTimers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventKey::NetRxSoftirq => "net_rx_softirq",
            EventKey::NetTxSoftirq => "net_tx_softirq",
            EventKey::SockSend => "sock_send",
            EventKey::SockRecv => "sock_recv",
            EventKey::NetTimers => "net_timers",
        }
    }
}

/// Softirq vectors, named as /proc/softirqs names them, in kernel order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SoftirqVector {
    Hi,
    Timer,
    NetTx,
    NetRx,
    Block,
    IrqPoll,
    Tasklet,
    Sched,
    Hrtimer,
    Rcu,
}

impl SoftirqVector {
    /// In kernel order: index i is softirq vector number i.
    pub const ALL: [SoftirqVector; 10] = [
        SoftirqVector::Hi,
        SoftirqVector::Timer,
        SoftirqVector::NetTx,
        SoftirqVector::NetRx,
        SoftirqVector::Block,
        SoftirqVector::IrqPoll,
        SoftirqVector::Tasklet,
        SoftirqVector::Sched,
        SoftirqVector::Hrtimer,
        SoftirqVector::Rcu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SoftirqVector::Hi => "HI",
            SoftirqVector::Timer => "TIMER",
            SoftirqVector::NetTx => "NET_TX",
            SoftirqVector::NetRx => "NET_RX",
            SoftirqVector::Block => "BLOCK",
            SoftirqVector::IrqPoll => "IRQ_POLL",
            SoftirqVector::Tasklet => "TASKLET",
            SoftirqVector::Sched => "SCHED",
            SoftirqVector::Hrtimer => "HRTIMER",
            SoftirqVector::Rcu => "RCU",
        }
    }
}

/// How much of the exact accounting runs (`--tier`). Each tier down
/// detaches more of it, so netto costs less, and estimates from stack
/// samples what it no longer measures: every such value says so
/// ([`CpuTime::estimated`]).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Every event exact: every hook attached.
    #[default]
    Exact,
    /// NET_RX, NET_TX and network timers exact; the socket window hooks,
    /// which run on every system call of the host, detached, and socket
    /// call time estimated from stack samples.
    Softirq,
    /// No per-event hook at all: every event estimated from stack samples.
    Sampled,
}

impl Tier {
    /// From most to least exact: the order the budget steps down in.
    pub const ALL: [Tier; 3] = [Tier::Exact, Tier::Softirq, Tier::Sampled];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Softirq => "softirq",
            Tier::Sampled => "sampled",
        }
    }

    /// Whether `event` is measured exactly in this tier.
    pub fn measures(self, event: EventKey) -> bool {
        match self {
            Tier::Exact => true,
            Tier::Softirq => !matches!(event, EventKey::SockSend | EventKey::SockRecv),
            Tier::Sampled => false,
        }
    }

    /// The next tier down (cheaper), if any.
    pub fn lower(self) -> Option<Tier> {
        Tier::ALL.get(self as usize + 1).copied()
    }

    /// The next tier up (more exact), if any.
    pub fn higher(self) -> Option<Tier> {
        (self as usize).checked_sub(1).map(|i| Tier::ALL[i])
    }
}

/// CPU time of one thing over an interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuTime {
    pub total_ns: u64,
    /// Index = CPU number.
    pub per_cpu_ns: Vec<u64>,
    /// How many times it ran (softirq runs, socket calls, callbacks); 0
    /// when estimated: samples do not count runs.
    pub count: u64,
    /// Whether the time is an estimate from stack samples (the tier in
    /// force does not measure this event) rather than measured exactly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// One standard error of an estimated `total_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_ns: Option<u64>,
    /// For an estimate: how samples stood against this event's exact time
    /// earlier in the run, where a tier measured it. The error above is the
    /// samples' count only; this shows their bias on this host (the manual,
    /// "Tiers, the budget and calibration intervals").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// An event's agreement as a tier that measured it last saw it in this
/// run, carried onto its estimates in the tiers below, which have nothing
/// exact to hold their samples against.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Calibration {
    /// Samples x period / exact time over the newest intervals that measured
    /// the event while sampling (their [`Breakdown::agreement`] taken
    /// together, up to a minute of them). It is shown, not applied: the
    /// `sampled` tier places its samples by their frames where the others
    /// know the context, so its bias need not be the same.
    pub agreement: f64,
    /// The samples it rests on: its standard error is
    /// [`Calibration::error`].
    pub samples: u64,
    /// The end of the newest of those intervals (its snapshot's `ts`).
    pub ts: f64,
}

impl Calibration {
    /// One standard error of `agreement`: its samples are a Poisson count
    /// (relative error 1 / sqrt(samples)); the exact time it is held
    /// against has none.
    pub fn error(&self) -> f64 {
        self.agreement / (self.samples as f64).sqrt()
    }

    /// Its age at `ts` (the estimating snapshot's): an agreement measured
    /// ten minutes ago under another load need not hold now, so it is
    /// shown with its age.
    pub fn age_s(&self, ts: f64) -> f64 {
        (ts - self.ts).max(0.0)
    }
}

impl CpuTime {
    /// Share of one CPU over `interval_s`, in percent.
    pub fn percent_of_cpu(&self, interval_s: f64) -> f64 {
        percent(self.total_ns, interval_s)
    }
}

pub fn percent(ns: u64, interval_s: f64) -> f64 {
    if interval_s <= 0.0 {
        0.0
    } else {
        ns as f64 / (interval_s * 1e9) * 100.0
    }
}

/// Runs and run time of one of netto's BPF programs over the interval
/// (estimated from a slice of it when [`Overhead::estimated`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProgramCost {
    pub name: String,
    /// The hook it runs on, as netto's cost figures name hooks (`softirq`,
    /// `window`, `sample`, `xdp_sketch`, ...); empty in recordings made
    /// before it was given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hook: String,
    pub run_count: u64,
    pub run_time_ns: u64,
}

/// What netto itself cost over the interval: its processes' CPU time and
/// its BPF programs' run time, and the sum of both as a share of one CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Overhead {
    /// CPU time (user + system) of netto's own processes: the netto
    /// process (every thread) and the HTTP server process of `serve`; not
    /// the demo load. Exact.
    pub process_cpu_ns: u64,
    /// The part of `process_cpu_ns` that `serve`'s HTTP server process
    /// took, exited threads included: serving, not measuring.
    #[serde(default)]
    pub serving_cpu_ns: u64,
    /// Whether netto measured its BPF programs' cost (BPF run-time
    /// statistics, held for a slice of each interval); false with
    /// `--no-bpf-stats`, and then the program figures below are absent.
    pub bpf_stats: bool,
    /// How long netto held BPF run-time statistics on in the interval.
    #[serde(default)]
    pub bpf_stats_held_s: f64,
    /// Sum of `programs[].run_time_ns`: every BPF program netto runs
    /// (accounting, stack sampler, XDP sketch).
    pub bpf_run_time_ns: u64,
    /// One standard error of `bpf_run_time_ns` (0 when not `estimated`).
    #[serde(default)]
    pub bpf_error_ns: u64,
    /// netto's whole cost, `process_cpu_ns + bpf_run_time_ns +
    /// dispatch_run_time_ns`, in percent of one CPU over the interval (the
    /// program part counted only when `bpf_stats`). Absent from recordings
    /// made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_percent: Option<f64>,
    /// What measuring costs, in percent of one CPU over the interval: the
    /// BPF programs (as in `cost_percent`) and the measuring process,
    /// without serving. The budget acts on this alone. Absent from
    /// recordings made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measuring_percent: Option<f64>,
    /// What serving costs: `serving_cpu_ns` in percent of one CPU over the
    /// interval (0 without `serve`); `serve --serve-budget` bounds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_percent: Option<f64>,
    /// Whether the BPF part is an estimate: runs counted exactly, each
    /// priced at the cost per run measured while statistics were on.
    #[serde(default)]
    pub estimated: bool,
    /// `bpf_error_ns` and the dispatch's error, in percent of one CPU: the
    /// error of `cost_percent`.
    #[serde(default)]
    pub error_percent: f64,
    pub programs: Vec<ProgramCost>,
    /// CPU time netto spent starting, before its first interval began
    /// (loading and verifying its BPF programs, reading kernel symbols,
    /// timing dispatch): part of `process_cpu_ns` and `cost_percent` in a
    /// run's first snapshot, 0 in the others. The budget does not act on
    /// it, since no knob gets it back.
    #[serde(default)]
    pub startup_cpu_ns: u64,
    /// An estimate: what entering one of netto's tracepoint programs costs,
    /// in ns per run, which BPF run-time statistics leave out; measured at
    /// start-up (`netto check` shows it too), with `dispatch_error_ns`, one
    /// standard error. Absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_ns: Option<f64>,
    #[serde(default)]
    pub dispatch_error_ns: f64,
    /// `dispatch_ns` times the interval's runs of netto's tracepoint
    /// programs (counted exactly): part of `cost_percent`, with its error
    /// in `error_percent`, whether or not `bpf_stats`.
    #[serde(default)]
    pub dispatch_run_time_ns: u64,
}

impl Overhead {
    /// The cost the budget holds: measuring's, or netto's whole cost in a
    /// recording made before the two were told apart.
    pub fn budgeted_percent(&self) -> Option<f64> {
        self.measuring_percent.or(self.cost_percent)
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

#[cfg(any(test, feature = "test-support"))]
impl BudgetStatus {
    /// An interval over a budget of `percent` with every knob at its
    /// floor, four steps down from 99 Hz and no change: for the front ends'
    /// tests.
    pub fn over_at_floor(percent: f64) -> BudgetStatus {
        BudgetStatus {
            percent,
            over: true,
            at_floor: true,
            asked_frequency_hz: Some(99),
            asked_sketch_probability: None,
            change: None,
            steps_down: 4,
            steps_up: 0,
            knobs: Vec::new(),
        }
    }
}

/// Lowest and highest budget, in percent of one CPU: what `--budget` takes
/// and what a recording's `budget.percent` may say.
pub const MIN_BUDGET_PERCENT: f64 = 0.01;
pub const MAX_BUDGET_PERCENT: f64 = 100.0;

/// netto keeping its whole cost (`overhead.cost_percent`) under a share of
/// one CPU by turning its knobs down (sampling frequency, attribution, the
/// XDP sketch's probability, the tier), and back up when there is room
/// (`source::budget` says when and in which order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetStatus {
    /// The budget, in percent of one CPU.
    pub percent: f64,
    /// Whether netto's cost was over the budget in this interval.
    pub over: bool,
    /// Whether every knob is at its floor (sampling at its lowest
    /// frequency or not sampling, attribution off or not asked for, the
    /// sketch at its lowest probability or not co-hosted, the lowest tier
    /// or not sampling): nothing is left to turn down.
    pub at_floor: bool,
    /// The sampling frequency asked for (command line, `+`/`-`, the web
    /// API): the ceiling the budget steps back up to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_frequency_hz: Option<u64>,
    /// The co-hosted XDP sketch's probability asked for (`--xdp-sketch`):
    /// the ceiling its steps come back up to; the one in force is the
    /// sketch's own `probability`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_sketch_probability: Option<f64>,
    /// What the budget changed at the end of this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<BudgetChange>,
    /// Steps (of either knob) taken down and up since the start. The
    /// budget may take several steps down at the end of one interval, to
    /// the setting its knobs' costs say fits; `change` is then the last.
    pub steps_down: u64,
    pub steps_up: u64,
    /// What each part of netto's cost is now, the parts a knob turns down
    /// and the measuring process; what it judged on. Empty without
    /// program costs (`--no-bpf-stats`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<KnobCost>,
}

/// One part of netto's cost, as the budget sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KnobCost {
    pub knob: KnobName,
    /// In percent of one CPU, dispatch included.
    pub cost_percent: f64,
    pub basis: CostBasis,
}

/// The parts of netto's cost the budget weighs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum KnobName {
    /// netto's processes, start-up left out: no knob of its own, it
    /// shrinks with the others.
    Process,
    /// The socket window hooks (every system call of the host): what the
    /// `softirq` tier leaves out.
    SocketWindow,
    /// Every other exact hook (softirqs, interrupts, callbacks, context
    /// switches): what the `sampled` tier leaves out.
    ExactHooks,
    /// The stack sampler, in proportion to its frequency.
    Sampler,
    /// The co-hosted XDP sketch, in proportion to its probability.
    Sketch,
}

/// Where a [`KnobCost`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CostBasis {
    /// Measured over this interval.
    Measured,
    /// Off in this interval: its last measured cost, scaled by the network
    /// load since.
    Predicted,
}

/// One change the budget makes; each is one line on stderr (the TUI's
/// status line), in the snapshot and in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BudgetChange {
    /// Sampling frequency stepped down: the cost was over the budget.
    Down { from_hz: u64, to_hz: u64 },
    /// Stepped back up toward the asked frequency: there was room.
    Up { from_hz: u64, to_hz: u64 },
    /// Attribution (`--by`) turned off, sampling being at its floor: its
    /// time stays in `unattributed` until it is back on.
    AttributionOff,
    /// Attribution back on: there was room.
    AttributionOn,
    /// The XDP sketch's probability stepped down, attribution being off:
    /// its flow estimates widen (its totals stay exact).
    SketchDown { from: f64, to: f64 },
    /// The sketch's probability back up toward the asked one: there was
    /// room.
    SketchUp { from: f64, to: f64 },
    /// One tier down, sampling being at its floor and attribution off:
    /// what the lower tier does not measure is estimated from then on.
    TierDown { from: Tier, to: Tier },
    /// One tier back up toward the asked one: there was room.
    TierUp { from: Tier, to: Tier },
    /// Over the budget with every knob at its floor: the budget is not kept
    /// (netto goes on measuring; without sampling, the exact accounting has
    /// nothing to turn down).
    Exceeded,
    /// Back under the budget after [`BudgetChange::Exceeded`].
    Kept,
}

impl BudgetStatus {
    /// The line that announces this interval's change, if there was one.
    pub fn change_line(&self) -> Option<String> {
        let budget = self.percent;
        Some(match self.change? {
            BudgetChange::Down { from_hz, to_hz } => {
                format!("budget {budget} %: over it, sampling {from_hz} Hz -> {to_hz} Hz")
            }
            BudgetChange::Up { from_hz, to_hz } => {
                format!("budget {budget} %: room under it, sampling {from_hz} Hz -> {to_hz} Hz")
            }
            BudgetChange::AttributionOff => format!(
                "budget {budget} %: over it, attribution off (its time goes to unattributed)"
            ),
            BudgetChange::AttributionOn => {
                format!("budget {budget} %: room under it, attribution on again")
            }
            BudgetChange::SketchDown { from, to } => format!(
                "budget {budget} %: over it, XDP sketch probability {from} -> {to} (wider flow \
                 estimates; packet and byte totals stay exact)"
            ),
            BudgetChange::SketchUp { from, to } => {
                format!("budget {budget} %: room under it, XDP sketch probability {from} -> {to}")
            }
            BudgetChange::TierDown { from, to } => format!(
                "budget {budget} %: over it, tier {} -> {} ({} estimated from stack samples, \
                 with their errors)",
                from.name(),
                to.name(),
                if to == Tier::Sampled {
                    "every event"
                } else {
                    "socket calls"
                }
            ),
            BudgetChange::TierUp { from, to } => format!(
                "budget {budget} %: room under it, tier {} -> {}",
                from.name(),
                to.name()
            ),
            BudgetChange::Exceeded => {
                format!("budget {budget} % exceeded with every knob at its floor; measuring on")
            }
            BudgetChange::Kept => format!("budget {budget} % kept again"),
        })
    }
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

/// What `--by` groups network time by. The serialized names are what
/// `--by` takes and what JSON says (`"by": "cgroup"`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The process (thread group): for the time of its socket calls, and
    /// for softirq work on the sockets it last used.
    Process,
    /// The cgroup v2 group (systemd unit, container, pod).
    Cgroup,
    /// The network namespace: of the calling task, of the socket, or of
    /// the device forwarded traffic leaves by.
    Netns,
}

impl GroupBy {
    pub const ALL: [GroupBy; 3] = [GroupBy::Process, GroupBy::Cgroup, GroupBy::Netns];

    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Process => "process",
            GroupBy::Cgroup => "cgroup",
            GroupBy::Netns => "netns",
        }
    }

    /// What a group's [`Group::name`] is, as a column heading names it.
    pub fn id_name(self) -> &'static str {
        match self {
            GroupBy::Process => "pid",
            GroupBy::Cgroup => "cgroup path",
            GroupBy::Netns => "netns inode",
        }
    }
}

/// The name of the group holding the groups beyond `--max-groups`.
pub const OTHER_GROUP: &str = "other";

/// Whom each event's time was for over one interval: the heaviest groups,
/// the rest folded into one group named [`OTHER_GROUP`], and what no group
/// claimed. For every event, the groups and `unattributed` add up to the
/// event's total exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Attribution {
    pub by: GroupBy,
    /// Whether attribution ran during the interval; turned off at run time
    /// (to save its cost) there are no groups and all time is unattributed.
    pub on: bool,
    /// Heaviest first (over the last seconds, not just this interval), the
    /// folded rest last.
    pub groups: Vec<Group>,
    /// Each event's time no group claimed (every event present).
    pub unattributed: BTreeMap<EventKey, u64>,
}

/// One group's network time over the interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Group {
    /// What identifies it: the cgroup's path under the v2 root, the process
    /// id, or the network namespace's inode number; [`OTHER_GROUP`] for the
    /// folded rest.
    pub name: String,
    /// A short name people recognise: the container, pod or systemd unit,
    /// the command, the `ip netns` name.
    pub label: String,
    /// Time per event (every event present).
    pub events: BTreeMap<EventKey, u64>,
}

impl Group {
    pub fn total_ns(&self) -> u64 {
        self.events.values().sum()
    }
}

impl Attribution {
    /// Every event at zero: what an attribution starts from.
    pub fn zero_events() -> BTreeMap<EventKey, u64> {
        EventKey::ALL.map(|key| (key, 0)).into()
    }

    pub fn unattributed_total_ns(&self) -> u64 {
        self.unattributed.values().sum()
    }
}

/// How an XDP program runs on its interface: in the driver (native) or
/// after the kernel built an skb (generic, slower, works everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum XdpMode {
    Native,
    Generic,
}

impl XdpMode {
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        }
    }
}

/// What one XDP run, one counted packet, stands for. Generic XDP runs
/// after GRO, on the aggregated skb (up to 64 KiB, many wire segments),
/// and XDP cannot see the segment count (gso_segs): there a packet, its
/// bytes and ns/packet are per aggregate, and the cost leaves out the
/// kernel's skb linearisation before the program runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PacketUnit {
    /// One frame as received (native XDP).
    #[default]
    Frame,
    /// One GRO aggregate (generic XDP).
    GroAggregate,
}

impl PacketUnit {
    pub fn of(mode: XdpMode) -> PacketUnit {
        match mode {
            XdpMode::Native => PacketUnit::Frame,
            XdpMode::Generic => PacketUnit::GroAggregate,
        }
    }
}

/// What the XDP sketch (NitroSketch over a Count Sketch) saw over one
/// interval and what it cost. The field names are public (JSON, TUI, web)
/// and stay as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SketchSnapshot {
    /// End of the interval, unix seconds.
    pub ts: f64,
    /// Measured length of the interval.
    pub interval_s: f64,
    /// The interface the sketch is attached to.
    pub iface: String,
    pub mode: XdpMode,
    /// Probability with which each row of each packet is updated, as
    /// applied (rounded so that 1/p is a whole number of 1/1024ths).
    pub probability: f64,
    pub rows: u32,
    pub columns: u32,
    /// What `packets` counts: frames, or GRO aggregates in generic mode.
    #[serde(default)]
    pub packet_unit: PacketUnit,
    /// Every packet and byte the program saw in the interval, exactly
    /// (bytes of whole frames, Ethernet padding included).
    pub packets: u64,
    pub bytes: u64,
    /// Gaps the program took a second time in the interval because a CPU's
    /// ring of variates ran dry before user space topped it up; 0 means
    /// every sampling decision was fresh.
    #[serde(default)]
    pub gaps_reused: u64,
    /// The heaviest TCP/UDP flows of the interval, most packets first.
    pub top: Vec<FlowEstimate>,
    /// Estimated packets and bytes not counted by flow, by protocol
    /// (`arp`, `icmp`, `icmpv6`, `fragment`, `ipv4_other`, `ipv6_other`,
    /// `other`); only classes seen appear.
    pub other_protocols: BTreeMap<String, ProtocolEstimate>,
    pub cost: SketchCost,
}

/// A TCP or UDP flow by 5-tuple.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct Flow {
    pub src: String,
    pub dst: String,
    pub sport: u16,
    pub dport: u16,
    /// `tcp` or `udp`.
    pub proto: String,
}

/// A flow's estimated traffic over the interval, scaled by 1/p.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlowEstimate {
    pub flow: Flow,
    pub packets: u64,
    pub bytes: u64,
    /// Estimated bytes / all bytes the sketch saw in the interval.
    pub share: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProtocolEstimate {
    pub packets: u64,
    pub bytes: u64,
}

/// The sketch program's own CPU time over the interval, from BPF run-time
/// statistics. All zero while statistics are off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SketchCost {
    /// Runs of the program: one per packet.
    pub run_count: u64,
    pub run_time_ns: u64,
    /// run_time_ns / run_count.
    pub ns_per_packet: f64,
    /// run_time_ns as a share of one CPU over the interval, in percent.
    pub cpu_percent: f64,
}

/// The network context a stack sample was taken in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SampleContext {
    NetRx,
    NetTx,
    SockSend,
    SockRecv,
    /// A network timer callback, or the timer softirq's own work around
    /// one (the time `net_timers` charges).
    NetTimers,
}

impl SampleContext {
    pub const ALL: [SampleContext; 5] = [
        SampleContext::NetRx,
        SampleContext::NetTx,
        SampleContext::SockSend,
        SampleContext::SockRecv,
        SampleContext::NetTimers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SampleContext::NetRx => "net_rx",
            SampleContext::NetTx => "net_tx",
            SampleContext::SockSend => "sock_send",
            SampleContext::SockRecv => "sock_recv",
            SampleContext::NetTimers => "net_timers",
        }
    }

    /// The exact event whose time a context's samples divide up.
    pub fn event(self) -> EventKey {
        match self {
            SampleContext::NetRx => EventKey::NetRxSoftirq,
            SampleContext::NetTx => EventKey::NetTxSoftirq,
            SampleContext::SockSend => EventKey::SockSend,
            SampleContext::SockRecv => EventKey::SockRecv,
            SampleContext::NetTimers => EventKey::NetTimers,
        }
    }
}

/// A symbolized kernel stack, outermost frame first, and how many samples
/// had it. Frames are function names (`[unknown]` where none was found),
/// never addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StackCount {
    pub context: SampleContext,
    pub frames: Vec<String>,
    pub count: u64,
    /// `count` by the CPU the samples were taken on (adds up to `count`);
    /// empty in recordings from before netto kept it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpus: BTreeMap<u32, u64>,
    /// Whom the sampled work was for (with `--by`): the `name` of a group
    /// of the snapshot's `attribution`. Absent when the sample was for
    /// nobody known (its time is the unattributed part), without `--by`,
    /// and in recordings from before netto kept it. The same frames of two
    /// groups are two entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

#[cfg(test)]
impl StackCount {
    /// Test shorthand.
    pub(crate) fn of(context: SampleContext, frames: &[&str], count: u64) -> StackCount {
        StackCount {
            context,
            frames: frames.iter().map(|&f| f.to_owned()).collect(),
            count,
            cpus: BTreeMap::new(),
            group: None,
        }
    }

    /// Test shorthand: the stack as sampled for `group`.
    pub(crate) fn for_group(mut self, group: &str) -> StackCount {
        self.group = Some(group.to_owned());
        self
    }
}

/// One category's part of a context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CategoryShare {
    pub category: String,
    pub samples: u64,
    /// samples / all samples of the context.
    pub share: f64,
    /// share x the context's exact event time.
    pub cpu_ns: u64,
}

/// Where one context's time went; the categories add up to the whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Breakdown {
    pub context: SampleContext,
    pub samples: u64,
    /// samples x sampling period / the context's exact event time: how
    /// well the samples stand for the measured time (1 = exactly; the
    /// manual's "Agreement" says why it is not). Absent when the event took no
    /// time, and in recordings from before netto kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<f64>,
    pub categories: Vec<CategoryShare>,
}

/// How stack sampling went over the interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SamplingStats {
    pub frequency_hz: u64,
    /// `mmap` (double-buffered BPF array) or `ringbuf`.
    pub transport: String,
    /// Samples read, with a usable stack.
    pub samples: u64,
    /// Samples lost because the buffer was full.
    pub dropped: u64,
    /// Samples whose kernel stack could not be read.
    pub failed_stacks: u64,
    /// Samples taken in the softirq loop, outside any softirq netto saw
    /// begin, while a task's socket call was open: interrupt time that
    /// landed there (the manual's "Agreement"), in no context. Part of
    /// `samples`; absent from recordings from before netto left them out.
    #[serde(default)]
    pub softirq_loop: u64,
    /// Kernel samples whose frames name no network context, in the tiers
    /// that place samples by their frames (0 in `exact`, where the sampler
    /// keeps only network context): among them a timer softirq's samples
    /// in other callbacks, and the part of its own work not shared out to
    /// `net_timers`. Part of `samples`.
    #[serde(default)]
    pub unplaced: u64,
    /// Memory of the sample buffer.
    pub buffer_bytes: u64,
}

/// Measurements lost over the interval, each counted where it happened;
/// dropped stack samples are in [`SamplingStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Losses {
    /// Tasks switched out inside a socket call for which no task storage
    /// could be had: the rest of that call is charged to no event.
    pub task_storage_failures: u64,
    /// Runs of netto's BPF programs the kernel skipped because the program
    /// was already running on that CPU (`recursion_misses` of each
    /// program): transitions, or samples, not seen.
    pub recursion_misses: u64,
    /// Halves of the mmap sample buffer given up because a writer was
    /// still inside at the reader's deadline; their samples count in
    /// `sampling.dropped`.
    pub dropped_halves: u64,
    /// Parts of an event's time attribution could not give to their group
    /// because its map was full (or busy on that CPU): they stay in
    /// `attribution.unattributed`. Absent from recordings before it existed.
    #[serde(default)]
    pub attribution_misses: u64,
}

/// The losses of several intervals together.
impl std::iter::Sum for Losses {
    fn sum<I: Iterator<Item = Losses>>(iter: I) -> Losses {
        iter.fold(Losses::default(), |a, b| Losses {
            task_storage_failures: a.task_storage_failures + b.task_storage_failures,
            recursion_misses: a.recursion_misses + b.recursion_misses,
            dropped_halves: a.dropped_halves + b.dropped_halves,
            attribution_misses: a.attribution_misses + b.attribution_misses,
        })
    }
}

/// One kind of loss, as the front ends name it.
pub struct LossKind {
    /// The JSON field (and the metric's `kind` label).
    pub name: &'static str,
    /// A few words for a crowded header line.
    pub short: &'static str,
    /// What was lost, in one line for someone who has not read the docs
    /// (stat's legend, top's help, the web page's tooltip).
    pub meaning: &'static str,
    pub count: fn(&Losses) -> u64,
}

impl Losses {
    /// Every kind of loss: the table stat, top and serve show.
    pub const KINDS: [LossKind; 4] = [
        LossKind {
            name: "task_storage_failures",
            short: "task windows",
            meaning: "socket calls switched out midway for which no task storage could be had: \
                      the rest of each such call is charged to no event",
            count: |l| l.task_storage_failures,
        },
        LossKind {
            name: "recursion_misses",
            short: "BPF runs",
            meaning: "runs of netto's programs the kernel skipped because the program was \
                      already running on that CPU: transitions or samples not seen",
            count: |l| l.recursion_misses,
        },
        LossKind {
            name: "dropped_halves",
            short: "sample halves",
            meaning: "halves of the sample buffer given up because a writer was still inside \
                      when netto read it; their samples count as dropped",
            count: |l| l.dropped_halves,
        },
        LossKind {
            name: "attribution_misses",
            short: "attributions",
            meaning: "parts of an event's time that could not go to their group because its map \
                      was full or busy: they count as unattributed",
            count: |l| l.attribution_misses,
        },
    ];

    /// Whether anything was lost.
    pub fn any(&self) -> bool {
        *self != Losses::default()
    }

    /// The kinds with a non-zero count, as `count short` phrases.
    pub fn describe(&self, label: fn(&LossKind) -> &'static str) -> Vec<String> {
        Losses::KINDS
            .iter()
            .filter(|kind| (kind.count)(self) > 0)
            .map(|kind| format!("{} {}", (kind.count)(self), label(kind)))
            .collect()
    }
}

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

/// The stacks of several intervals as one entry per (context, frames,
/// group), ordered by context, then most samples first.
pub fn merge_stacks<'a>(snapshots: impl IntoIterator<Item = &'a Snapshot>) -> Vec<StackCount> {
    type Merged<'s> = HashMap<(SampleContext, &'s [String], Option<&'s str>), StackCount>;
    let mut merged: Merged<'_> = HashMap::new();
    for stack in snapshots.into_iter().flat_map(|s| &s.stacks) {
        let into = merged
            .entry((stack.context, &stack.frames, stack.group.as_deref()))
            .or_insert_with(|| StackCount {
                count: 0,
                cpus: BTreeMap::new(),
                ..stack.clone()
            });
        into.count += stack.count;
        for (&cpu, &n) in &stack.cpus {
            *into.cpus.entry(cpu).or_default() += n;
        }
    }
    let mut merged: Vec<StackCount> = merged.into_values().collect();
    merged.sort_by(|a, b| {
        (a.context, std::cmp::Reverse(a.count), &a.frames, &a.group).cmp(&(
            b.context,
            std::cmp::Reverse(b.count),
            &b.frames,
            &b.group,
        ))
    });
    merged
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keys_are_the_documented_names() {
        for key in EventKey::ALL {
            assert_eq!(
                serde_json::to_value(key).unwrap(),
                serde_json::Value::String(key.name().into())
            );
        }
        for vector in SoftirqVector::ALL {
            assert_eq!(
                serde_json::to_value(vector).unwrap(),
                serde_json::Value::String(vector.name().into())
            );
        }
    }

    #[test]
    fn merged_stacks_add_up_across_intervals() {
        let mut first = Snapshot::empty("tracepoint", 1);
        first.stacks = vec![
            StackCount::of(SampleContext::NetRx, &["a", "b"], 3),
            StackCount::of(SampleContext::NetTx, &["c"], 1),
        ];
        let mut second = Snapshot::empty("tracepoint", 1);
        second.stacks = vec![
            StackCount::of(SampleContext::NetRx, &["a"], 5),
            StackCount::of(SampleContext::NetRx, &["a", "b"], 4),
        ];
        assert_eq!(
            merge_stacks([&first, &second]),
            [
                StackCount::of(SampleContext::NetRx, &["a", "b"], 7),
                StackCount::of(SampleContext::NetRx, &["a"], 5),
                StackCount::of(SampleContext::NetTx, &["c"], 1),
            ]
        );
    }

    #[test]
    fn loss_kinds_are_the_json_fields() {
        let losses = Losses {
            task_storage_failures: 1,
            recursion_misses: 2,
            dropped_halves: 3,
            attribution_misses: 4,
        };
        let json = serde_json::to_value(losses).unwrap();
        let fields = json.as_object().unwrap();
        assert_eq!(fields.len(), Losses::KINDS.len());
        for kind in &Losses::KINDS {
            assert_eq!(json[kind.name], (kind.count)(&losses));
        }
        let none_but_one = Losses {
            recursion_misses: 7,
            ..Losses::default()
        };
        assert_eq!(none_but_one.describe(|k| k.short), ["7 BPF runs"]);
        let total: Losses = [losses, none_but_one].into_iter().sum();
        assert_eq!(
            (
                total.task_storage_failures,
                total.recursion_misses,
                total.dropped_halves,
                total.attribution_misses
            ),
            (1, 9, 3, 4)
        );
    }

    #[test]
    fn snapshots_recorded_before_losses_existed_still_load() {
        let mut json = serde_json::to_value(Snapshot::empty("tracepoint", 1)).unwrap();
        json.as_object_mut().unwrap().remove("losses").unwrap();
        let snapshot: Snapshot = serde_json::from_value(json).unwrap();
        assert!(!snapshot.losses.any());
    }

    #[test]
    fn snapshots_recorded_before_agreement_and_net_timers_samples_still_load() {
        let mut snapshot = Snapshot::empty("tracepoint", 1);
        snapshot.sampling = Some(SamplingStats::default());
        snapshot.breakdown = vec![Breakdown {
            context: SampleContext::NetRx,
            samples: 0,
            agreement: Some(1.0),
            categories: Vec::new(),
        }];
        let mut json = serde_json::to_value(snapshot).unwrap();
        json["sampling"]
            .as_object_mut()
            .unwrap()
            .remove("softirq_loop")
            .unwrap();
        json["breakdown"][0]
            .as_object_mut()
            .unwrap()
            .remove("agreement")
            .unwrap();
        let old: Snapshot = serde_json::from_value(json).unwrap();
        assert_eq!(old.breakdown[0].agreement, None);
        assert_eq!(old.sampling.unwrap().softirq_loop, 0);
        assert_eq!(
            serde_json::to_value(SampleContext::NetTimers).unwrap(),
            "net_timers"
        );
    }

    #[test]
    fn percent_of_one_cpu() {
        let t = CpuTime {
            total_ns: 250_000_000,
            per_cpu_ns: vec![250_000_000],
            count: 1,
            ..CpuTime::default()
        };
        assert!((t.percent_of_cpu(2.0) - 12.5).abs() < 1e-9);
        assert_eq!(t.percent_of_cpu(0.0), 0.0);
    }
}
