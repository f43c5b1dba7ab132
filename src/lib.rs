//! netto: how much CPU the Linux kernel network stack costs, measured
//! exactly with eBPF.
//!
//! This is the library behind the `netto` binary; what netto does for its
//! users, and what each number means, is the manual in `docs/src/` (an
//! mdBook: `mdbook build docs`). `CONTRIBUTING.md` says how the repository
//! is laid out and which tests to run.
//!
//! Data flows one way: kernel maps ([`kernel`]) -> [`collect`] -> the
//! [`model`], streamed by a [`source`] (live or replayed) -> front ends
//! ([`frontends`]); a [`recording`] is checked before it is replayed. Front
//! ends never touch BPF; the collector never renders. [`history`] is the
//! recent past the live front ends keep, [`output_file`] writes result files
//! whole or not at all. [`workload`] makes traffic to measure and is not
//! part of the measuring path. [`docs`] renders the reference pages (the
//! metrics, the command line, the JSON schemas) from the code.
//!
//! # Where to start reading
//!
//! 1. [`model`]: the [`Snapshot`](model::Snapshot), one interval of
//!    everything netto measured, which every front end consumes and every
//!    recording holds. Its field names are the JSON the manual documents.
//! 2. [`cli`]: the commands and the measuring options they share, turned
//!    into one live configuration.
//! 3. [`source`]: the snapshot stream. [`source::live`] starts a run in
//!    steps (privileges, backend, statistics; the sampler, symbols, demo
//!    traffic; then the interval loop), and its [`intervals`](source::intervals),
//!    [`budget`](source::budget) and [`duty`](source::duty) modules keep
//!    time, cost and BPF statistics; [`source::replay`] plays a recording,
//!    read and checked by [`recording`], instead.
//! 4. [`kernel`]: what the running kernel allows
//!    ([`features`](kernel::features)), the backend choice and its
//!    self-check ([`selection`](kernel::selection)), and attaching the BPF
//!    programs of `bpf/` (`bpf/netto.h` is their ABI, `bpf/account.bpf.c`
//!    the accounting's state machine).
//! 5. [`collect`]: cumulative kernel counters turned into one snapshot per
//!    interval, netto's own cost ([`cost`](collect::cost)), the estimates of
//!    the lower tiers ([`estimate`](collect::estimate)) and who pays
//!    ([`attribution`](collect::attribution)).
//! 6. [`symbols`] and [`breakdown`]: sampled stacks named from kallsyms,
//!    then sorted into contexts and categories by tables
//!    ([`categories`](breakdown::categories), [`placement`](breakdown::placement)).
//! 7. [`frontends`]: `stat`'s table and JSON, `top`'s terminal view, the web
//!    server, and flame graphs, folded stacks and pprof profiles.
//! 8. [`sketch`]: the XDP sketch's control plane, beside the rest.
//!
//! The binary's `src/commands/` wires one source to one front end per
//! command; [`workload`] and `src/bin/netto-loadgen.rs` make the traffic the
//! demo and the tests measure.

pub mod abi;
pub mod breakdown;
pub mod cli;
pub mod collect;
pub mod docs;
pub mod frontends;
pub mod history;
pub mod kernel;
pub mod model;
pub mod output_file;
pub mod recording;
pub mod sketch;
pub mod source;
pub mod symbols;
pub mod workload;
