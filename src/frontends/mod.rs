//! Where snapshots go: the front ends. They only consume the model; none
//! touches BPF.

pub mod calibration_text;
pub mod flame;
pub mod label;
pub mod notes;
pub mod sketch;
pub mod stat;
pub mod tui;
pub mod web;
