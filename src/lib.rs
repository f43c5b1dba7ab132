//! netto: how much CPU the Linux kernel network stack costs, measured
//! exactly with eBPF.
//!
//! Data flows one way: kernel maps ([`kernel`]) -> [`collect`] -> the
//! [`model`], streamed by a [`source`] (live or replayed) -> sinks
//! ([`sinks`]); a [`recording`] is checked before it is replayed. Sinks never touch BPF; the collector
//! never renders. [`demo`], [`netns`] and [`load`] make traffic to measure.

pub mod abi;
pub mod breakdown;
pub mod cli;
pub mod collect;
pub mod demo;
pub mod kernel;
pub mod load;
pub mod model;
pub mod netns;
pub mod recording;
pub mod sinks;
pub mod sketch;
pub mod source;
pub mod symbols;
