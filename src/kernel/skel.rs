//! The libbpf-rs skeletons build.rs generates from `bpf/*.bpf.c`.

pub mod account {
    include!(concat!(env!("OUT_DIR"), "/account.skel.rs"));
}

pub mod probe {
    include!(concat!(env!("OUT_DIR"), "/probe.skel.rs"));
}
