//! The breakdown panel's tree: sampled contexts (NET_RX, NET_TX, socket
//! calls, network timers), their categories, and the hottest kernel functions of each
//! category. Built once per snapshot and when a node opens; what is open
//! and selected is kept by name, so it survives the next snapshot
//! reshuffling the order. Finding a category's functions means
//! categorizing every stack again, so it is done for open categories only.

use std::collections::{BTreeMap, BTreeSet};

use crate::breakdown::hot::{hot_functions, HotFunction};
use crate::breakdown::Categorizer;
use crate::model::{SampleContext, Snapshot, StackCount};

/// Functions listed under an open category; more would push the other
/// categories off a 24-line screen.
pub const FUNCTIONS_PER_CATEGORY: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct ContextNode {
    pub context: SampleContext,
    pub samples: u64,
    /// The exact time of the context's event over the interval.
    pub event_ns: u64,
    /// Samples x period / `event_ns` ([`crate::model::Breakdown`]).
    pub agreement: Option<f64>,
    /// Where the event is estimated: its samples' agreement where the run
    /// measured it ([`crate::model::Calibration`]).
    pub calibration: Option<crate::model::Calibration>,
    pub categories: Vec<CategoryNode>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CategoryNode {
    pub name: String,
    pub samples: u64,
    /// Of the context's samples.
    pub share: f64,
    pub cpu_ns: u64,
    /// Found only while the category is open.
    pub functions: Vec<HotFunction>,
}

impl CategoryNode {
    /// A function's estimated CPU time: its part of the category's samples
    /// times the category's exact time.
    pub fn function_ns(&self, function: &HotFunction) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.cpu_ns as f64 * function.samples as f64 / self.samples as f64
        }
    }
}

/// Where a row sits in the tree, by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeId {
    Context(SampleContext),
    Category(SampleContext, String),
    Function(SampleContext, String, String),
}

impl NodeId {
    pub fn parent(&self) -> Option<NodeId> {
        match self {
            NodeId::Context(_) => None,
            NodeId::Category(context, _) => Some(NodeId::Context(*context)),
            NodeId::Function(context, category, _) => {
                Some(NodeId::Category(*context, category.clone()))
            }
        }
    }
}

/// Which nodes are open. Contexts start open (there are at most five),
/// categories closed (each opens onto a list of functions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expansion {
    closed_contexts: BTreeSet<SampleContext>,
    open_categories: BTreeMap<SampleContext, BTreeSet<String>>,
}

impl Expansion {
    pub fn is_open(&self, id: &NodeId) -> bool {
        match id {
            NodeId::Context(context) => !self.closed_contexts.contains(context),
            NodeId::Category(context, name) => self.shows_category(*context, name),
            NodeId::Function(..) => false,
        }
    }

    /// Whether a category is open and on screen (its context open too).
    pub fn shows_category(&self, context: SampleContext, name: &str) -> bool {
        !self.closed_contexts.contains(&context)
            && self
                .open_categories
                .get(&context)
                .is_some_and(|open| open.contains(name))
    }

    /// Opens or closes a node; functions have nothing to open.
    pub fn set(&mut self, id: &NodeId, open: bool) {
        match id {
            NodeId::Context(context) if open => {
                self.closed_contexts.remove(context);
            }
            NodeId::Context(context) => {
                self.closed_contexts.insert(*context);
            }
            NodeId::Category(context, name) if open => {
                self.open_categories
                    .entry(*context)
                    .or_default()
                    .insert(name.clone());
            }
            NodeId::Category(context, name) => {
                if let Some(open) = self.open_categories.get_mut(context) {
                    open.remove(name);
                }
            }
            NodeId::Function(..) => {}
        }
    }
}

/// One visible line of the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Row<'a> {
    Context(&'a ContextNode),
    Category(&'a ContextNode, &'a CategoryNode),
    Function(&'a ContextNode, &'a CategoryNode, &'a HotFunction),
}

impl Row<'_> {
    pub fn id(&self) -> NodeId {
        match *self {
            Row::Context(c) => NodeId::Context(c.context),
            Row::Category(c, k) => NodeId::Category(c.context, k.name.clone()),
            Row::Function(c, k, f) => NodeId::Function(c.context, k.name.clone(), f.name.clone()),
        }
    }

    /// Whether the node has children to show.
    pub fn has_children(&self) -> bool {
        match self {
            Row::Context(c) => !c.categories.is_empty(),
            Row::Category(_, k) => k.samples > 0,
            Row::Function(..) => false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    pub contexts: Vec<ContextNode>,
}

impl Tree {
    /// The snapshot's breakdown, with the leaf functions of `stacks` (the
    /// snapshot's) under the categories `expansion` shows open.
    pub fn build(
        snapshot: &Snapshot,
        stacks: &[StackCount],
        expansion: &Expansion,
        categorizer: &mut Categorizer,
    ) -> Tree {
        let open = |context, category: &str| expansion.shows_category(context, category);
        let browsed: BTreeSet<SampleContext> = snapshot
            .breakdown
            .iter()
            .filter(|b| b.categories.iter().any(|k| open(b.context, &k.category)))
            .map(|b| b.context)
            .collect();
        let hot = hot_functions(
            stacks.iter().filter(|s| browsed.contains(&s.context)),
            FUNCTIONS_PER_CATEGORY,
            categorizer,
            open,
        );
        let contexts = snapshot
            .breakdown
            .iter()
            .map(|breakdown| ContextNode {
                context: breakdown.context,
                samples: breakdown.samples,
                event_ns: snapshot
                    .events
                    .get(&breakdown.context.event())
                    .map_or(0, |t| t.total_ns),
                agreement: breakdown.agreement,
                calibration: snapshot
                    .events
                    .get(&breakdown.context.event())
                    .and_then(|t| t.calibration),
                categories: breakdown
                    .categories
                    .iter()
                    .map(|share| CategoryNode {
                        name: share.category.clone(),
                        samples: share.samples,
                        share: share.share,
                        cpu_ns: share.cpu_ns,
                        functions: hot
                            .get(&(breakdown.context, share.category.as_str()))
                            .cloned()
                            .unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect();
        Tree { contexts }
    }

    /// The rows the expansion shows, top to bottom.
    pub fn rows(&self, expansion: &Expansion) -> Vec<Row<'_>> {
        let mut rows = Vec::new();
        for context in &self.contexts {
            rows.push(Row::Context(context));
            if !expansion.is_open(&NodeId::Context(context.context)) {
                continue;
            }
            for category in &context.categories {
                rows.push(Row::Category(context, category));
                if expansion.shows_category(context.context, &category.name) {
                    rows.extend(
                        category
                            .functions
                            .iter()
                            .map(|f| Row::Function(context, category, f)),
                    );
                }
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown::breakdowns;
    use crate::breakdown::hot::tcp_receive;
    use crate::model::EventKey;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.events.get_mut(&EventKey::NetRxSoftirq).unwrap().total_ns = 1_000_000;
        s.stacks = vec![
            tcp_receive(&["f"], 3),
            tcp_receive(&["g"], 1),
            StackCount::of(SampleContext::SockSend, &["tcp_sendmsg", "h"], 2),
        ];
        s.breakdown = breakdowns(&s.stacks, &s.events, 99);
        s
    }

    fn ids(tree: &Tree, expansion: &Expansion) -> Vec<NodeId> {
        tree.rows(expansion).iter().map(Row::id).collect()
    }

    #[test]
    fn contexts_open_categories_closed_until_opened() {
        let snapshot = snapshot();
        let mut categorizer = Categorizer::default();
        let mut expansion = Expansion::default();
        let build = |expansion: &Expansion, categorizer: &mut Categorizer| {
            Tree::build(&snapshot, &snapshot.stacks, expansion, categorizer)
        };
        let tree = build(&expansion, &mut categorizer);
        assert!(tree.contexts[0].categories[0].functions.is_empty());
        let tcp = NodeId::Category(SampleContext::NetRx, "local_tcp".into());
        assert_eq!(
            ids(&tree, &expansion),
            [
                NodeId::Context(SampleContext::NetRx),
                tcp.clone(),
                NodeId::Context(SampleContext::SockSend),
                NodeId::Category(SampleContext::SockSend, "tcp_output".into()),
            ]
        );
        expansion.set(&tcp, true);
        let tree = build(&expansion, &mut categorizer);
        let rows = tree.rows(&expansion);
        assert_eq!(rows.len(), 6);
        let Row::Function(_, category, function) = rows[2] else {
            panic!("a function under the open category: {:?}", rows[2]);
        };
        assert_eq!((function.name.as_str(), function.samples), ("f", 3));
        assert_eq!(category.function_ns(function), 750_000.0);
        expansion.set(&NodeId::Context(SampleContext::NetRx), false);
        assert_eq!(tree.rows(&expansion).len(), 3);
    }

    #[test]
    fn parents() {
        let f = NodeId::Function(SampleContext::NetTx, "qdisc".into(), "f".into());
        let category = f.parent().unwrap();
        assert_eq!(
            category,
            NodeId::Category(SampleContext::NetTx, "qdisc".into())
        );
        assert_eq!(
            category.parent(),
            Some(NodeId::Context(SampleContext::NetTx))
        );
        assert_eq!(NodeId::Context(SampleContext::NetTx).parent(), None);
    }
}
