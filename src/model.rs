//! The one data model every sink consumes: a [`Snapshot`] is what netto
//! measured over one interval. The live collector produces them and later a
//! recording replays them, so `stat`, the TUI, the web view and recordings
//! all agree on what a number means. No I/O here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The network entry points netto times. The serialized names are the
/// public JSON keys (README documents them), so they never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

/// CPU time of one thing over an interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTime {
    pub total_ns: u64,
    /// Index = CPU number.
    pub per_cpu_ns: Vec<u64>,
    /// How many times it ran (softirq runs, socket calls, callbacks).
    pub count: u64,
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

/// Run-time statistics of one of netto's BPF programs over the interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramCost {
    pub name: String,
    pub run_count: u64,
    pub run_time_ns: u64,
}

/// What netto itself cost over the interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overhead {
    /// CPU time of the netto process (user + system), which is the
    /// user-space side of the measurement.
    pub process_cpu_ns: u64,
    /// Whether BPF run-time statistics were on; without them the program
    /// figures below are absent.
    pub bpf_stats: bool,
    /// Sum of `programs[].run_time_ns`.
    pub bpf_run_time_ns: u64,
    pub programs: Vec<ProgramCost>,
}

/// Everything measured over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// End of the interval, unix seconds.
    pub ts: f64,
    /// Measured length of the interval.
    pub interval_s: f64,
    /// Accounting backend in use (`tracepoint`, ...).
    pub backend: String,
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
}

impl Snapshot {
    pub fn event(&self, key: EventKey) -> &CpuTime {
        &self.events[&key]
    }

    pub fn softirq_total_ns(&self) -> u64 {
        self.softirq.values().map(|t| t.total_ns).sum()
    }
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
    fn percent_of_one_cpu() {
        let t = CpuTime {
            total_ns: 250_000_000,
            per_cpu_ns: vec![250_000_000],
            count: 1,
        };
        assert!((t.percent_of_cpu(2.0) - 12.5).abs() < 1e-9);
        assert_eq!(t.percent_of_cpu(0.0), 0.0);
    }
}
