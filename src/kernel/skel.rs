//! The libbpf-rs skeletons build.rs generates from `bpf/*.bpf.c`.

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

pub mod probe {
    include!(concat!(env!("OUT_DIR"), "/probe.skel.rs"));
}

/// Empty programs on netto's hooks: the floor the overhead benchmark
/// compares netto's per-run cost with.
#[cfg(feature = "test-support")]
pub mod floor {
    include!(concat!(env!("OUT_DIR"), "/floor.skel.rs"));
}

/// A no-op XDP program: the floor the sketch benchmark compares with.
#[cfg(feature = "test-support")]
pub mod xdp_floor {
    include!(concat!(env!("OUT_DIR"), "/xdp_floor.skel.rs"));
}
