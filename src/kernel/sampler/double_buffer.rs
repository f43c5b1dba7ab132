//! The mmap transport's double buffer: the sample program writes into
//! one half while the reader drains the other, with the control block's
//! counters as the only shared state, so reading costs no syscall.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::SamplerCounters;
use crate::abi::{netto_sample, netto_sample_ctl};
use crate::kernel::mmap::Mapping;

/// The mmap double buffer's two halves. Reading it costs no syscall.
pub(super) struct DoubleBuffer {
    pub(super) slots: Mapping,
    pub(super) slots_per_half: u32,
    pub(super) writer_wait: Duration,
    /// A half given up while a writer was still inside it: it goes back to
    /// the writers only once they have all left.
    pub(super) abandoned: Option<usize>,
    /// What giving halves up cost: `dropped_halves`, and their samples in
    /// `dropped`.
    pub(super) late: SamplerCounters,
}

/// Atomic views of the control block's fields, shared with BPF writers.
pub(super) struct CtlView<'a> {
    active: &'a AtomicU32,
    writers: [&'a AtomicU64; 2],
    reserved: [&'a AtomicU64; 2],
    pub(super) dropped: &'a AtomicU64,
    pub(super) failed: &'a AtomicU64,
}

impl<'a> CtlView<'a> {
    pub(super) fn new(ctl: &'a Mapping) -> Self {
        let p = ctl.as_ptr::<netto_sample_ctl>();
        // SAFETY: the mapping outlives the sampler; every field is naturally
        // aligned and only ever accessed atomically by both sides.
        unsafe {
            CtlView {
                active: AtomicU32::from_ptr(&raw mut (*p).active),
                writers: [
                    AtomicU64::from_ptr(&raw mut (*p).writers[0]),
                    AtomicU64::from_ptr(&raw mut (*p).writers[1]),
                ],
                reserved: [
                    AtomicU64::from_ptr(&raw mut (*p).reserved[0]),
                    AtomicU64::from_ptr(&raw mut (*p).reserved[1]),
                ],
                dropped: AtomicU64::from_ptr(&raw mut (*p).dropped),
                failed: AtomicU64::from_ptr(&raw mut (*p).failed),
            }
        }
    }
}

/// How long to wait for writers still inside a half that was just retired;
/// a BPF program runs to completion in microseconds.
pub const WRITER_WAIT: Duration = Duration::from_millis(100);

impl DoubleBuffer {
    /// Retires the active half, waits for its writers, reads its complete
    /// slots and hands the half back empty. A half whose writers outlast
    /// the wait is never read (a slot may be half-written): it is given up
    /// and its samples counted as dropped.
    pub(super) fn drain(&mut self, ctl: &CtlView<'_>, deliver: &mut impl FnMut(&netto_sample)) {
        let old = (ctl.active.load(Ordering::SeqCst) & 1) as usize;
        let next = old ^ 1;
        if self.abandoned == Some(next) {
            if ctl.writers[next].load(Ordering::SeqCst) != 0 {
                // Still inside: writers keep filling the active half.
                return;
            }
            // Counted now, when no writer can reserve in it any more.
            self.late.dropped += self.used(ctl, next);
            ctl.reserved[next].store(0, Ordering::SeqCst);
            self.abandoned = None;
        }
        ctl.active.store(next as u32, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let deadline = Instant::now() + self.writer_wait;
        // Writers are checked once more after the deadline, so a reader
        // descheduled past it still reads a half its writers have left.
        while ctl.writers[old].load(Ordering::SeqCst) != 0 {
            if Instant::now() >= deadline {
                self.late.dropped_halves += 1;
                self.abandoned = Some(old);
                return;
            }
            std::thread::yield_now();
        }
        let reserved = self.used(ctl, old);
        let base = old * self.slots_per_half as usize;
        for i in 0..reserved as usize {
            // SAFETY: base + i is inside the mapping of 2 x slots_per_half
            // slots; `ready` is accessed atomically, the rest only after
            // `ready` says the writer is done with the slot.
            unsafe {
                let slot = self.slots.as_ptr::<netto_sample>().add(base + i);
                let ready = AtomicU64::from_ptr(&raw mut (*slot).ready);
                if ready.load(Ordering::Acquire) == 1 {
                    deliver(&*slot);
                    ready.store(0, Ordering::Release);
                }
            }
        }
        ctl.reserved[old].store(0, Ordering::SeqCst);
    }

    /// Slots taken in `half`.
    fn used(&self, ctl: &CtlView<'_>, half: usize) -> u64 {
        ctl.reserved[half]
            .load(Ordering::SeqCst)
            .min(u64::from(self.slots_per_half))
    }
}
