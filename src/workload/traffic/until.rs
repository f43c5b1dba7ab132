//! The end condition shared by every traffic loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A deadline, a stop flag, or both; whichever comes first ends the loop. Loops poll
/// it between syscalls instead of being interrupted, so a blocked call delays the
/// stop by at most [`super::IO_TIMEOUT`].
#[derive(Clone, Copy, Debug)]
pub struct Until<'a> {
    deadline: Option<Instant>,
    stop: Option<&'a AtomicBool>,
}

impl<'a> Until<'a> {
    pub fn deadline(at: Instant) -> Until<'static> {
        Until {
            deadline: Some(at),
            stop: None,
        }
    }

    /// A deadline `duration` from now; a duration too long to represent never ends.
    pub fn after(duration: Duration) -> Until<'static> {
        Until {
            deadline: Instant::now().checked_add(duration),
            stop: None,
        }
    }

    pub fn flag(stop: &'a AtomicBool) -> Until<'a> {
        Until {
            deadline: None,
            stop: Some(stop),
        }
    }

    /// Also ends when `stop` is set, e.g. by a signal handler.
    pub fn or_flag(self, stop: &'a AtomicBool) -> Until<'a> {
        Until {
            stop: Some(stop),
            ..self
        }
    }

    pub fn reached(&self) -> bool {
        self.deadline.is_some_and(|at| Instant::now() >= at)
            || self.stop.is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}
