//! Where snapshots go: the front ends. They only consume the model; none
//! touches BPF.

pub mod calibration_text;
pub mod flame;
pub mod glossary;
pub mod label;
pub mod local_time;
pub mod network_programs;
pub mod notes;
pub mod rounding;
pub mod sketch;
pub mod stat;
pub mod tui;
pub mod web;
