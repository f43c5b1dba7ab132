//! Everything that talks to the kernel: what it allows, loading and
//! attaching netto's BPF programs, reading their maps and run statistics.
//! Kernel-version differences live here, behind one choice made at start-up.

pub mod accounting;
pub mod attribution;
pub mod backend;
pub mod callbacks;
pub mod cgroup;
pub mod dispatch;
pub mod features;
pub mod functions;
pub mod hooks;
pub mod idle;
pub mod lookup;
pub mod mmap;
mod netlink;
pub mod network_hooks;
pub mod network_programs;
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

/// Why netto cannot load, attach or read its BPF programs. A libbpf or
/// system error underneath is kept as the source: `netto: error:` prints
/// the whole chain, and [`KernelError::describe`] does for a note.
#[derive(Debug, Error)]
pub enum KernelError {
    #[error("{}", privileges::REQUIREMENT)]
    NotPrivileged,
    #[error("kernel BTF is not available; netto needs a kernel built with CONFIG_DEBUG_INFO_BTF")]
    NoBtf(#[source] libbpf_rs::Error),
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
    #[error("loading {what}")]
    Load {
        what: &'static str,
        source: libbpf_rs::Error,
    },
    /// A BPF object that does not hold what netto built into it.
    #[error("{0}")]
    Object(&'static str),
    #[error("mapping BPF map {map} into memory")]
    Mmap {
        map: &'static str,
        source: std::io::Error,
    },
    #[error("attaching BPF program {prog}")]
    Attach {
        prog: String,
        source: libbpf_rs::Error,
    },
    #[error("the backend self-check could not run: {0}")]
    SelfCheck(String),
    #[error("opening the perf event for stack sampling failed: {0}")]
    Perf(String),
    #[error("BPF map {map}")]
    Map {
        map: &'static str,
        source: libbpf_rs::Error,
    },
}

impl KernelError {
    /// The error and its causes on one line, for a note.
    pub fn describe(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(e) = cause {
            text.push_str(&format!(": {e}"));
            cause = e.source();
        }
        text
    }
}
