//! The kernel functions a category's time is spent in. A category says
//! which stage of the stack is expensive; the functions sampled at the top
//! of its stacks say what to look at in that stage (a lock, a copy, a
//! checksum), so front ends show them under the category.

use std::collections::{BTreeMap, HashMap};

use super::{Categorizer, Stage};
use crate::model::{SampleContext, StackCount};
use crate::symbols::symbolizer::FastState;

/// A function at the leaf of sampled stacks, and how many samples it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotFunction {
    pub name: String,
    pub samples: u64,
}

/// Per context and category name that is `wanted`, the leaf functions of
/// its stacks, most samples first (ties by name), at most `limit` of them.
/// The categories are decided as [`super::breakdowns`] decides them (a
/// program's stage by its `bpf:` name, once the categorizer has learnt
/// the programs), so the functions of a category add up to (at most) its
/// samples there. Callers pass only the stacks of contexts they want:
/// every stack passed is categorized, which is the cost.
pub fn hot_functions<'s>(
    stacks: impl IntoIterator<Item = &'s StackCount>,
    limit: usize,
    categorizer: &mut Categorizer,
    wanted: impl Fn(SampleContext, &str) -> bool,
) -> BTreeMap<(SampleContext, String), Vec<HotFunction>> {
    let mut counts: HashMap<(SampleContext, Stage<'s>, &str), u64, FastState> = HashMap::default();
    for stack in stacks {
        let Some(leaf) = stack.frames.last() else {
            continue;
        };
        let stage = categorizer.stage(stack.context, &stack.frames);
        if wanted(stack.context, &stage.name()) {
            *counts.entry((stack.context, stage, leaf)).or_default() += stack.count;
        }
    }
    let mut by_category: BTreeMap<(SampleContext, String), Vec<(&str, u64)>> = BTreeMap::new();
    for ((context, stage, leaf), samples) in counts {
        by_category
            .entry((context, stage.name().into_owned()))
            .or_default()
            .push((leaf, samples));
    }
    // Names are copied only for the functions kept: most leaves are not.
    by_category
        .into_iter()
        .map(|(key, mut leaves)| {
            leaves.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let kept = leaves
                .into_iter()
                .take(limit)
                .map(|(name, samples)| HotFunction {
                    name: name.to_owned(),
                    samples,
                })
                .collect();
            (key, kept)
        })
        .collect()
}

/// Test data: a NET_RX stack of local TCP delivery (`local_tcp`), with
/// `leaves` called from `tcp_v4_rcv`.
#[cfg(test)]
pub(crate) fn tcp_receive(leaves: &[&str], count: u64) -> StackCount {
    const PATH: &[&str] = &[
        "net_rx_action",
        "__napi_poll",
        "process_backlog",
        "__netif_receive_skb_one_core",
        "ip_rcv",
        "ip_rcv_finish",
        "ip_local_deliver",
        "ip_local_deliver_finish",
        "ip_protocol_deliver_rcu",
        "tcp_v4_rcv",
    ];
    let frames: Vec<&str> = PATH.iter().chain(leaves).copied().collect();
    StackCount::of(SampleContext::NetRx, &frames, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown::breakdowns;
    use crate::model::Snapshot;

    use super::tcp_receive as rx;

    #[test]
    fn leaves_of_a_category_most_samples_first() {
        let stacks = [
            rx(&["tcp_v4_do_rcv", "_raw_spin_lock"], 3),
            rx(&["__inet_lookup_established"], 5),
            rx(
                &["tcp_v4_do_rcv", "tcp_rcv_established", "_raw_spin_lock"],
                4,
            ),
            rx(&["tcp_v4_do_rcv"], 1),
            StackCount::of(
                SampleContext::SockSend,
                &["tcp_sendmsg", "_raw_spin_lock"],
                9,
            ),
        ];
        let hot = hot_functions(&stacks, 10, &mut Categorizer::default(), |_, _| true);
        let tcp = &hot[&(SampleContext::NetRx, "local_tcp".to_owned())];
        let listed: Vec<(&str, u64)> = tcp.iter().map(|f| (f.name.as_str(), f.samples)).collect();
        assert_eq!(
            listed,
            [
                ("_raw_spin_lock", 7),
                ("__inet_lookup_established", 5),
                ("tcp_v4_do_rcv", 1)
            ]
        );
        // The same function in another context is counted there.
        let send = &hot[&(SampleContext::SockSend, "tcp_output".to_owned())];
        assert_eq!(send[0].samples, 9);
        assert_eq!(hot.len(), 2);
    }

    #[test]
    fn agrees_with_the_breakdown_and_respects_the_limit() {
        let stacks = [
            rx(&["a"], 2),
            rx(&["b"], 3),
            rx(&["c"], 4),
            StackCount::of(SampleContext::NetRx, &["net_rx_action", "__napi_poll"], 6),
        ];
        let snapshot = Snapshot::empty("tracepoint", 1);
        let breakdown = &breakdowns(&stacks, &snapshot.events, &BTreeMap::new(), 999)[0];
        let hot = hot_functions(&stacks, 2, &mut Categorizer::default(), |_, _| true);
        for share in &breakdown.categories {
            let functions = &hot[&(SampleContext::NetRx, share.category.clone())];
            assert!(functions.len() <= 2);
            assert!(functions.iter().map(|f| f.samples).sum::<u64>() <= share.samples);
        }
        let tcp = &hot[&(SampleContext::NetRx, "local_tcp".to_owned())];
        assert_eq!(
            tcp.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["c", "b"]
        );
    }
}
