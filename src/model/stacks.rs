//! Sampled stacks and what netto reads from them: the context a sample
//! interrupted, the breakdown's shares and the sampler's statistics.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{EventKey, Snapshot};

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
