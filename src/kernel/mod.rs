//! Everything that talks to the kernel: what it allows, loading and
//! attaching netto's BPF programs, reading their maps and run statistics.
//! Kernel-version differences live here, behind one choice made at start-up.

pub mod accounting;
pub mod attribution;
pub mod backend;
pub mod callbacks;
pub mod features;
pub mod functions;
pub mod perf;
pub mod privileges;
pub mod sampler;
pub mod selection;
pub mod self_check;
pub mod skel;
pub mod stats;
pub mod syscalls;
pub mod tracepoints;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum KernelError {
    #[error("{}", privileges::REQUIREMENT)]
    NotPrivileged,
    #[error(
        "kernel BTF is not available ({0}); netto needs a kernel built with CONFIG_DEBUG_INFO_BTF"
    )]
    NoBtf(String),
    #[error("this kernel lacks the tracepoints {missing}; the tracepoint backend needs Linux {minimum} or later")]
    MissingTracepoints {
        missing: String,
        minimum: &'static str,
    },
    #[error("no accounting backend can run here: {0}")]
    NoBackend(String),
    #[error(
        "the {backend} backend cannot run here ({problem}); --backend auto picks one that can"
    )]
    Unavailable {
        backend: &'static str,
        problem: String,
    },
    #[error("loading the BPF programs failed: {0}")]
    Load(String),
    #[error("attaching BPF program {prog} failed: {source}")]
    Attach {
        prog: String,
        source: libbpf_rs::Error,
    },
    #[error("the backend self-check could not run: {0}")]
    SelfCheck(String),
    #[error("opening the perf event for stack sampling failed: {0}")]
    Perf(String),
    #[error("BPF map {map}: {source}")]
    Map {
        map: &'static str,
        source: libbpf_rs::Error,
    },
}
