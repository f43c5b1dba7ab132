//! The events netto times, the tiers that measure them, and one event's
//! time in an interval.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// One standard error of an estimated `total_ns`: its samples' count
    /// and, where a calibration corrected it, the calibration's own error.
    /// The interval netto states is `total_ns` +- 2 `error_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_ns: Option<u64>,
    /// For an estimate that a calibration corrected: the estimate before
    /// it (samples x period), `total_ns` being the corrected one. Absent
    /// for a measured time, and in recordings made before calibrations were
    /// applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_ns: Option<u64>,
    /// For an estimate: how this tier's own samples stood against the
    /// event's exact time in the run's calibration intervals, and whether
    /// `total_ns` is corrected by it (the manual, "Tiers, the budget and
    /// calibration intervals").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// An event's calibration: in the run's newest calibration intervals, which
/// measure every event exactly while the sampler places its samples as the
/// estimating tier does, the estimate those samples make over the exact
/// time. An estimate is divided by it (a ratio estimator), so that it
/// follows the load between calibrations while its bias on this host is
/// taken out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Calibration {
    /// Estimate over exact time, pooled over the newest calibration
    /// intervals (recordings made before calibrations were applied hold
    /// the exact tier's own samples' agreement here).
    pub agreement: f64,
    /// The samples it rests on.
    pub samples: u64,
    /// The end of the newest of those intervals (its snapshot's `ts`).
    pub ts: f64,
    /// One standard error of `agreement` ([`Calibration::error`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement_error: Option<f64>,
    /// Whether the estimate's `total_ns` and `error_ns` are corrected by
    /// it: it rests on enough samples
    /// ([`crate::collect::calibrate::CALIBRATION_MIN_SAMPLES`]).
    #[serde(default)]
    pub applied: bool,
    /// Its age at the estimate's snapshot: a calibration measured under
    /// another load holds less well.
    #[serde(default)]
    pub age_s: f64,
}

impl Calibration {
    /// One standard error of `agreement`: as the calibration states it, or
    /// for a recording older than that, the Poisson error of its samples
    /// (relative error 1 / sqrt(samples)).
    pub fn error(&self) -> f64 {
        self.agreement_error
            .unwrap_or(self.agreement / (self.samples.max(1) as f64).sqrt())
    }

    /// Its age at `ts` (the estimating snapshot's), from its own `ts`, so
    /// that recordings older than `age_s` read alike.
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
