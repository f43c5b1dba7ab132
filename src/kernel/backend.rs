//! Accounting backends: the same five events from different kernel hooks.
//! Which one runs is decided once, at start-up, from what the kernel allows.

use std::fmt;

use super::features::Features;
use super::KernelError;

/// What the user asked for with `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Tracepoint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// BTF tracepoints only: softirq, irq, timer, sched_switch and syscall
    /// enter/exit, with the socket window decided from the fd type.
    Tracepoint,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Tracepoint => "tracepoint",
        }
    }

    /// Oldest kernel the backend's hooks exist in (see README, "Backends").
    pub fn minimum_kernel(self) -> &'static str {
        match self {
            Backend::Tracepoint => "5.12",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The backend to use and, in words, why.
pub fn select(
    choice: BackendChoice,
    features: &Features,
) -> Result<(Backend, String), KernelError> {
    match features.tracepoint_backend_problem() {
        None => {
            let why = match choice {
                BackendChoice::Tracepoint => "requested with --backend tracepoint".to_owned(),
                BackendChoice::Auto => format!(
                    "all of its tracepoints are present; fentry/fexit: {}",
                    features.fentry.summary()
                ),
            };
            Ok((Backend::Tracepoint, why))
        }
        Some(problem) => Err(KernelError::NoBackend(problem)),
    }
}
