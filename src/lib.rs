//! netto: how much CPU the Linux kernel network stack costs, measured
//! exactly with eBPF.
//!
//! Data flows one way: kernel maps ([`kernel`]) -> [`collect`] -> the
//! [`model`] -> sinks ([`sinks`]). Sinks never touch BPF; the collector
//! never renders.

pub mod abi;
pub mod cli;
pub mod collect;
pub mod kernel;
pub mod model;
pub mod sinks;
pub mod symbols;
