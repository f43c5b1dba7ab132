//! The co-hosted XDP sketch: NitroSketch sampling over a Count Sketch,
//! counting flows on an interface so that netto can show both the heavy
//! hitters and what measuring them costs.
//!
//! Data flows one way: the program (`bpf/sketch.bpf.c`) writes per-CPU
//! slots ([`slots`]), [`host`] sums them into [`counters`], [`estimate`]
//! answers queries, and the result is a [`crate::model::SketchSnapshot`].
//! [`reference`] is the same algorithm in plain Rust, used by the tests to
//! hold the kernel program to exact counts.
//!
//! Top-K: the program keeps, per CPU, a ring of the flow keys of its last
//! sampled packets; user space estimates each candidate (and last
//! interval's ranking) with the sketch and ranks them. A flow carrying a
//! share s of the packets is missing from a ring of n sampled keys with
//! probability (1 - s)^n, so heavy hitters are found, while the packet
//! path pays only a 40-byte store per sampled packet: no sort, no median
//! and no hash table in the kernel, and nothing at all on skipped packets.

pub mod config;
pub mod counters;
pub mod error;
pub mod estimate;
pub mod flow;
pub mod hash;
pub mod host;
pub mod link;
pub mod packet;
pub mod program;
pub mod reference;
pub mod slots;
pub mod variates;

pub use config::SketchConfig;
pub use error::SketchError;
pub use host::Host;
