//! netto: how much CPU the Linux kernel network stack costs, measured
//! exactly with eBPF.
//!
//! Data flows one way: kernel maps ([`kernel`]) -> [`collect`] -> the
//! [`model`], streamed by a [`source`] (live or replayed) -> front ends
//! ([`frontends`]); a [`recording`] is checked before it is replayed. Front
//! ends never touch BPF; the collector never renders. [`history`] is the
//! recent past the live front ends keep, [`output`] writes result files
//! whole or not at all. [`workload`] makes traffic to measure and is not
//! part of the measuring path. [`docs`] renders the reference pages (the
//! metrics, the command line, the JSON schemas) from the code.

pub mod abi;
pub mod breakdown;
pub mod cli;
pub mod collect;
pub mod docs;
pub mod frontends;
pub mod history;
pub mod kernel;
pub mod model;
pub mod output;
pub mod recording;
pub mod sketch;
pub mod source;
pub mod symbols;
pub mod workload;
