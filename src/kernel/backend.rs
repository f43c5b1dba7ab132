//! Accounting backends: the same five events from different kernel hooks,
//! and which of them this kernel can run. [`super::selection`] makes the
//! choice final by loading and self-checking them.

use std::fmt;

use super::features::Features;
use super::KernelError;

/// What the user asked for with `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Fentry,
    Tracepoint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// fentry/fexit on the kernel's socket send/receive functions: no hook
    /// on every system call, so cheaper, but it needs ftrace.
    Fentry,
    /// BTF tracepoints only: softirq, irq, timer, sched_switch and syscall
    /// enter/exit, with the socket window decided from the fd type.
    Tracepoint,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Fentry => "fentry",
            Backend::Tracepoint => "tracepoint",
        }
    }

    /// Oldest kernel the backend's hooks exist in (docs/src/concepts/backends.md):
    /// both keep windows of switched-out tasks in task storage, which
    /// tracing programs may use since 5.12.
    pub fn minimum_kernel(self) -> &'static str {
        "5.12"
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why auto took the tracepoint backend when fentry cannot run: said in
/// every run's notes, so short; `netto check` gives the cause and the cost.
pub const FENTRY_UNAVAILABLE: &str = "fentry/fexit unavailable here (`netto check` says why)";

/// What the tracepoint backend costs beside fentry's, for `netto check`.
pub const TRACEPOINT_COST: &str = "the tracepoint backend runs on every system call of the \
     host to find the socket calls, where fentry runs on socket functions only: a host making \
     many other system calls pays more (the manual's Performance page compares the two)";

/// A backend worth trying, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub backend: Backend,
    pub why: String,
}

/// The backends to try, best first. Loading decides in the end: a fentry
/// backend whose self-check misses a kind of socket call gives way to the
/// next candidate (see [`super::selection::select`]).
pub fn candidates(
    choice: BackendChoice,
    features: &Features,
) -> Result<Vec<Candidate>, KernelError> {
    let fentry = features.fentry_backend_problem();
    let tracepoint = features.tracepoint_backend_problem();
    let candidate = |backend, why: &str| Candidate {
        backend,
        why: why.to_owned(),
    };
    match choice {
        BackendChoice::Fentry => match fentry {
            None => Ok(vec![candidate(
                Backend::Fentry,
                "requested with --backend fentry",
            )]),
            Some(problem) => Err(KernelError::Unavailable {
                backend: Backend::Fentry.name(),
                problem,
            }),
        },
        BackendChoice::Tracepoint => match tracepoint {
            None => Ok(vec![candidate(
                Backend::Tracepoint,
                "requested with --backend tracepoint",
            )]),
            Some(problem) => Err(KernelError::Unavailable {
                backend: Backend::Tracepoint.name(),
                problem,
            }),
        },
        BackendChoice::Auto => {
            let mut list = Vec::new();
            if fentry.is_none() {
                list.push(candidate(
                    Backend::Fentry,
                    "fentry/fexit attach here and need no hook on every system call",
                ));
            }
            if tracepoint.is_none() {
                let why = match &fentry {
                    None => "all of its tracepoints are present".to_owned(),
                    Some(_) => FENTRY_UNAVAILABLE.to_owned(),
                };
                list.push(Candidate {
                    backend: Backend::Tracepoint,
                    why,
                });
            }
            if list.is_empty() {
                let problem = tracepoint.or(fentry).unwrap_or_default();
                return Err(KernelError::NoBackend(problem));
            }
            Ok(list)
        }
    }
}
