//! What the co-hosted XDP sketch estimated in an interval, and its cost.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Attribution, Group};

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

/// A TCP or UDP 5-tuple the sketch counts packets of (not a `--by flow`
/// flow: that one is a socket's, with its network namespace).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct FiveTuple {
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
    pub flow: FiveTuple,
    pub packets: u64,
    pub bytes: u64,
    /// Estimated bytes / all bytes the sketch saw in the interval.
    pub share: f64,
    /// The `--by flow` groups of the interval that are this tuple's
    /// connection, by name: its receiving socket (`DST:DPORT -> SRC:SPORT`),
    /// and its sender's or its forwarded flow (`SRC:SPORT -> DST:DPORT`)
    /// where those are on this host. Empty without `--by flow`, and for a
    /// connection folded into `other` that interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<String>,
}

impl FlowEstimate {
    /// The network time its joined groups ([`FlowEstimate::flows`]) took
    /// in the interval of `attribution`; `None` where none is joined.
    pub fn network_ns(&self, attribution: Option<&Attribution>) -> Option<u64> {
        let groups = &attribution?.groups;
        let joined = groups.iter().filter(|g| self.flows.contains(&g.name));
        joined.map(Group::total_ns).reduce(|a, b| a + b)
    }
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
