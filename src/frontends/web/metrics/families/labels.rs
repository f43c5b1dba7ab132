//! The labels the families carry: each named and explained once, with
//! every value it takes where they are a closed set.

use super::super::source_name;
use super::Label;
use crate::breakdown::Category;
use crate::model::{EventKey, Losses, SampleContext, SoftirqVector, Tier};
use crate::source::Origin;

pub(super) const EVENT: Label = Label {
    name: "event",
    meaning: "The network event (the JSON snapshot's `events` keys).",
    values: Some(|| EventKey::ALL.map(EventKey::name).to_vec()),
};

pub(super) const CPU: Label = Label {
    name: "cpu",
    meaning: "The CPU number.",
    values: None,
};

pub(super) const VECTOR: Label = Label {
    name: "vector",
    meaning: "The softirq vector, as /proc/softirqs names it.",
    values: Some(|| SoftirqVector::ALL.map(SoftirqVector::name).to_vec()),
};

pub(super) const CALLBACK: Label = Label {
    name: "callback",
    meaning: "The kernel function of a network timer callback, or `timer_softirq_overhead` for \
              the timer softirq's own work around them.",
    values: None,
};

pub(super) const CONTEXT: Label = Label {
    name: "context",
    meaning: "The network context a stack sample was taken in.",
    values: Some(|| SampleContext::ALL.map(SampleContext::name).to_vec()),
};

pub(super) const CATEGORY: Label = Label {
    name: "category",
    meaning: "Where in the stack a sample was: the breakdown's category (a replayed recording \
              from an older netto may name others). Every BPF program that is not netto's, \
              `bpf:NAME` in the breakdown, is `bpf_program` here.",
    values: Some(|| Category::ALL.map(Category::name).to_vec()),
};

pub(super) const LOSS_KIND: Label = Label {
    name: "kind",
    meaning: "The kind of loss (the JSON snapshot's `losses` fields).",
    values: Some(|| Losses::KINDS.iter().map(|kind| kind.name).collect()),
};

pub(super) const PROGRAM: Label = Label {
    name: "program",
    meaning: "A BPF program, by the name the kernel keeps (cut to 15 characters): one of \
              netto's in the own-cost families; one on the network path, netto's or not, in \
              `netto_ebpf_program_*`, `other` there for those beyond the first 64 series.",
    values: None,
};

pub(super) const ATTACH: Label = Label {
    name: "attach",
    meaning: "The hook the program runs on (`xdp`, `tc_ingress`, `tc_egress`, \
              `cgroup_skb_ingress`, ..., the JSON snapshot's `network_programs[].hook`).",
    values: None,
};

pub(super) const IFACE: Label = Label {
    name: "iface",
    meaning: "The interface of an XDP or tc program (empty for the others; `#N` for an \
              interface in another network namespace).",
    values: None,
};

pub(super) const TIER: Label = Label {
    name: "tier",
    meaning: "A cost tier (`--tier`), most exact first.",
    values: Some(|| Tier::ALL.map(Tier::name).to_vec()),
};

/// The direction of a budget step.
pub const DOWN: &str = "down";
pub const UP: &str = "up";

pub(super) const DIRECTION: Label = Label {
    name: "direction",
    meaning: "Which way the budget stepped: `down` to cost less, `up` when there was room.",
    values: Some(|| vec![DOWN, UP]),
};

pub(super) const GROUP_LABEL: Label = Label {
    name: "label",
    meaning: "A group's short name: the container, pod or systemd unit (a pod and its \
              container by the names the kubelet gave them, where its logs are read), the \
              command, the `ip netns` name; `other` and `unattributed` as their group.",
    values: None,
};

pub(super) const CGROUP: Label = Label {
    name: "cgroup",
    meaning: "The cgroup's path under the v2 root, `other` for the groups beyond \
              `--max-groups`, `unattributed` for time no group claimed.",
    values: None,
};

pub(super) const PID: Label = Label {
    name: "pid",
    meaning: "The process id, `other` or `unattributed` as for `cgroup`.",
    values: None,
};

pub(super) const NETNS: Label = Label {
    name: "netns",
    meaning: "The network namespace's inode number, `other` or `unattributed` as for `cgroup`.",
    values: None,
};

pub(super) const FLOW: Label = Label {
    name: "flow",
    meaning: "The connection, `LOCAL:PORT -> REMOTE:PORT PROTO`; `other` or `unattributed` as \
              for `cgroup`. Bounded by `--max-groups` like every group label.",
    values: None,
};

pub(super) const PORT: Label = Label {
    name: "port",
    meaning: "The service, `PORT/PROTO in` (served here) or `out` (used from here); `other` or \
              `unattributed` as for `cgroup`.",
    values: None,
};

pub(super) const HOST: Label = Label {
    name: "host",
    meaning: "The host name (of the recording, in a replay).",
    values: None,
};

pub(super) const KERNEL: Label = Label {
    name: "kernel",
    meaning: "The kernel release (of the recording, in a replay).",
    values: None,
};

pub(super) const BACKEND: Label = Label {
    name: "backend",
    meaning: "The accounting backend in use, as `netto check` names it.",
    values: None,
};

pub(super) const SOURCE: Label = Label {
    name: "source",
    meaning: "Whether netto measures now or replays a recording.",
    values: Some(|| {
        [Origin::Live, Origin::Replay(String::new())]
            .iter()
            .map(source_name)
            .collect()
    }),
};

pub(super) const VERSION: Label = Label {
    name: "version",
    meaning: "netto's version.",
    values: None,
};
