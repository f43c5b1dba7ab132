//! Whom each event's time was for (`--by`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::EventKey;

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
    /// The connection: protocol, both ends and network namespace of the
    /// socket a call or a delivery point was for.
    Flow,
    /// The service: a connection's well-known port (the local one of an
    /// accepted socket, the remote one of an outgoing one), with the
    /// direction.
    Port,
}

impl GroupBy {
    pub const ALL: [GroupBy; 5] = [
        GroupBy::Process,
        GroupBy::Cgroup,
        GroupBy::Netns,
        GroupBy::Flow,
        GroupBy::Port,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Process => "process",
            GroupBy::Cgroup => "cgroup",
            GroupBy::Netns => "netns",
            GroupBy::Flow => "flow",
            GroupBy::Port => "port",
        }
    }

    /// Whether the kernel's keys must carry each socket's connection, and
    /// groups count bytes (a cost per byte).
    pub fn keys_conns(self) -> bool {
        matches!(self, GroupBy::Flow | GroupBy::Port)
    }

    /// What a group's [`Group::name`] is, as a column heading names it.
    pub fn id_name(self) -> &'static str {
        match self {
            GroupBy::Process => "pid",
            GroupBy::Cgroup => "cgroup path",
            GroupBy::Netns => "netns inode",
            GroupBy::Flow => "flow",
            GroupBy::Port => "port",
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
    /// Under `--by flow|port`, the unattributed time (all events) by why
    /// no connection claimed it; the reasons add up to it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unattributed_why: BTreeMap<Unattributed, u64>,
}

/// Why time has no connection (`--by flow|port`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Unattributed {
    /// A socket call's time before the call named its socket (a call that
    /// slept before its protocol's length tracepoint).
    SocketNotNamed,
    /// Softirq work at a delivery point without a connection: a socket of
    /// no IP family (packet, netlink), or a packet forwarded or bridged
    /// whose headers could not be read.
    NoSocket,
    /// A packet forwarded or bridged that is neither IPv4 nor IPv6.
    NotIp,
    /// An IP fragment forwarded: only the first carries the ports.
    Fragment,
    /// No delivery point claimed it, a key the group map had no room for,
    /// or a socket window open across the interval's end.
    NoPoint,
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
    /// Payload bytes and the cost per byte (`--by flow|port` only).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Traffic>,
}

/// A group's payload bytes over the interval (of its socket calls), and
/// what its network time cost per KiB of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Traffic {
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The group's total ns × 1024 / (bytes in + out); none without bytes.
    pub ns_per_kib: Option<u64>,
}

impl Traffic {
    pub fn new(total_ns: u64, bytes_in: u64, bytes_out: u64) -> Traffic {
        let bytes = u128::from(bytes_in) + u128::from(bytes_out);
        let ns_per_kib = (bytes > 0).then(|| (u128::from(total_ns) * 1024 / bytes) as u64);
        Traffic {
            bytes_in,
            bytes_out,
            ns_per_kib,
        }
    }
}

impl Unattributed {
    /// As a table says it.
    pub fn words(self) -> &'static str {
        match self {
            Unattributed::SocketNotNamed => "socket not named yet",
            Unattributed::NoSocket => "no socket",
            Unattributed::NotIp => "not IP",
            Unattributed::Fragment => "IP fragment",
            Unattributed::NoPoint => "no delivery point",
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_is_flat_in_json_and_absent_without_it() {
        let mut group = Group {
            name: "10.0.0.1:40000 -> 10.0.0.2:5201 tcp".into(),
            label: String::new(),
            events: Attribution::zero_events(),
            traffic: Some(Traffic::new(3000, 1024, 2048)),
        };
        let json = serde_json::to_value(&group).unwrap();
        assert_eq!(json["bytes_in"], 1024);
        assert_eq!(json["bytes_out"], 2048);
        assert_eq!(json["ns_per_kib"], 1000);
        assert_eq!(serde_json::from_value::<Group>(json).unwrap(), group);

        group.traffic = None;
        let json = serde_json::to_value(&group).unwrap();
        assert!(json.get("bytes_in").is_none());
        assert_eq!(serde_json::from_value::<Group>(json).unwrap(), group);
        assert_eq!(
            Traffic::new(5, 0, 0).ns_per_kib,
            None,
            "no bytes, no cost per byte"
        );
    }
}
