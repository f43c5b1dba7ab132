//! When each interval ends, for every command that works in intervals (the
//! live source, `netto sketch`): on a fixed grid from the start, so
//! intervals do not drift, and never past the end of the run. After a
//! stall (a slow sampler swap, a suspended host) the next interval ends on
//! the next tick still ahead, not in a burst of near-empty catch-up ones.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Intervals {
    start: Instant,
    interval: Duration,
    /// The tick the current interval ends on (1: the first).
    tick: u32,
    end: Option<Instant>,
}

impl Intervals {
    /// Intervals of `interval` from `start`, for `duration` if given.
    pub fn new(start: Instant, interval: Duration, duration: Option<Duration>) -> Intervals {
        Intervals {
            start,
            interval,
            tick: 1,
            end: duration.map(|d| start + d),
        }
    }

    /// How long each interval is.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// When the current interval ends: on its tick, or at the end of the
    /// run if that comes first.
    pub fn due(&self) -> Instant {
        let tick = self.start + self.interval * self.tick;
        self.end.map_or(tick, |end| tick.min(end))
    }

    /// Whether the run is over at `now`.
    pub fn ended(&self, now: Instant) -> bool {
        self.end.is_some_and(|end| now >= end)
    }

    /// Moves on from the interval that ended at `now` to the next tick
    /// still ahead of it.
    pub fn advance(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.start).as_secs_f64();
        let behind = (elapsed / self.interval.as_secs_f64()).floor() as u32 + 1;
        self.tick = (self.tick + 1).max(behind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn ticks_keep_to_the_grid_and_a_stall_skips_missed_ones() {
        let start = Instant::now();
        let mut intervals = Intervals::new(start, SECOND, None);
        assert_eq!(intervals.due(), start + SECOND);
        // Delivered a little late: the next still ends on the grid.
        intervals.advance(start + Duration::from_millis(1010));
        assert_eq!(intervals.due(), start + 2 * SECOND);
        // Stalled until 5.5 s: ticks 3, 4 and 5 are gone, not caught up.
        intervals.advance(start + Duration::from_millis(5500));
        assert_eq!(intervals.due(), start + 6 * SECOND);
        assert!(!intervals.ended(start + 100 * SECOND));
    }

    #[test]
    fn the_last_interval_ends_with_the_run() {
        let start = Instant::now();
        let mut intervals = Intervals::new(start, SECOND, Some(Duration::from_millis(2500)));
        intervals.advance(start + SECOND);
        intervals.advance(start + 2 * SECOND);
        assert_eq!(intervals.due(), start + Duration::from_millis(2500));
        assert!(!intervals.ended(start + 2 * SECOND));
        assert!(intervals.ended(start + Duration::from_millis(2500)));
    }
}
