//! The recent past every live view keeps: the TUI's chart, the web view's
//! history endpoint and "a flame graph of the last N seconds" all read the
//! same bounded window of snapshots.

use std::collections::VecDeque;

use crate::model::{merge_stacks, Snapshot, StackCount};

/// Snapshots covering at most `span_s` seconds of measured time, oldest
/// first. Memory stays flat however long netto runs.
#[derive(Debug, Clone)]
pub struct History {
    span_s: f64,
    snapshots: VecDeque<Snapshot>,
}

impl History {
    pub fn new(span_s: f64) -> Self {
        History {
            span_s,
            snapshots: VecDeque::new(),
        }
    }

    pub fn push(&mut self, snapshot: Snapshot) {
        self.snapshots.push_back(snapshot);
        while self.covered_s() - self.front_interval_s() >= self.span_s {
            self.snapshots.pop_front();
        }
    }

    pub fn latest(&self) -> Option<&Snapshot> {
        self.snapshots.back()
    }

    pub fn len(&self) -> usize {
        self.snapshots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Snapshot> + ExactSizeIterator {
        self.snapshots.iter()
    }

    /// The newest snapshots that together cover at least `seconds` (all of
    /// them if the window is shorter), oldest first.
    pub fn last(&self, seconds: f64) -> impl Iterator<Item = &Snapshot> {
        let mut covered = 0.0;
        let newest_first = self.snapshots.iter().rev().take_while(move |s| {
            let take = covered < seconds;
            covered += s.interval_s;
            take
        });
        let mut taken: Vec<&Snapshot> = newest_first.collect();
        taken.reverse();
        taken.into_iter()
    }

    /// Every stack sampled in the last `seconds`, merged: the input of a
    /// flame graph of that window.
    pub fn stacks(&self, seconds: f64) -> Vec<StackCount> {
        merge_stacks(self.last(seconds))
    }

    fn covered_s(&self) -> f64 {
        self.snapshots.iter().map(|s| s.interval_s).sum()
    }

    fn front_interval_s(&self) -> f64 {
        self.snapshots.front().map_or(0.0, |s| s.interval_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SampleContext;

    fn snapshot(ts: f64, stack_count: u64) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 1);
        s.ts = ts;
        s.interval_s = 1.0;
        s.stacks = vec![StackCount::of(SampleContext::NetRx, &["a"], stack_count)];
        s
    }

    #[test]
    fn keeps_only_the_span() {
        let mut history = History::new(3.0);
        for ts in 1..=10 {
            history.push(snapshot(f64::from(ts), 1));
        }
        let kept: Vec<f64> = history.iter().map(|s| s.ts).collect();
        assert_eq!(kept, [8.0, 9.0, 10.0]);
        assert_eq!(history.latest().unwrap().ts, 10.0);
    }

    #[test]
    fn last_seconds_and_their_stacks() {
        let mut history = History::new(60.0);
        for ts in 1..=5 {
            history.push(snapshot(f64::from(ts), u64::try_from(ts).unwrap()));
        }
        let last: Vec<f64> = history.last(2.0).map(|s| s.ts).collect();
        assert_eq!(last, [4.0, 5.0]);
        assert_eq!(history.stacks(2.0)[0].count, 9);
        assert_eq!(history.stacks(100.0)[0].count, 15);
        assert_eq!(History::new(1.0).stacks(5.0), []);
    }
}
