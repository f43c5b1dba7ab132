//! Where snapshots go. Sinks only consume the model; none touches BPF.

pub mod flame;
pub mod history;
pub mod output;
pub mod sketch;
pub mod stat;
pub mod tui;
pub mod web;
