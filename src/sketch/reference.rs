//! The sketch in plain Rust, step for step what `netto_sketch` does on one
//! CPU: fed the same packets and the same variates it must count exactly
//! what the kernel counted. Tests hold the program to it; accuracy tests
//! run long traces through it at user-space speed.

use crate::abi::sketch::{sketch_variate, SKETCH_CANDIDATES, SKETCH_VOTES_MAX};

use super::config::Geometry;
use super::counters::Counters;
use super::flow::{classify, Class, FlowKey, KEY_BYTES};
use super::hash::{buckets, flow_hash, lane, mix};
use super::variates::{unpack, Refill, SlotStart, RING};

pub struct Reference {
    geometry: Geometry,
    /// `struct sketch_hot`'s `due` and `struct sketch_state`'s `rows`
    /// and `weight`: the next sampled packet.
    due: u64,
    sampled: u32,
    weight: u32,
    cursor: u32,
    limit: u32,
    ring: Vec<sketch_variate>,
    /// Holder, its hash and its votes, as `struct sketch_candidate`.
    candidates: Vec<(FlowKey, u64, u32)>,
    counters: Counters,
}

impl Reference {
    /// A CPU slot as the control plane starts it.
    pub fn new(geometry: Geometry, start: SlotStart) -> Reference {
        let (gap, sampled) = unpack(start.first);
        Reference {
            geometry,
            due: u64::from(gap) + 1,
            sampled,
            weight: start.first.weight,
            cursor: 0,
            limit: RING as u32,
            ring: start.ring,
            candidates: vec![(FlowKey([0; KEY_BYTES]), 0, 0); SKETCH_CANDIDATES as usize],
            counters: Counters::zero(geometry),
        }
    }

    /// Ring entries taken and written, as [`super::slots::Slots::ring_position`].
    pub fn ring_position(&self) -> (u32, u32) {
        (self.cursor, self.limit)
    }

    /// What [`super::slots::Slots::refill`] does to the program's ring.
    pub fn refill(&mut self, refill: &Refill) {
        for (i, variate) in refill.variates.iter().enumerate() {
            self.ring[(refill.start as usize).wrapping_add(i) % RING] = *variate;
        }
        self.limit = refill.limit();
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The flows the program would have left as top-K candidates.
    pub fn candidates(&self) -> impl Iterator<Item = &FlowKey> {
        self.candidates
            .iter()
            .filter(|(_, _, votes)| *votes > 0)
            .map(|(key, _, _)| key)
    }

    /// The program's `vote`: a newcomer takes an empty one of the flow's
    /// two buckets or a vote from the weaker holder (the first bucket on a
    /// tie).
    fn vote(&mut self, key: FlowKey, hash: u64) {
        let buckets = buckets(hash);
        let held =
            |(_, holder_hash, votes): &(FlowKey, u64, u32)| *holder_hash == hash && *votes > 0;
        if let Some(&bucket) = buckets.iter().find(|&&b| held(&self.candidates[b])) {
            let votes = &mut self.candidates[bucket].2;
            if *votes < SKETCH_VOTES_MAX {
                *votes += 1;
            }
            return;
        }
        let [a, b] = buckets;
        let weaker = if self.candidates[a].2 <= self.candidates[b].2 {
            a
        } else {
            b
        };
        let (holder, holder_hash, votes) = &mut self.candidates[weaker];
        if *votes > 0 {
            *votes -= 1;
        } else {
            *holder = key;
            *holder_hash = hash;
            *votes = 1;
        }
    }

    pub fn process(&mut self, packet: &[u8]) {
        let len = packet.len() as u64;
        let c = &mut self.counters;
        c.packets = c.packets.wrapping_add(1);
        c.bytes = c.bytes.wrapping_add(len);
        if c.packets < self.due {
            return;
        }
        if self.sampled != 0 {
            self.count(packet, len);
        }
        let next = if self.cursor != self.limit {
            let next = self.ring[self.cursor as usize % RING];
            self.cursor = self.cursor.wrapping_add(1);
            next
        } else {
            let next = self.ring[mix(self.counters.gaps_reused) as usize % RING];
            self.counters.gaps_reused = self.counters.gaps_reused.wrapping_add(1);
            next
        };
        let (gap, sampled) = unpack(next);
        self.due = self.counters.packets + 1 + u64::from(gap);
        self.sampled = sampled;
        self.weight = next.weight;
    }

    /// Adds the weight to every sampled row of the packet.
    fn count(&mut self, packet: &[u8], len: u64) {
        let class = classify(packet);
        let hash = match class {
            Class::Flow(key) => {
                let hash = flow_hash(&key);
                self.vote(key, hash);
                hash
            }
            Class::Protocol(_) => 0,
        };
        let packets = i64::from(self.weight);
        let bytes = u64::from(self.weight).wrapping_mul(len) as i64;
        for row in (0..self.geometry.rows()).filter(|row| self.sampled >> row & 1 == 1) {
            let c = &mut self.counters;
            match class {
                Class::Flow(_) => {
                    let lane = lane(hash, self.geometry, row);
                    let sign = if lane.negative { -1 } else { 1 };
                    let cell = &mut c.cells[lane.cell];
                    cell[0] = cell[0].wrapping_add(packets.wrapping_mul(sign));
                    cell[1] = cell[1].wrapping_add(bytes.wrapping_mul(sign));
                }
                Class::Protocol(protocol) => {
                    let i = protocol as usize;
                    c.proto_packets[i] = c.proto_packets[i].wrapping_add(packets);
                    c.proto_bytes[i] = c.proto_bytes[i].wrapping_add(bytes);
                }
            }
        }
    }
}
