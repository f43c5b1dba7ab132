//! The backend netto runs with, chosen once at start-up by loading it: the
//! first candidate that loads and sees every kind of socket call in its
//! self-check stays loaded and attached, and is what the caller measures
//! with. `netto check` and every measuring command go through here, so
//! `check` reports exactly the choice a run makes.

use std::mem::MaybeUninit;

use libbpf_rs::OpenObject;

use super::accounting::Accounting;
use super::backend::{self, Backend, BackendChoice};
use super::features::Features;
use super::self_check::{self, SelfCheck};
use super::{privileges, KernelError};

/// Where the accounting objects [`select`] loads live: one place per
/// backend, because a fentry backend that fails its self-check is still
/// borrowed from its place while the next candidate loads into the other.
pub struct Storage {
    fentry: MaybeUninit<OpenObject>,
    tracepoint: MaybeUninit<OpenObject>,
}

impl Default for Storage {
    fn default() -> Self {
        Storage {
            fentry: MaybeUninit::uninit(),
            tracepoint: MaybeUninit::uninit(),
        }
    }
}

/// The chosen backend, loaded and attached.
pub struct Selection<'obj> {
    pub accounting: Accounting<'obj>,
    /// What was tried and why, one sentence each.
    pub notes: Vec<String>,
    /// The self-check of the backend chosen.
    pub check: SelfCheck,
}

/// The first candidate that loads and sees every kind of socket call in its
/// self-check. Under `auto` a fentry backend that misses calls or fails to
/// load gives way to tracepoints, saying why; the last candidate (or one
/// asked for explicitly) runs anyway and warns what it misses.
pub fn select<'obj>(
    choice: BackendChoice,
    features: &Features,
    storage: &'obj mut Storage,
) -> Result<Selection<'obj>, KernelError> {
    if !privileges::sufficient() {
        return Err(KernelError::NotPrivileged);
    }
    let Storage {
        fentry: fentry_place,
        tracepoint: tracepoint_place,
    } = storage;
    let (mut fentry_place, mut tracepoint_place) = (Some(fentry_place), Some(tracepoint_place));
    let mut notes = Vec::new();
    let candidates = backend::candidates(choice, features)?;
    let last = candidates.len() - 1;
    for (i, candidate) in candidates.into_iter().enumerate() {
        let fallback = i < last;
        let place = match candidate.backend {
            Backend::Fentry => fentry_place.take(),
            Backend::Tracepoint => tracepoint_place.take(),
        }
        .expect("each backend is a candidate once");
        let checked = Accounting::load(place, candidate.backend).and_then(|mut accounting| {
            let check = self_check::run(&mut accounting)?;
            Ok((accounting, check))
        });
        match checked {
            Ok((accounting, check)) if check.complete() || !fallback => {
                let warning = if check.complete() {
                    ""
                } else {
                    "; warning: those calls are not counted"
                };
                notes.push(format!(
                    "backend {}: {}; self-check {}{warning}",
                    candidate.backend,
                    candidate.why,
                    check.summary()
                ));
                return Ok(Selection {
                    accounting,
                    notes,
                    check,
                });
            }
            Ok((_, check)) => notes.push(format!(
                "note: the {} backend missed {} in its self-check on this kernel; falling back",
                candidate.backend,
                check.missed().join(", ")
            )),
            Err(e) if fallback => notes.push(format!(
                "note: the {} backend failed to load ({}); falling back",
                candidate.backend,
                e.describe()
            )),
            Err(e) => return Err(e),
        }
    }
    Err(KernelError::NoBackend(notes.join("; ")))
}
