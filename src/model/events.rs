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
    /// the event while sampling (their `Breakdown::agreement` taken
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
