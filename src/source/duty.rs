//! BPF run-time statistics on a duty cycle. While they are on, every BPF
//! program on the host (netto's and everybody else's) pays two more clock
//! reads per run; netto needs them only to price one run of each of its
//! hooks, whose runs it counts itself (`collect::cost`). So they are held
//! for a slice at the start of each interval and released. The host's
//! network programs are read just before each slice and just after it
//! (`collect::network_programs`), and priced from what the slice gave
//! them.

use std::io;
use std::time::{Duration, Instant};

use crate::collect::network_programs::ProgramWatch;
use crate::kernel::stats::StatsGuard;
use crate::model::{CpuTime, EventKey, NetworkPrograms};
use std::collections::BTreeMap;

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
    /// The host's network programs, read around each slice.
    programs: Option<ProgramWatch>,
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
            programs: None,
        })
    }

    /// Watches the host's network programs from the next slice on; `own`:
    /// the ids of netto's own.
    pub fn watch_programs(&mut self, own: impl IntoIterator<Item = u32>) {
        self.programs = Some(ProgramWatch::new(own));
    }

    /// The interval's network programs, priced from its slice (`None`
    /// when not watched); after [`DutyCycle::end_interval`].
    /// `held_throughout`: netto's own cost found statistics on all along.
    pub fn price_programs(
        &mut self,
        interval_s: f64,
        events: &BTreeMap<EventKey, CpuTime>,
        held_throughout: bool,
    ) -> Option<NetworkPrograms> {
        Some(
            self.programs
                .as_mut()?
                .price(interval_s, events, held_throughout),
        )
    }

    fn begin_slice(&mut self) -> io::Result<()> {
        if let Some(programs) = self.programs.as_mut() {
            programs.before_slice();
        }
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
            let held = Instant::now().duration_since(began);
            self.done += now.duration_since(began);
            if let Some(programs) = self.programs.as_mut() {
                programs.after_slice(held);
            }
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
