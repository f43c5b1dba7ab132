//! The budget's judgement, interval by interval: `steps.rs` when it steps
//! and how it waits, `order.rs` the order of its knobs, `priced.rs` the
//! steps it takes when each part's cost is known.

mod order;
mod priced;
mod steps;

use super::*;
use crate::model::{CostBasis, ProgramCost};

/// A 1 s interval of `cost` with `load` percent of one CPU of network
/// time.
fn loaded(cost: Overhead, load: f64) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 2);
    s.interval_s = 1.0;
    s.overhead = cost;
    s.events
        .get_mut(&crate::model::EventKey::NetRxSoftirq)
        .unwrap()
        .total_ns = (load * 1e7) as u64;
    s
}

/// An idle 1 s interval that cost `percent` with `error`.
fn cost(percent: f64, error: f64) -> Snapshot {
    loaded(
        Overhead {
            cost_percent: Some(percent),
            error_percent: error,
            ..Overhead::default()
        },
        0.0,
    )
}

/// Feeds `intervals` snapshots of one cost; returns each change made.
fn run(budget: &mut Budget, percent: f64, intervals: usize) -> Vec<Option<BudgetChange>> {
    (0..intervals)
        .map(|_| budget.observe(&cost(percent, 0.01)).0.change)
        .collect()
}

fn down(from_hz: u64, to_hz: u64) -> Option<BudgetChange> {
    Some(BudgetChange::Down { from_hz, to_hz })
}

fn tier_down(from: Tier, to: Tier) -> BudgetChange {
    BudgetChange::TierDown { from, to }
}

fn up(from_hz: u64, to_hz: u64) -> Option<BudgetChange> {
    Some(BudgetChange::Up { from_hz, to_hz })
}
