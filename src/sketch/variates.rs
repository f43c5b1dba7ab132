//! The geometric gaps between sampled (packet, row) slots. Drawing them in
//! user space keeps the random number generator off the packet path: the
//! program only counts down. A seed makes the sequence reproducible, which
//! is how the reference implementation replays the program's sampling.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::Geometric;

use crate::abi::sketch::{sketch_variate, SKETCH_MAX_ROWS, SKETCH_RING};

use super::config::Sampling;

/// Largest gap: `row + 1 + skip` must not overflow the program's u32.
/// Cutting the geometric tail here changes nothing measurable: at the
/// smallest p a gap this long has probability below e^-4000.
const MAX_SKIP: u64 = u32::MAX as u64 - 2 * SKETCH_MAX_ROWS as u64;

pub const RING: usize = SKETCH_RING as usize;

pub struct Variates {
    rng: StdRng,
    sampling: Sampling,
    gaps: Geometric,
}

/// What a CPU slot starts with: the first gap, and the ring after it
/// (entries 0 to RING - 1).
pub struct SlotStart {
    pub first: sketch_variate,
    pub ring: Vec<sketch_variate>,
}

/// New ring entries: `variates[i]` is entry `start + i` (wrapping), kept at
/// `ring[(start + i) % RING]`; afterwards the program may take entries up
/// to [`Refill::limit`].
pub struct Refill {
    pub start: u32,
    pub variates: Vec<sketch_variate>,
}

impl Refill {
    pub fn limit(&self) -> u32 {
        let written = u32::try_from(self.variates.len()).expect("at most RING entries");
        self.start.wrapping_add(written)
    }
}

const RING_U32: u32 = SKETCH_RING;

impl Variates {
    pub fn new(sampling: Sampling, seed: u64) -> Variates {
        Variates {
            rng: StdRng::seed_from_u64(seed),
            sampling,
            gaps: geometric(sampling),
        }
    }

    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Later variates are drawn with `sampling`. Only the tests change p
    /// in mid-run: each variate carries its weight, and they hold the
    /// program to it.
    #[cfg(any(test, feature = "test-support"))]
    pub fn set_sampling(&mut self, sampling: Sampling) {
        self.sampling = sampling;
        self.gaps = geometric(sampling);
    }

    pub fn next_variate(&mut self) -> sketch_variate {
        let skip = self.rng.sample(self.gaps).min(MAX_SKIP);
        sketch_variate {
            skip: u32::try_from(skip).expect("capped below u32::MAX"),
            weight: self.sampling.weight(),
        }
    }

    pub fn ring(&mut self) -> Vec<sketch_variate> {
        (0..RING).map(|_| self.next_variate()).collect()
    }

    /// Tops a ring up behind the program's `cursor`: fresh variates for
    /// every entry the program has taken since `limit` was written, so
    /// that no gap is used twice.
    pub fn top_up(&mut self, cursor: u32, limit: u32) -> Refill {
        let taken = cursor
            .wrapping_add(RING_U32)
            .wrapping_sub(limit)
            .min(RING_U32);
        Refill {
            start: limit,
            variates: (0..taken).map(|_| self.next_variate()).collect(),
        }
    }

    /// Every entry from `cursor` on drawn anew (a change of p): the whole
    /// ring, none of it taken yet.
    #[cfg(any(test, feature = "test-support"))]
    pub fn rewrite(&mut self, cursor: u32) -> Refill {
        Refill {
            start: cursor,
            variates: self.ring(),
        }
    }

    pub fn slot_start(&mut self) -> SlotStart {
        SlotStart {
            first: self.next_variate(),
            ring: self.ring(),
        }
    }
}

fn geometric(sampling: Sampling) -> Geometric {
    Geometric::new(sampling.probability()).expect("Sampling keeps p in (0, 1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_have_the_geometric_mean() {
        let sampling = Sampling::new(0.05).unwrap();
        let mut v = Variates::new(sampling, 7);
        let n = 200_000;
        let mean = (0..n)
            .map(|_| f64::from(v.next_variate().skip))
            .sum::<f64>()
            / n as f64;
        let expected = (1.0 - 0.05) / 0.05;
        assert!(
            (mean - expected).abs() / expected < 0.02,
            "{mean} vs {expected}"
        );
        assert!(Variates::new(Sampling::new(1.0).unwrap(), 1)
            .ring()
            .iter()
            .all(|x| x.skip == 0 && x.weight == 1024));
    }

    #[test]
    fn top_up_replaces_exactly_the_taken_entries() {
        let mut v = Variates::new(Sampling::new(0.1).unwrap(), 9);
        let none = v.top_up(5, 5 + RING_U32);
        assert!(none.variates.is_empty());
        let limit = (u32::MAX - 10).wrapping_add(RING_U32);
        let some = v.top_up(u32::MAX - 2, limit);
        assert_eq!(some.start, limit);
        assert_eq!(some.variates.len(), 8);
        assert_eq!(some.limit(), (u32::MAX - 2).wrapping_add(RING_U32));
        let dry = v.top_up(7, 7);
        assert_eq!((dry.start, dry.variates.len()), (7, RING));
        assert_eq!(v.rewrite(3).limit(), 3 + RING_U32);
    }

    #[test]
    fn same_seed_same_sequence() {
        let sampling = Sampling::new(0.1).unwrap();
        let a: Vec<u32> = Variates::new(sampling, 3)
            .ring()
            .iter()
            .map(|x| x.skip)
            .collect();
        let b: Vec<u32> = Variates::new(sampling, 3)
            .ring()
            .iter()
            .map(|x| x.skip)
            .collect();
        assert_eq!(a, b);
    }
}
