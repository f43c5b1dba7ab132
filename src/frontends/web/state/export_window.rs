//! What the OTLP exporter reads of the state: the kept stacks of the
//! snapshots that arrived since its last window.

use std::sync::Arc;

use super::State;
use crate::model::Snapshot;

impl State {
    /// The kept snapshots (their stacks, each event's total, attribution)
    /// that ended after `after_ts`, oldest first: successive windows that
    /// pass the newest one's time share no snapshot and miss none the
    /// history still holds.
    pub fn stacks_after(&self, after_ts: f64) -> Vec<Arc<Snapshot>> {
        self.read()
            .stacks
            .iter()
            .filter(|kept| kept.sampled.ts > after_ts)
            .map(|kept| kept.sampled.clone())
            .collect()
    }
}
