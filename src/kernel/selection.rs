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
use super::self_check::{self, ProbeTraffic, SelfCheck};
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
    /// The candidates tried before it, in order.
    pub given_up: Vec<GivenUp>,
    /// Why this backend.
    pub why: String,
    /// Its self-check (which may have missed calls where it was the last
    /// candidate).
    pub check: SelfCheck,
}

/// A candidate given up for the next, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GivenUp {
    /// Its self-check missed these calls.
    Missed {
        backend: Backend,
        missed: Vec<&'static str>,
    },
    /// It failed to load.
    Failed { backend: Backend, error: String },
}

/// The first candidate that loads and sees every kind of socket call in its
/// self-check, made with `traffic`'s calls. Under `auto` a fentry backend
/// that misses calls or fails to load gives way to tracepoints, saying why;
/// the last candidate (or one asked for explicitly) runs anyway and its
/// self-check says what it misses.
pub fn select<'obj>(
    choice: BackendChoice,
    features: &Features,
    storage: &'obj mut Storage,
    traffic: &dyn ProbeTraffic,
) -> Result<Selection<'obj>, KernelError> {
    if !privileges::sufficient() {
        return Err(KernelError::NotPrivileged);
    }
    let Storage {
        fentry: fentry_place,
        tracepoint: tracepoint_place,
    } = storage;
    let (mut fentry_place, mut tracepoint_place) = (Some(fentry_place), Some(tracepoint_place));
    let mut given_up = Vec::new();
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
            let check = self_check::run(&mut accounting, traffic)?;
            Ok((accounting, check))
        });
        let backend = candidate.backend;
        match checked {
            Ok((accounting, check)) if check.complete() || !fallback => {
                return Ok(Selection {
                    accounting,
                    given_up,
                    why: candidate.why,
                    check,
                });
            }
            Ok((_, check)) => given_up.push(GivenUp::Missed {
                backend,
                missed: check.missed(),
            }),
            Err(e) if fallback => given_up.push(GivenUp::Failed {
                backend,
                error: e.describe(),
            }),
            Err(e) => return Err(e),
        }
    }
    Err(KernelError::NoBackend(
        "every candidate backend was given up".to_owned(),
    ))
}
