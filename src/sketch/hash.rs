//! fasthash64 of a flow key and how one hash is split into rows: row r
//! reads lane r of the hash, `column_bits` index bits then one sign bit.
//! The program does the same in C; the reference test holds them equal.

use crate::abi::sketch::SKETCH_HASH_SEED;

use super::config::Geometry;
use super::flow::FlowKey;

const M: u64 = 0x8803_55f2_1e6d_1965;

/// fasthash64's mixing step; also picks the entry a dry ring reuses.
pub fn mix(mut h: u64) -> u64 {
    h ^= h >> 23;
    h = h.wrapping_mul(0x2127_599b_f432_5c37);
    h ^ (h >> 47)
}

/// fasthash64 over the key's little-endian words (the key is a whole
/// number of words, so there is no tail).
pub fn flow_hash(key: &FlowKey) -> u64 {
    let mut h = SKETCH_HASH_SEED ^ (key.0.len() as u64).wrapping_mul(M);
    for word in key.0.chunks_exact(8) {
        let v = u64::from_le_bytes(word.try_into().expect("8-byte chunk"));
        h ^= mix(v);
        h = h.wrapping_mul(M);
    }
    mix(h)
}

/// One row's cell for a flow and whether it counts negatively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    pub cell: usize,
    pub negative: bool,
}

pub fn lane(hash: u64, geometry: Geometry, row: u32) -> Lane {
    let bits = hash >> (row * geometry.lane_bits());
    let column = bits & u64::from(geometry.columns() - 1);
    Lane {
        cell: row as usize * geometry.columns() as usize + column as usize,
        negative: (bits >> geometry.column_bits()) & 1 == 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_stay_in_their_row_and_use_disjoint_bits() {
        let g = Geometry::new(4, 1024).unwrap();
        let hash = 0b1_0000000011 | (0b0_0000000101 << 11) | (0b1_1111111111 << 22);
        assert_eq!(
            lane(hash, g, 0),
            Lane {
                cell: 3,
                negative: true
            }
        );
        assert_eq!(
            lane(hash, g, 1),
            Lane {
                cell: 1024 + 5,
                negative: false
            }
        );
        assert_eq!(
            lane(hash, g, 2),
            Lane {
                cell: 2048 + 1023,
                negative: true
            }
        );
        assert_eq!(
            lane(hash, g, 3),
            Lane {
                cell: 3072,
                negative: false
            }
        );
    }

    #[test]
    fn hash_depends_on_every_word() {
        let base = FlowKey([0; 40]);
        let h = flow_hash(&base);
        for byte in [0, 8, 16, 24, 32, 39] {
            let mut other = base;
            other.0[byte] = 1;
            assert_ne!(flow_hash(&other), h, "byte {byte} ignored");
        }
    }
}
