//! The co-hosted XDP sketch: NitroSketch sampling over a Count Sketch,
//! counting flows on an interface so that netto can show both the heavy
//! hitters and what measuring them costs.
//!
//! Data flows one way: the program (`bpf/sketch.bpf.c`) writes per-CPU
//! slots ([`slots`]), [`cohosted`] sums them into [`counters`], [`query`]
//! answers queries, and the result is a [`crate::model::SketchSnapshot`].
//! `reference` is the same algorithm in plain Rust and `packet` builds the
//! frames fed to both; the tests hold the kernel program to exact counts
//! with them (feature `test-support`).
//!
//! Top-K: each CPU slot holds a small table of candidate flows, bucketed
//! by hash bits, each bucket kept by a majority vote of the sampled packets
//! that fall in it (see `struct sketch_candidate`); user space estimates
//! the holders (and the previous ranking) with the sketch and ranks them.
//! A heavy flow wins its bucket and keeps it for a while after it stops,
//! unlike a ring of recent keys, which forgets a heavy flow that ended
//! early in an interval. Each flow has two buckets, so two flows sharing
//! one both keep a bucket. The packet path pays one or two 64-bit compares
//! (of the holders' hashes) per sampled packet: no sort, no median, no hash
//! map in the kernel, and nothing at all on skipped packets.

pub mod cohosted;
pub mod config;
pub mod counters;
pub mod error;
pub mod flow;
pub mod hash;
pub mod link;
#[cfg(any(test, feature = "test-support"))]
pub mod packet;
pub mod program;
pub mod query;
#[cfg(any(test, feature = "test-support"))]
pub mod reference;
pub mod slots;
pub mod variates;

pub use cohosted::Cohosted;
pub use config::SketchConfig;
pub use error::SketchError;
