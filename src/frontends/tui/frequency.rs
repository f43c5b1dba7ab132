//! The sampling frequencies `+` and `-` step through. Each ends in 9 so
//! samples do not fall in step with kernel work that runs at round rates
//! (the timer tick, 1000 Hz pacing), which would over- or under-count it.

/// In increasing order, within the sampler's limits.
pub const STEPS: [u64; 10] = [9, 19, 49, 99, 199, 499, 999, 1999, 4999, 9999];

/// The step after `current` (which need not be a step), if any.
pub fn faster(current: u64) -> Option<u64> {
    STEPS.iter().copied().find(|&hz| hz > current)
}

/// The step before `current`, if any.
pub fn slower(current: u64) -> Option<u64> {
    STEPS.iter().rev().copied().find(|&hz| hz < current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sampler::{MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ};

    #[test]
    fn steps_are_bounded_and_within_the_sampler_limits() {
        assert!(STEPS.windows(2).all(|w| w[0] < w[1]));
        assert!(STEPS[0] >= MIN_FREQUENCY_HZ);
        assert!(STEPS[STEPS.len() - 1] <= MAX_FREQUENCY_HZ);
        assert_eq!(faster(499), Some(999));
        assert_eq!(
            faster(1000),
            Some(1999),
            "from a frequency given on the command line"
        );
        assert_eq!(slower(1000), Some(999));
        assert_eq!(faster(9999), None);
        assert_eq!(slower(9), None);
    }
}
