//! The host's BPF programs on the network path in an interval (netto's
//! own sketch among them): where each is attached, how often it ran, what
//! a run cost, and its share of the network event that contains it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::EventKey;

/// Every BPF program on a network hook of the host over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkPrograms {
    /// Where the runs and run times come from; absent when netto reads no
    /// BPF run-time statistics (`--no-bpf-stats`, or not allowed): the
    /// programs are then listed without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<PriceBasis>,
    /// How long BPF run-time statistics were on in the interval.
    #[serde(default)]
    pub stats_held_s: f64,
    /// Attached, or found nowhere but run in the interval; by id.
    pub programs: Vec<NetworkProgram>,
    /// Network programs loaded on the host that netto found attached
    /// nowhere and that did not run: tail-call targets (their time is in
    /// the program that called them), programs loaded and not yet
    /// attached, or attached where netto does not look.
    #[serde(default)]
    pub not_attached: u32,
}

/// Where a program's runs and run time come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PriceBasis {
    /// Statistics were on only for netto's slice of the interval: its runs
    /// and run time scaled to the whole interval, an estimate that assumes
    /// the slice was like the rest.
    Slice,
    /// Something else held statistics on outside netto's slice too (a
    /// `bpftop`, the `kernel.bpf_stats_enabled` sysctl): the runs and
    /// run time of the whole interval as counted.
    WholeInterval,
}

impl PriceBasis {
    pub fn name(self) -> &'static str {
        match self {
            PriceBasis::Slice => "slice",
            PriceBasis::WholeInterval => "whole_interval",
        }
    }
}

/// One BPF program on the network path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkProgram {
    /// The kernel's program id (as `bpftool prog` shows it).
    pub id: u32,
    pub name: String,
    /// The program's tag, a hash of its instructions: the same program
    /// loaded twice has one tag and two ids.
    pub tag: String,
    /// Its BPF program type (`xdp`, `sched_cls`, `cgroup_skb`, ...): an
    /// open set.
    pub prog_type: String,
    /// One of netto's own (the co-hosted sketch): its cost is in netto's
    /// own cost as well.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own: bool,
    /// Where it runs. Empty when netto found no attach point: `hook` then
    /// says where a program of its type runs.
    pub attach: Vec<AttachPoint>,
    /// The hook named for the program: its first attach point's, or its
    /// type's when not located (an open set: `xdp`, `tc_ingress`,
    /// `tc_egress`, `tc`, `cgroup_skb_ingress`, `socket_filter`, ...).
    pub hook: String,
    /// Runs over the interval (see [`NetworkPrograms::basis`]).
    #[serde(default)]
    pub runs: u64,
    /// Run time over the interval, in ns; without the cost of entering
    /// the program (dispatch), which statistics leave out.
    #[serde(default)]
    pub run_time_ns: u64,
    /// Mean ns per run, from the runs statistics counted; absent when it
    /// did not run while they were on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_run: Option<f64>,
    /// The network event its hook runs in, mostly: XDP and tc ingress in
    /// NET_RX, tc egress in NET_TX, socket-level programs in the socket
    /// calls; absent for a hook in none of netto's events (a socket's
    /// creation, bind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventKey>,
    /// `run_time_ns` in percent of that event's time over the interval.
    /// Always an estimate: dispatch is not in the statistics, and a
    /// program can run outside the event (tc egress inline in a send
    /// call runs in `sock_send`, an XDP program on a veth in the sender's
    /// NET_RX) — the manual's "eBPF programs on the network path" says
    /// when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_percent: Option<f64>,
}

/// One place a program runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachPoint {
    /// The hook (an open set, as [`NetworkProgram::hook`]).
    pub hook: String,
    /// The interface: by name in netto's network namespace, else `#`
    /// and its index; for a netfilter link, its netfilter hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iface: Option<String>,
    /// XDP's mode: `driver`, `generic` or `offload`; classic tc's kind:
    /// `cls_bpf` (a filter) or `act_bpf` (an action of a filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// A cgroup program's cgroup id (the inode of its cgroup v2
    /// directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_id: Option<u64>,
    /// Whether a BPF link holds it (else netlink or a legacy attach).
    pub link: bool,
}

impl NetworkProgram {
    /// Share of one CPU over `interval_s`, in percent.
    pub fn cpu_percent(&self, interval_s: f64) -> f64 {
        super::percent(self.run_time_ns, interval_s)
    }

    /// Runs per second over `interval_s`.
    pub fn runs_per_s(&self, interval_s: f64) -> f64 {
        if interval_s > 0.0 {
            self.runs as f64 / interval_s
        } else {
            0.0
        }
    }

    /// Its first interface, for a label: XDP and tc programs name one.
    pub fn iface(&self) -> Option<&str> {
        self.attach.iter().find_map(|a| a.iface.as_deref())
    }
}
