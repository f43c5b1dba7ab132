//! The two clocks of an interval. Its length is measured on the monotonic
//! clock ([`Instant`]), which a change of the system time does not move;
//! its end (`ts`, unix seconds) is read from the wall clock, which an
//! administrator or NTP may step. A step back would put an interval's end
//! before the previous one's, which no recording may hold (front ends keep
//! history by time): after one, times go on from the previous end by the
//! monotonic clock (staying ahead of the wall clock by the step), and
//! follow the wall clock again once it is ahead. A step forward is
//! followed: the interval's length is still what the monotonic clock
//! measured.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The wall clock now, in unix seconds (0 before 1970).
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The end of an interval, in unix seconds, that ended at `at` when the
/// wall clock read `wall`, after one that ended at `previous` (its instant
/// and its end): never before the previous end.
pub fn interval_end(previous: (Instant, f64), at: Instant, wall: f64) -> f64 {
    let (previous_at, previous_ts) = previous;
    if wall >= previous_ts {
        wall
    } else {
        previous_ts + at.saturating_duration_since(previous_at).as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_step_back_is_not_followed_and_a_step_forward_is() {
        let t0 = Instant::now();
        let second = |n: u64| t0 + Duration::from_secs(n);
        // In step with the wall clock.
        let ts1 = interval_end((t0, 1000.0), second(1), 1001.0);
        assert_eq!(ts1, 1001.0);
        // The wall clock stepped back an hour: one second later by the
        // monotonic clock, not an hour earlier.
        let ts2 = interval_end((second(1), ts1), second(2), 1002.0 - 3600.0);
        assert_eq!(ts2, 1002.0);
        let ts3 = interval_end((second(2), ts2), second(3), 1003.0 - 3600.0);
        assert_eq!(ts3, 1003.0);
        // Stepped forward a day: followed.
        let ts4 = interval_end((second(3), ts3), second(4), 1004.0 + 86400.0);
        assert_eq!(ts4, 1004.0 + 86400.0);
    }
}
