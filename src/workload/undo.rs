//! What a process made that must not outlive it (a namespace, a cgroup, a
//! CPU taken offline), and how to undo it, for an exit that runs no
//! destructor: a test run's Ctrl-C kills the test process, which leaves
//! whatever its guards still held. Each maker registers its undo and keeps
//! the [`Registered`] token beside what it made; the owner's own destructor
//! undoes the thing, and dropping the token forgets the undo. A signal
//! handler about to end the process calls [`undo_all`] for the rest.
//!
//! netto's own commands need none of this: they end on a signal by
//! returning, so their destructors run (`commands::signals`). The tests
//! install the handler (`tests/common`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

type Undo = Box<dyn FnOnce() + Send>;

/// Undos not yet forgotten, oldest first, by token.
pub struct UndoList {
    pending: Mutex<Vec<(u64, Undo)>>,
    next_token: AtomicU64,
}

/// The process's list, which [`register`] and [`undo_all`] use.
static PROCESS: UndoList = UndoList::new();

/// An undo still registered; dropping it forgets the undo without running
/// it (the owner has undone the thing itself, or is about to).
#[must_use = "dropping the token forgets the undo at once"]
pub struct Registered {
    list: &'static UndoList,
    token: u64,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registered({})", self.token)
    }
}

impl UndoList {
    pub const fn new() -> UndoList {
        UndoList {
            pending: Mutex::new(Vec::new()),
            next_token: AtomicU64::new(0),
        }
    }

    /// The list, even if a panic elsewhere poisoned its lock: an undo list
    /// left half-updated is still the best guide to what is left.
    fn pending(&self) -> MutexGuard<'_, Vec<(u64, Undo)>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers `undo` for [`undo_all`](Self::undo_all). It must be safe to
    /// run after the owner has undone the thing too (a signal may come in
    /// between), so undos ignore what is already gone.
    pub fn register(&'static self, undo: impl FnOnce() + Send + 'static) -> Registered {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.pending().push((token, Box::new(undo)));
        Registered { list: self, token }
    }

    /// Runs every undo still registered, newest first (what was made
    /// inside something else goes before it), and forgets them. Returns
    /// how many ran.
    pub fn undo_all(&self) -> usize {
        let undos = std::mem::take(&mut *self.pending());
        let ran = undos.len();
        for (_, undo) in undos.into_iter().rev() {
            undo();
        }
        ran
    }
}

impl Default for UndoList {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.list
            .pending()
            .retain(|(token, _)| *token != self.token);
    }
}

/// Registers `undo` with the process's list.
pub fn register(undo: impl FnOnce() + Send + 'static) -> Registered {
    PROCESS.register(undo)
}

/// Runs what the process's list still holds (see [`UndoList::undo_all`]).
pub fn undo_all() -> usize {
    PROCESS.undo_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn undoes_what_is_left_newest_first_and_forgets_what_was_dropped() {
        static LIST: UndoList = UndoList::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let record = |name: &'static str| {
            let log = Arc::clone(&log);
            move || log.lock().unwrap().push(name)
        };
        let outer = LIST.register(record("namespace"));
        let dropped = LIST.register(record("cgroup"));
        let inner = LIST.register(record("veth"));
        drop(dropped);
        assert_eq!(LIST.undo_all(), 2);
        assert_eq!(*log.lock().unwrap(), ["veth", "namespace"]);
        // Each undo runs once: the tokens dropped later find nothing.
        drop((outer, inner));
        assert_eq!(LIST.undo_all(), 0);
        assert_eq!(log.lock().unwrap().len(), 2);
    }
}
