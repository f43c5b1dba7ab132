//! The sampled packets, drawn ahead of the program. NitroSketch updates
//! each (packet, row) slot with probability p; user space draws that
//! process as geometric gaps between sampled slots and hands the program
//! one variate per packet with a sampled row: how many packets pass before
//! it and which of its rows are sampled. Drawing them here keeps the
//! random number generator off the packet path. A seed makes the sequence
//! reproducible, which is how the reference implementation replays the
//! program's sampling.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::Geometric;

use crate::abi::sketch::{sketch_variate, SKETCH_GAP_BITS, SKETCH_GAP_MAX, SKETCH_RING};

use super::config::Sampling;

pub const RING: usize = SKETCH_RING as usize;

/// A sampled packet not yet handed out whole: its gap is longer than a
/// variate holds, and it was drawn for these rows and this sampling.
struct Pending {
    gap: u64,
    sampled: u32,
    rows: u32,
    sampling: Sampling,
}

pub struct Variates {
    rng: StdRng,
    sampling: Sampling,
    gaps: Geometric,
    pending: Option<Pending>,
}

/// What a CPU slot starts with: the first sampled packet, and the ring
/// after it (entries 0 to RING - 1).
#[derive(Clone)]
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

/// A variate's gap (packets passed) and its sampled rows, as the program
/// reads them.
pub fn unpack(variate: sketch_variate) -> (u32, u32) {
    (
        variate.gap_rows & SKETCH_GAP_MAX,
        variate.gap_rows >> SKETCH_GAP_BITS,
    )
}

impl Variates {
    pub fn new(sampling: Sampling, seed: u64) -> Variates {
        Variates {
            rng: StdRng::seed_from_u64(seed),
            sampling,
            gaps: geometric(sampling),
            pending: None,
        }
    }

    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Later variates are drawn with `sampling` (the budget turns p at run
    /// time). Each variate carries its weight, so the ones drawn before
    /// keep the program adding what they were sampled with.
    pub fn set_sampling(&mut self, sampling: Sampling) {
        self.sampling = sampling;
        self.gaps = geometric(sampling);
    }

    /// The next packet with a sampled row, in a sketch of `rows` rows:
    /// the slot process restarts at the packet boundary (it is memoryless,
    /// so what the last draw would have said about later slots can be
    /// dropped). The first sampled slot is a geometric number of slots
    /// away; the rows after it in the same packet are each sampled with p.
    fn draw(&mut self, rows: u32) -> Pending {
        let rows64 = u64::from(rows);
        let first = self.rng.sample(self.gaps);
        let mut row = first % rows64;
        let mut sampled = 1u32 << row;
        loop {
            row = row
                .saturating_add(1)
                .saturating_add(self.rng.sample(self.gaps));
            if row >= rows64 {
                break;
            }
            sampled |= 1 << row;
        }
        Pending {
            gap: first / rows64,
            sampled,
            rows,
            sampling: self.sampling,
        }
    }

    /// The next variate for a sketch of `rows` rows. A gap longer than a
    /// variate holds is handed out in pieces: variates with no rows, each
    /// passing SKETCH_GAP_MAX + 1 packets, then the rest. A piece left
    /// over from other rows or another p is dropped (memoryless again).
    pub fn next_variate(&mut self, rows: u32) -> sketch_variate {
        let pending = match self.pending.take() {
            Some(p) if p.rows == rows && p.sampling == self.sampling => p,
            _ => self.draw(rows),
        };
        let weight = pending.sampling.weight();
        if pending.gap > u64::from(SKETCH_GAP_MAX) {
            self.pending = Some(Pending {
                gap: pending.gap - u64::from(SKETCH_GAP_MAX) - 1,
                ..pending
            });
            return sketch_variate {
                gap_rows: SKETCH_GAP_MAX,
                weight,
            };
        }
        let gap = u32::try_from(pending.gap).expect("at most SKETCH_GAP_MAX");
        sketch_variate {
            gap_rows: gap | pending.sampled << SKETCH_GAP_BITS,
            weight,
        }
    }

    pub fn ring(&mut self, rows: u32) -> Vec<sketch_variate> {
        (0..RING).map(|_| self.next_variate(rows)).collect()
    }

    /// Tops a ring up behind the program's `cursor`: fresh variates for
    /// every entry the program has taken since `limit` was written, so
    /// that no gap is used twice.
    pub fn top_up(&mut self, rows: u32, cursor: u32, limit: u32) -> Refill {
        let taken = cursor
            .wrapping_add(RING_U32)
            .wrapping_sub(limit)
            .min(RING_U32);
        Refill {
            start: limit,
            variates: (0..taken).map(|_| self.next_variate(rows)).collect(),
        }
    }

    /// Every entry from `cursor` on drawn anew (a change of p): the whole
    /// ring, none of it taken yet.
    pub fn rewrite(&mut self, rows: u32, cursor: u32) -> Refill {
        Refill {
            start: cursor,
            variates: self.ring(rows),
        }
    }

    pub fn slot_start(&mut self, rows: u32) -> SlotStart {
        SlotStart {
            first: self.next_variate(rows),
            ring: self.ring(rows),
        }
    }
}

fn geometric(sampling: Sampling) -> Geometric {
    Geometric::new(sampling.probability()).expect("Sampling keeps p in (0, 1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sampled (packet, row) slots over all slots, per row.
    fn row_rates(variates: &[sketch_variate], rows: u32) -> Vec<f64> {
        let packets: u64 = variates.iter().map(|&v| u64::from(unpack(v).0) + 1).sum();
        (0..rows)
            .map(|row| {
                let sampled = variates
                    .iter()
                    .filter(|&&v| unpack(v).1 >> row & 1 == 1)
                    .count();
                sampled as f64 / packets as f64
            })
            .collect()
    }

    #[test]
    fn every_row_of_every_packet_is_sampled_with_p() {
        for (p, rows) in [(0.05, 5), (0.3, 3), (0.001, 8)] {
            let mut v = Variates::new(Sampling::new(p).unwrap(), 7);
            let variates: Vec<sketch_variate> =
                (0..200_000).map(|_| v.next_variate(rows)).collect();
            for (row, rate) in row_rates(&variates, rows).into_iter().enumerate() {
                assert!((rate - p).abs() / p < 0.03, "p {p}, row {row}: {rate}");
            }
            assert!(variates.iter().all(|&v| {
                let sampled = unpack(v).1;
                sampled != 0 && sampled >> rows == 0
            }));
            // Rows are sampled independently of each other.
            let packets: u64 = variates.iter().map(|&v| u64::from(unpack(v).0) + 1).sum();
            let both = variates
                .iter()
                .filter(|&&v| unpack(v).1 & 0b11 == 0b11)
                .count();
            let rate = both as f64 / packets as f64;
            assert!(
                (rate - p * p).abs() / (p * p) < 0.1,
                "p {p}, rows 0 and 1: {rate}"
            );
        }
        assert!(Variates::new(Sampling::new(1.0).unwrap(), 1)
            .ring(5)
            .iter()
            .all(|&x| unpack(x) == (0, 0b11111) && x.weight == 1024));
    }

    #[test]
    fn a_gap_longer_than_a_variate_goes_on_in_variates_without_rows() {
        let sampling = Sampling::new(0.001).unwrap();
        let mut v = Variates::new(sampling, 3);
        let max = u64::from(SKETCH_GAP_MAX);
        v.pending = Some(Pending {
            gap: 2 * (max + 1) + 5,
            sampled: 0b100,
            rows: 4,
            sampling,
        });
        let pieces: Vec<(u32, u32)> = (0..3).map(|_| unpack(v.next_variate(4))).collect();
        assert_eq!(
            pieces,
            [(SKETCH_GAP_MAX, 0), (SKETCH_GAP_MAX, 0), (5, 0b100)]
        );
        // A piece drawn for other rows is dropped, not handed out.
        v.pending = Some(Pending {
            gap: max + 10,
            sampled: 1,
            rows: 4,
            sampling,
        });
        assert_ne!(unpack(v.next_variate(5)), (SKETCH_GAP_MAX, 0));
    }

    #[test]
    fn top_up_replaces_exactly_the_taken_entries() {
        let mut v = Variates::new(Sampling::new(0.1).unwrap(), 9);
        let none = v.top_up(5, 5, 5 + RING_U32);
        assert!(none.variates.is_empty());
        let limit = (u32::MAX - 10).wrapping_add(RING_U32);
        let some = v.top_up(5, u32::MAX - 2, limit);
        assert_eq!(some.start, limit);
        assert_eq!(some.variates.len(), 8);
        assert_eq!(some.limit(), (u32::MAX - 2).wrapping_add(RING_U32));
        let dry = v.top_up(5, 7, 7);
        assert_eq!((dry.start, dry.variates.len()), (7, RING));
        assert_eq!(v.rewrite(5, 3).limit(), 3 + RING_U32);
    }

    #[test]
    fn same_seed_same_sequence() {
        let sampling = Sampling::new(0.1).unwrap();
        let a: Vec<u32> = Variates::new(sampling, 3)
            .ring(5)
            .iter()
            .map(|x| x.gap_rows)
            .collect();
        let b: Vec<u32> = Variates::new(sampling, 3)
            .ring(5)
            .iter()
            .map(|x| x.gap_rows)
            .collect();
        assert_eq!(a, b);
    }
}
