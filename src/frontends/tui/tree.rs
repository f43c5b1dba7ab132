//! The breakdown panel's tree: sampled contexts (NET_RX, NET_TX, socket
//! calls, network timers), their categories, and the hottest kernel functions of each
//! category. Built once per snapshot and when a node opens; what is open
//! and selected is kept by name, so it survives the next snapshot
//! reshuffling the order. Finding a category's functions means
//! categorizing every stack again, so it is done for open categories only.

use std::collections::{BTreeMap, BTreeSet};

use crate::breakdown::hot::{hot_functions, HotFunction};
use crate::breakdown::Categorizer;
use crate::model::{SampleContext, Snapshot};

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
    /// The measured time the tree covers: its snapshots' intervals added.
    pub interval_s: f64,
}

/// One context's figures over a window, as they add up.
#[derive(Default)]
struct Sums {
    samples: u64,
    event_ns: u64,
    /// Samples x period, over the snapshots that say how they agree.
    sampled_ns: f64,
    agreed_ns: u64,
    /// Category -> (samples, its part of the exact time), first-seen order.
    categories: Vec<(String, u64, u64)>,
}

impl Tree {
    /// The breakdown of `window` (snapshots with their stacks, newest
    /// last) taken together, with the leaf functions of the categories
    /// `expansion` shows open. Over several intervals a category's time
    /// is the sum of its parts of each interval's exact time, so a share
    /// is of time, not of samples, and intervals sampled faster do not
    /// weigh more.
    pub fn build(
        window: &[&Snapshot],
        expansion: &Expansion,
        categorizer: &mut Categorizer,
    ) -> Tree {
        let Some(newest) = window.last() else {
            return Tree::default();
        };
        let mut sums: BTreeMap<SampleContext, Sums> = BTreeMap::new();
        for snapshot in window {
            categorizer.learn_programs(&snapshot.modules);
            for breakdown in &snapshot.breakdown {
                let event_ns = snapshot
                    .events
                    .get(&breakdown.context.event())
                    .map_or(0, |t| t.total_ns);
                let sum = sums.entry(breakdown.context).or_default();
                sum.samples += breakdown.samples;
                if let Some(agreement) = breakdown.agreement {
                    sum.sampled_ns += agreement * event_ns as f64;
                    sum.agreed_ns += event_ns;
                }
                for share in &breakdown.categories {
                    match sum
                        .categories
                        .iter_mut()
                        .find(|(n, ..)| *n == share.category)
                    {
                        Some((_, samples, ns)) => {
                            *samples += share.samples;
                            *ns += share.cpu_ns;
                        }
                        None => sum.categories.push((
                            share.category.clone(),
                            share.samples,
                            share.cpu_ns,
                        )),
                    }
                }
            }
        }
        // A context's time is its event's over the whole window, intervals
        // without samples included.
        for (context, sum) in sums.iter_mut() {
            sum.event_ns = window
                .iter()
                .map(|s| s.events.get(&context.event()).map_or(0, |t| t.total_ns))
                .sum();
        }
        let open = |context, category: &str| expansion.shows_category(context, category);
        let browsed: BTreeSet<SampleContext> = sums
            .iter()
            .filter(|(&c, sum)| sum.categories.iter().any(|(k, ..)| open(c, k)))
            .map(|(&c, _)| c)
            .collect();
        let hot = hot_functions(
            window
                .iter()
                .flat_map(|s| &s.stacks)
                .filter(|s| browsed.contains(&s.context)),
            FUNCTIONS_PER_CATEGORY,
            categorizer,
            open,
        );
        let contexts = SampleContext::ALL
            .iter()
            .filter_map(|context| Some((*context, sums.remove(context)?)))
            .map(|(context, sum)| {
                let sampled_ns: u64 = sum.categories.iter().map(|&(_, _, ns)| ns).sum();
                let mut categories: Vec<CategoryNode> = sum
                    .categories
                    .into_iter()
                    .map(|(name, samples, cpu_ns)| CategoryNode {
                        share: if sampled_ns > 0 {
                            cpu_ns as f64 / sampled_ns as f64
                        } else {
                            samples as f64 / sum.samples.max(1) as f64
                        },
                        functions: hot
                            .get(&(context, name.clone()))
                            .cloned()
                            .unwrap_or_default(),
                        name,
                        samples,
                        cpu_ns,
                    })
                    .collect();
                categories.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.name.cmp(&b.name)));
                ContextNode {
                    context,
                    samples: sum.samples,
                    event_ns: sum.event_ns,
                    agreement: (sum.agreed_ns > 0).then(|| sum.sampled_ns / sum.agreed_ns as f64),
                    calibration: newest
                        .events
                        .get(&context.event())
                        .and_then(|t| t.calibration),
                    categories,
                }
            })
            .collect();
        Tree {
            contexts,
            interval_s: window.iter().map(|s| s.interval_s).sum(),
        }
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
    use crate::model::{EventKey, StackCount};

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.events.get_mut(&EventKey::NetRxSoftirq).unwrap().total_ns = 1_000_000;
        s.stacks = vec![
            tcp_receive(&["f"], 3),
            tcp_receive(&["g"], 1),
            StackCount::of(SampleContext::SockSend, &["tcp_sendmsg", "h"], 2),
        ];
        s.breakdown = breakdowns(&s.stacks, &s.events, &s.modules, 99);
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
            Tree::build(&[&snapshot], expansion, categorizer)
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

    /// Two intervals together: times add up, shares are of the time, and
    /// the agreement is the time-weighted one.
    #[test]
    fn a_window_adds_its_intervals_up() {
        let first = snapshot();
        let mut second = snapshot();
        second.ts += 1.0;
        second.interval_s = 1.0;
        // Twice the time, all of it one category's.
        second
            .events
            .get_mut(&EventKey::NetRxSoftirq)
            .unwrap()
            .total_ns = 2_000_000;
        second.stacks = vec![tcp_receive(&["f"], 8)];
        second.breakdown = breakdowns(&second.stacks, &second.events, &second.modules, 99);
        let mut categorizer = Categorizer::default();
        let tree = Tree::build(&[&first, &second], &Expansion::default(), &mut categorizer);
        let rx = &tree.contexts[0];
        assert_eq!((rx.samples, rx.event_ns), (12, 3_000_000));
        assert_eq!(tree.interval_s, first.interval_s + 1.0);
        // One category (the same stacks): all of both intervals' time.
        assert_eq!(rx.categories.len(), 1);
        assert_eq!(
            (rx.categories[0].share, rx.categories[0].cpu_ns),
            (1.0, 3_000_000)
        );
        let agreement = |s: &Snapshot| s.breakdown[0].agreement.unwrap();
        let expected = (agreement(&first) * 1e6 + agreement(&second) * 2e6) / 3e6;
        assert!((rx.agreement.unwrap() - expected).abs() < 1e-12);
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
