//! What netto itself cost in an interval, and what its budget did about it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Tier;

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

/// Windows of profiles `serve --otlp-endpoint` delivered, and those it
/// dropped (for any reason: `/metrics` says which).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OtlpPushed {
    pub sent_windows: u64,
    pub dropped_windows: u64,
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
    /// took, exited threads included, but for its OTLP exporter's thread:
    /// serving, not measuring.
    #[serde(default)]
    pub serving_cpu_ns: u64,
    /// The part of `process_cpu_ns` that `serve --otlp-endpoint`'s
    /// exporter thread took: exporting, neither measuring nor serving.
    #[serde(default)]
    pub export_cpu_ns: u64,
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
    /// What pushing profiles costs: `export_cpu_ns` in percent of one CPU
    /// over the interval (0 without `--otlp-endpoint`), inside
    /// `cost_percent`; `serve --otlp-budget` bounds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_percent: Option<f64>,
    /// What `serve --otlp-endpoint` has pushed since it started, written in
    /// by the serving process (which pushes; its CPU time is
    /// `export_cpu_ns`); absent without an endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpPushed>,
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

impl KnobName {
    /// The name in JSON, for front ends that print it.
    pub fn name(self) -> &'static str {
        match self {
            KnobName::Process => "process",
            KnobName::SocketWindow => "socket_window",
            KnobName::ExactHooks => "exact_hooks",
            KnobName::Sampler => "sampler",
            KnobName::Sketch => "sketch",
        }
    }
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
