//! fasthash64 of a flow key and how one hash is split into rows: row r
//! reads lane r of the hash, `column_bits` index bits then one sign bit.
//! The program does the same in C; the reference test holds them equal.

use crate::abi::sketch::{
    SKETCH_BUCKET_SHIFT_FIRST, SKETCH_BUCKET_SHIFT_SECOND, SKETCH_CANDIDATES, SKETCH_FAMILY_IPV4,
    SKETCH_HASH_SEED,
};

use super::config::Geometry;
use super::flow::{FlowKey, KEY_BYTES};

const M: u64 = 0x8803_55f2_1e6d_1965;

/// fasthash64's mixing step; also picks the entry a dry ring reuses.
pub fn mix(mut h: u64) -> u64 {
    h ^= h >> 23;
    h = h.wrapping_mul(0x2127_599b_f432_5c37);
    h ^ (h >> 47)
}

/// fasthash64 over whole little-endian words.
fn fasthash(words: &[u64]) -> u64 {
    let mut h = SKETCH_HASH_SEED ^ (8 * words.len() as u64).wrapping_mul(M);
    for &v in words {
        h ^= mix(v);
        h = h.wrapping_mul(M);
    }
    mix(h)
}

/// A flow key's hash: fasthash64 over its five little-endian words, or,
/// for IPv4, over two: both addresses in one word (an IPv4 key's words 1
/// and 3 are zero) and the ports' word. Each word is a multiply on the
/// program's dependency chain for every sampled packet.
pub fn flow_hash(key: &FlowKey) -> u64 {
    let mut words = [0u64; KEY_BYTES / 8];
    for (word, bytes) in words.iter_mut().zip(key.0.chunks_exact(8)) {
        *word = u64::from_le_bytes(bytes.try_into().expect("8-byte chunk"));
    }
    if key.family() == SKETCH_FAMILY_IPV4 {
        fasthash(&[words[0] | words[2] << 32, words[4]])
    } else {
        fasthash(&words)
    }
}

/// One row's cell for a flow and whether it counts negatively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    pub cell: usize,
    pub negative: bool,
}

/// A flow's two top-K candidate buckets, as the program's `vote` picks them.
pub fn buckets(hash: u64) -> [usize; 2] {
    let mask = u64::from(SKETCH_CANDIDATES - 1);
    [SKETCH_BUCKET_SHIFT_FIRST, SKETCH_BUCKET_SHIFT_SECOND]
        .map(|shift| ((hash >> shift) & mask) as usize)
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

    #[test]
    fn an_ipv4_hash_depends_on_every_byte_of_its_tuple() {
        use std::net::Ipv4Addr;
        let key = |src: [u8; 4], dst: [u8; 4], sport, dport, proto| {
            FlowKey::new(
                Ipv4Addr::from(src).into(),
                Ipv4Addr::from(dst).into(),
                sport,
                dport,
                proto,
            )
        };
        let base = key([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 6);
        let h = flow_hash(&base);
        let others = [
            key([11, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 6),
            key([10, 0, 0, 9], [10, 0, 0, 2], 1000, 80, 6),
            key([10, 0, 0, 1], [12, 0, 0, 2], 1000, 80, 6),
            key([10, 0, 0, 1], [10, 0, 0, 7], 1000, 80, 6),
            // Source and destination swapped: a different flow.
            key([10, 0, 0, 2], [10, 0, 0, 1], 1000, 80, 6),
            key([10, 0, 0, 1], [10, 0, 0, 2], 1001, 80, 6),
            key([10, 0, 0, 1], [10, 0, 0, 2], 1000, 81, 6),
            key([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 17),
        ];
        for other in others {
            assert_ne!(flow_hash(&other), h, "{:?}", other.to_flow());
        }
    }
}
