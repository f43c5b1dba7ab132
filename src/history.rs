//! The recent past every live view keeps: the TUI's chart, the web view's
//! history endpoint and "a flame graph of the last N seconds" all read the
//! same kind of bounded window of per-interval entries.

use std::collections::VecDeque;
use std::mem::size_of;

use crate::model::{Snapshot, StackCount};

/// What a history keeps per interval.
pub trait Entry {
    /// The measured length of the interval it stands for.
    fn interval_s(&self) -> f64;
    /// The bytes it holds, as counted against a history's byte budget.
    fn bytes(&self) -> usize;
}

impl Entry for Snapshot {
    fn interval_s(&self) -> f64 {
        self.interval_s
    }

    /// The struct and its stacks, which dominate a sampled snapshot.
    fn bytes(&self) -> usize {
        size_of::<Snapshot>() + stack_bytes(&self.stacks)
    }
}

/// The heap bytes of symbolized stacks: each frame's string, the group's
/// name, and the vectors that hold them.
pub fn stack_bytes(stacks: &[StackCount]) -> usize {
    stacks
        .iter()
        .map(|s| {
            size_of::<StackCount>()
                + s.frames.len() * size_of::<String>()
                + s.frames.iter().map(String::len).sum::<usize>()
                + s.group.as_ref().map_or(0, String::len)
        })
        .sum()
}

/// Entries covering at most `span_s` seconds of measured time and at most
/// `budget` bytes, oldest first. Memory stays flat however long netto runs,
/// and however short its interval.
#[derive(Debug, Clone)]
pub struct History<T = Snapshot> {
    span_s: f64,
    budget: usize,
    bytes: usize,
    covered_s: f64,
    entries: VecDeque<T>,
}

impl<T: Entry> History<T> {
    /// Bounded by time only.
    pub fn new(span_s: f64) -> Self {
        History::with_budget(span_s, usize::MAX)
    }

    /// Bounded by time and by bytes: the oldest entries go first when
    /// either bound is passed (the newest entry is always kept).
    pub fn with_budget(span_s: f64, budget: usize) -> Self {
        History {
            span_s,
            budget,
            bytes: 0,
            covered_s: 0.0,
            entries: VecDeque::new(),
        }
    }

    pub fn push(&mut self, entry: T) {
        self.bytes += entry.bytes();
        self.covered_s += entry.interval_s();
        self.entries.push_back(entry);
        while self.entries.len() > 1
            && (self.covered_s - self.front_interval_s() >= self.span_s || self.bytes > self.budget)
        {
            if let Some(oldest) = self.entries.pop_front() {
                self.bytes -= oldest.bytes();
                self.covered_s -= oldest.interval_s();
            }
        }
    }

    pub fn latest(&self) -> Option<&T> {
        self.entries.back()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.entries.iter()
    }

    /// The newest entries that together cover at least `seconds` (all of
    /// them if the window is shorter), oldest first.
    pub fn last(&self, seconds: f64) -> impl Iterator<Item = &T> {
        let mut covered = 0.0;
        let taken = self
            .entries
            .iter()
            .rev()
            .take_while(|e| {
                let take = covered < seconds;
                covered += e.interval_s();
                take
            })
            .count();
        self.entries.range(self.entries.len() - taken..)
    }

    fn front_interval_s(&self) -> f64 {
        self.entries.front().map_or(0.0, Entry::interval_s)
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
    fn last_seconds() {
        let mut history = History::new(60.0);
        for ts in 1..=5 {
            history.push(snapshot(f64::from(ts), u64::try_from(ts).unwrap()));
        }
        let last = |seconds| history.last(seconds).map(|s| s.ts).collect::<Vec<f64>>();
        assert_eq!(last(2.0), [4.0, 5.0]);
        assert_eq!(last(100.0), [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(History::<Snapshot>::new(1.0).last(5.0).count(), 0);
    }

    /// An entry of a given size, for the budget.
    struct Blob(usize);

    impl Entry for Blob {
        fn interval_s(&self) -> f64 {
            0.05
        }
        fn bytes(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn the_byte_budget_drops_the_oldest_first_and_keeps_the_newest() {
        let mut history = History::with_budget(3600.0, 1000);
        for _ in 0..100 {
            history.push(Blob(30));
        }
        // 33 entries of 30 bytes fit in 1000; the time span (72 000
        // entries of 50 ms) is far from full.
        assert_eq!(history.len(), 33);
        // Too big for the budget alone, yet the newest: kept, alone.
        history.push(Blob(5000));
        assert_eq!(history.len(), 1);
        assert_eq!(history.latest().unwrap().0, 5000);
        // And gone as soon as something newer arrives.
        history.push(Blob(10));
        history.push(Blob(10));
        assert_eq!(history.len(), 2);
    }

    #[test]
    fn stack_bytes_count_every_frame() {
        let stacks = [
            StackCount::of(SampleContext::NetRx, &["abc", "de"], 1),
            StackCount::of(SampleContext::NetTx, &["f"], 7).for_group("/g"),
        ];
        let expected = 2 * size_of::<StackCount>() + 3 * size_of::<String>() + 6 + 2;
        assert_eq!(stack_bytes(&stacks), expected);
    }
}
