//! BPF run-time statistics on a duty cycle. While they are on, every BPF
//! program on the host (netto's and everybody else's) pays two more clock
//! reads per run; netto needs them only to price one run of each of its
//! hooks, whose runs it counts itself (`collect::cost`). So they are held
//! for a slice at the start of each interval and released.

use std::io;
use std::time::{Duration, Instant};

use crate::kernel::stats::StatsGuard;

/// The slice's share of an interval, and its longest length: a tenth of
/// the tax, and at the default one-second interval some thousands of runs
/// of each busy hook to price them by.
const SHARE: u32 = 10;
const LONGEST: Duration = Duration::from_millis(100);

pub struct DutyCycle {
    slice: Duration,
    /// The guard and when the slice that holds it ends.
    held: Option<(StatsGuard, Instant, Instant)>,
    /// Statistics time in the current interval from slices already over.
    done: Duration,
}

impl DutyCycle {
    /// Checks that statistics can be turned on at all (the start-up note
    /// says so when not); the first slice begins with the first interval.
    pub fn new(interval: Duration) -> io::Result<DutyCycle> {
        drop(StatsGuard::enable()?);
        Ok(DutyCycle {
            slice: (interval / SHARE).min(LONGEST),
            held: None,
            done: Duration::ZERO,
        })
    }

    fn begin_slice(&mut self) -> io::Result<()> {
        let guard = StatsGuard::enable()?;
        let now = Instant::now();
        self.held = Some((guard, now, now + self.slice));
        Ok(())
    }

    /// When the slice in progress ends, if one is.
    pub fn slice_end(&self) -> Option<Instant> {
        self.held.as_ref().map(|&(_, _, end)| end)
    }

    /// Releases the statistics once the slice is over.
    pub fn poll(&mut self, now: Instant) {
        if self.slice_end().is_some_and(|end| now >= end) {
            self.release(now);
        }
    }

    fn release(&mut self, now: Instant) {
        if let Some((guard, began, _)) = self.held.take() {
            drop(guard);
            self.done += now.duration_since(began);
        }
    }

    /// Ends the interval: releases the statistics if a slice still holds
    /// them, and says how long they were on in it.
    pub fn end_interval(&mut self, now: Instant) -> Duration {
        self.release(now);
        std::mem::take(&mut self.done)
    }

    /// Starts the next interval's slice, once the last one is read. An
    /// interval whose slice cannot be held is priced from earlier slices.
    pub fn begin_interval(&mut self) {
        let _ = self.begin_slice();
    }
}
