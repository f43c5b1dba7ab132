//! Accounting backends: the same five events from different kernel hooks.
//! Which one runs is decided once, at start-up, from what the kernel allows
//! and, for fentry, from a self-check that it sees every kind of socket call.

use std::fmt;

use super::features::Features;
use super::self_check::{self, SelfCheck};
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

    /// Oldest kernel the backend's hooks exist in (see README, "Backends"):
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

/// A backend worth trying, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub backend: Backend,
    pub why: String,
}

/// The backends to try, best first. Loading decides in the end: a fentry
/// backend whose self-check misses a kind of socket call gives way to the
/// next candidate (see `source::live`).
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
                    Some(problem) => format!("fentry backend unavailable: {problem}"),
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

/// The backend netto runs with, what it said about the choice, and the
/// self-check that decided it (fentry only).
#[derive(Debug)]
pub struct Chosen {
    pub backend: Backend,
    pub notes: Vec<String>,
    pub check: Option<SelfCheck>,
}

/// The first candidate that can run and, for fentry, sees every kind of
/// socket call in its self-check. Under `auto` a fentry backend that
/// misses calls or fails to load gives way to tracepoints, saying why; asked
/// for explicitly, it runs and warns what it misses.
pub fn choose(choice: BackendChoice, features: &Features) -> Result<Chosen, KernelError> {
    let mut notes = Vec::new();
    let candidates = candidates(choice, features)?;
    let last = candidates.len() - 1;
    for (i, candidate) in candidates.into_iter().enumerate() {
        let fallback = i < last;
        if candidate.backend != Backend::Fentry {
            notes.push(format!("backend {}: {}", candidate.backend, candidate.why));
            return Ok(Chosen {
                backend: candidate.backend,
                notes,
                check: None,
            });
        }
        match self_check::verify(Backend::Fentry) {
            Ok(check) if check.complete() || !fallback => {
                notes.push(if check.complete() {
                    format!(
                        "backend fentry: {}; self-check {}",
                        candidate.why,
                        check.summary()
                    )
                } else {
                    format!(
                        "backend fentry: {}; warning: self-check {}: those calls are not counted",
                        candidate.why,
                        check.summary()
                    )
                });
                return Ok(Chosen {
                    backend: Backend::Fentry,
                    notes,
                    check: Some(check),
                });
            }
            Ok(check) => notes.push(format!(
                "note: the fentry backend missed {} in its self-check on this kernel; falling back",
                check.missed().join(", ")
            )),
            Err(e) if fallback => notes.push(format!(
                "note: the fentry backend failed to load ({e}); falling back"
            )),
            Err(e) => return Err(e),
        }
    }
    Err(KernelError::NoBackend(notes.join("; ")))
}
