//! The sketch's counters summed over CPUs: what the program counted, or
//! what the reference implementation counted, in one comparable form.
//! Counters only ever grow in wrapping arithmetic, so an interval is the
//! wrapping difference of two readings.

use crate::abi::sketch::{sketch_cell, sketch_protocol};

use super::config::Geometry;

pub const PROTOCOL_COUNT: usize = sketch_protocol::SKETCH_PROTO_COUNT as usize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    /// Every packet and byte, exactly.
    pub packets: u64,
    pub bytes: u64,
    /// Weighted sampled rows of packets counted by protocol only.
    pub proto_packets: [i64; PROTOCOL_COUNT],
    pub proto_bytes: [i64; PROTOCOL_COUNT],
    /// rows x columns cells, row-major: weighted packets and bytes.
    pub cells: Vec<[i64; 2]>,
    /// Gaps taken again because a ring ran dry (see `struct sketch_state`).
    pub gaps_reused: u64,
}

impl Counters {
    pub fn zero(geometry: Geometry) -> Counters {
        Counters {
            packets: 0,
            bytes: 0,
            proto_packets: [0; PROTOCOL_COUNT],
            proto_bytes: [0; PROTOCOL_COUNT],
            cells: vec![[0; 2]; geometry.cells()],
            gaps_reused: 0,
        }
    }

    /// Adds one CPU's totals.
    pub fn add_totals(
        &mut self,
        packets: u64,
        bytes: u64,
        proto_packets: &[i64],
        proto_bytes: &[i64],
    ) {
        self.packets = self.packets.wrapping_add(packets);
        self.bytes = self.bytes.wrapping_add(bytes);
        add_all(&mut self.proto_packets, proto_packets);
        add_all(&mut self.proto_bytes, proto_bytes);
    }

    pub fn add_cell(&mut self, index: usize, cell: sketch_cell) {
        let sum = &mut self.cells[index];
        sum[0] = sum[0].wrapping_add(cell.packets);
        sum[1] = sum[1].wrapping_add(cell.bytes);
    }

    /// What was counted after `earlier` was read.
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut delta = self.clone();
        delta.packets = self.packets.wrapping_sub(earlier.packets);
        delta.bytes = self.bytes.wrapping_sub(earlier.bytes);
        delta.gaps_reused = self.gaps_reused.wrapping_sub(earlier.gaps_reused);
        sub_all(&mut delta.proto_packets, &earlier.proto_packets);
        sub_all(&mut delta.proto_bytes, &earlier.proto_bytes);
        for (cell, old) in delta.cells.iter_mut().zip(&earlier.cells) {
            cell[0] = cell[0].wrapping_sub(old[0]);
            cell[1] = cell[1].wrapping_sub(old[1]);
        }
        delta
    }
}

fn add_all(sums: &mut [i64], values: &[i64]) {
    for (sum, value) in sums.iter_mut().zip(values) {
        *sum = sum.wrapping_add(*value);
    }
}

fn sub_all(sums: &mut [i64], values: &[i64]) {
    for (sum, value) in sums.iter_mut().zip(values) {
        *sum = sum.wrapping_sub(*value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_survive_wrapping() {
        let g = Geometry::new(1, 16).unwrap();
        let mut before = Counters::zero(g);
        before.add_totals(
            u64::MAX - 1,
            5,
            &[i64::MAX; PROTOCOL_COUNT],
            &[0; PROTOCOL_COUNT],
        );
        before.add_cell(
            3,
            sketch_cell {
                packets: i64::MAX,
                bytes: -4,
            },
        );
        let mut after = before.clone();
        after.add_totals(3, 10, &[2; PROTOCOL_COUNT], &[1; PROTOCOL_COUNT]);
        after.add_cell(
            3,
            sketch_cell {
                packets: 2,
                bytes: -6,
            },
        );
        let delta = after.since(&before);
        assert_eq!((delta.packets, delta.bytes), (3, 10));
        assert_eq!(delta.proto_packets, [2; PROTOCOL_COUNT]);
        assert_eq!(delta.cells[3], [2, -6]);
        assert_eq!(delta.cells[0], [0, 0]);
    }
}
