//! The libbpf-rs skeletons build.rs generates from `bpf/*.bpf.c`, and the
//! one way netto loads them ([`load`]).
// The skeletons are libbpf-rs's generated code, whose unsafe blocks carry
// no `SAFETY:` comments; this file writes no unsafe code of its own.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::OpenObject;

/// A loaded skeleton of the builder `B`.
pub type Loaded<'obj, B> = <<B as SkelBuilder<'obj>>::Output as OpenSkel<'obj>>::Output;

/// Opens the object of `B` in `storage`, has `prepare` set what must be
/// settled before the verifier sees it (maps shared with an object loaded
/// before, read-only data, which programs load, map sizes) and loads it.
/// Every libbpf error on the way becomes `failed`'s; what `prepare`
/// returns comes back beside the skeleton.
pub fn load<'obj, B, T, E>(
    storage: &'obj mut MaybeUninit<OpenObject>,
    failed: impl Fn(libbpf_rs::Error) -> E,
    prepare: impl FnOnce(&mut B::Output) -> Result<T, E>,
) -> Result<(Loaded<'obj, B>, T), E>
where
    B: SkelBuilder<'obj> + Default,
{
    let mut open = B::default().open(storage).map_err(&failed)?;
    let prepared = prepare(&mut open)?;
    let skel = open.load().map_err(failed)?;
    Ok((skel, prepared))
}

pub mod account {
    include!(concat!(env!("OUT_DIR"), "/account.skel.rs"));
}

pub mod sample {
    include!(concat!(env!("OUT_DIR"), "/sample.skel.rs"));
}

/// The co-hosted XDP sketch (see `crate::sketch`).
pub mod sketch {
    include!(concat!(env!("OUT_DIR"), "/sketch.skel.rs"));
}

/// Attribution's delivery points (whom softirq time was for).
pub mod attribute {
    include!(concat!(env!("OUT_DIR"), "/attribute.skel.rs"));
}

/// An empty program whose entry cost start-up measures (see
/// `kernel::dispatch`).
pub mod dispatch {
    include!(concat!(env!("OUT_DIR"), "/dispatch.skel.rs"));
}

/// A kernel symbol's address by name (see `kernel::lookup`).
pub mod lookup {
    include!(concat!(env!("OUT_DIR"), "/lookup.skel.rs"));
}

pub mod probe {
    include!(concat!(env!("OUT_DIR"), "/probe.skel.rs"));
}

/// Empty programs on netto's hooks: the baseline the overhead benchmark
/// compares netto's per-run cost with.
#[cfg(feature = "test-support")]
pub mod baseline {
    include!(concat!(env!("OUT_DIR"), "/baseline.skel.rs"));
}

/// A no-op XDP program: the baseline the sketch benchmark compares with.
#[cfg(feature = "test-support")]
pub mod xdp_baseline {
    include!(concat!(env!("OUT_DIR"), "/xdp_baseline.skel.rs"));
}

/// An XDP, a tc and a cgroup_skb program that stand in for the host's own
/// data plane in the tests of the host's network programs.
#[cfg(feature = "test-support")]
pub mod stand_ins {
    include!(concat!(env!("OUT_DIR"), "/stand_ins.skel.rs"));
}
