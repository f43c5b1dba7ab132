//! The per-CPU slots of the loaded sketch, mapped into netto: the program
//! writes counters and candidates, netto reads them and writes variates.
//! Mapping the array (rather than copying it through syscalls) is what
//! lets netto refill a ring without touching the counters beside it: a
//! map update would rewrite the whole value under the running program.

use std::os::fd::BorrowedFd;
use std::ptr;

use crate::abi::bytes_of;
use crate::abi::sketch::{sketch_candidate, sketch_cell, sketch_hot, sketch_state};
use crate::kernel::mmap::Mapping;

use super::config::Geometry;
use super::counters::{Counters, PROTOCOL_COUNT};
use super::error::SketchError;
use super::flow::FlowKey;
use super::variates::{unpack, Refill, SlotStart, RING};

/// Whole cache lines per slot, so CPUs never share one.
const CACHE_LINE: usize = 64;

/// Bytes of one CPU's slot: the state and its cells, in whole cache lines.
pub fn slot_bytes(geometry: Geometry) -> usize {
    let bytes = size_of::<sketch_state>() + geometry.cells() * size_of::<sketch_cell>();
    bytes.next_multiple_of(CACHE_LINE)
}

/// The counters as one read found them while the program counted. The
/// program counts a packet in its CPU's totals first and in the cells
/// after, and the cells take a while to read: packets that arrive during a
/// read are in its cells, or in neither, but in `counters`' totals (read
/// after the cells) whichever, and in none of `*_before` (read before).
/// So between two readings the cells gained no more than the totals
/// after the later one less those before the earlier one, however the
/// reads fell; the totals after alone would make too tight a bound, and
/// holding the estimates to it would take those packets from the flows
/// of one interval for good.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The cells, protocol counts and reuses, and every CPU's totals read
    /// after them.
    pub counters: Counters,
    /// Every CPU's packets and bytes, read before its cells.
    pub packets_before: u64,
    pub bytes_before: u64,
}

impl Reading {
    pub fn zero(geometry: Geometry) -> Reading {
        Reading {
            counters: Counters::zero(geometry),
            packets_before: 0,
            bytes_before: 0,
        }
    }

    /// The most packets and bytes the cells can have counted since
    /// `earlier` (see [`Reading`]).
    pub fn most_since(&self, earlier: &Reading) -> (u64, u64) {
        (
            self.counters.packets.wrapping_sub(earlier.packets_before),
            self.counters.bytes.wrapping_sub(earlier.bytes_before),
        )
    }
}

pub struct Slots {
    hot: Mapping,
    slots: Mapping,
    stride: usize,
    cpus: usize,
    geometry: Geometry,
}

// SAFETY: the mappings are plain shared memory owned by this value; all
// access goes through volatile reads and writes of whole integers.
unsafe impl Send for Slots {}

impl Slots {
    /// Maps the hot lines (`cpus` of them) and the slots.
    pub fn map(
        hot: BorrowedFd<'_>,
        slots: BorrowedFd<'_>,
        geometry: Geometry,
        cpus: usize,
    ) -> Result<Slots, SketchError> {
        let stride = slot_bytes(geometry);
        Ok(Slots {
            hot: Mapping::new(hot, cpus * size_of::<sketch_hot>()).map_err(SketchError::Mmap)?,
            slots: Mapping::new(slots, stride * cpus).map_err(SketchError::Mmap)?,
            stride,
            cpus,
            geometry,
        })
    }

    pub fn cpus(&self) -> usize {
        self.cpus
    }

    fn state(&self, cpu: usize) -> *mut sketch_state {
        assert!(cpu < self.cpus, "cpu {cpu} out of range");
        // SAFETY: cpu < cpus keeps the offset inside the mapping.
        unsafe { self.slots.as_ptr::<u8>().add(cpu * self.stride).cast() }
    }

    fn hot(&self, cpu: usize) -> *mut sketch_hot {
        assert!(cpu < self.cpus, "cpu {cpu} out of range");
        // SAFETY: cpu < cpus keeps the line inside the mapping.
        unsafe { self.hot.as_ptr::<sketch_hot>().add(cpu) }
    }

    /// Sets a slot's first sampled packet and its ring. Only before the
    /// program can run on it: these are the program's own fields.
    pub fn start(&self, cpu: usize, start: &SlotStart) {
        let state = self.state(cpu);
        let (gap, sampled) = unpack(start.first);
        // SAFETY: `state` and `hot` point at this CPU's slot and line
        // inside the mappings.
        unsafe {
            ptr::addr_of_mut!((*self.hot(cpu)).due).write_volatile(u64::from(gap) + 1);
            ptr::addr_of_mut!((*state).rows).write_volatile(sampled);
            ptr::addr_of_mut!((*state).weight).write_volatile(start.first.weight);
        }
        self.refill(
            cpu,
            &Refill {
                start: 0,
                variates: start.ring.clone(),
            },
        );
    }

    /// Ring entries the program has taken and user space has written, ever
    /// (`cursor`, `limit` of `struct sketch_state`).
    pub fn ring_position(&self, cpu: usize) -> (u32, u32) {
        let state = self.state(cpu);
        // SAFETY: aligned 4-byte reads inside this CPU's slot.
        unsafe {
            (
                ptr::addr_of!((*state).cursor).read_volatile(),
                ptr::addr_of!((*state).limit).read_volatile(),
            )
        }
    }

    /// Writes ring entries while the program may be reading the ring, then
    /// lets it take them. Each entry is one aligned 8-byte store, so the
    /// program sees an old or a new variate, never half of each; the entries
    /// written are ones it has taken already (or, for a rewrite, not yet),
    /// and the new limit is stored last.
    pub fn refill(&self, cpu: usize, refill: &Refill) {
        let state = self.state(cpu);
        // SAFETY: the ring is inside the slot, 64-byte aligned, its 8-byte
        // entries are written whole, and indices are taken modulo its length.
        unsafe {
            let entries = ptr::addr_of_mut!((*state).ring).cast::<u64>();
            for (i, variate) in refill.variates.iter().enumerate() {
                let word =
                    u64::from_ne_bytes(bytes_of(variate).try_into().expect("8-byte variate"));
                let at = (refill.start as usize).wrapping_add(i) % RING;
                entries.add(at).write_volatile(word);
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            ptr::addr_of_mut!((*state).limit).write_volatile(refill.limit());
        }
    }

    /// The counters of every CPU, summed, read while the program may be
    /// counting: each CPU's totals before and after its cells (see
    /// [`Reading`]).
    pub fn read(&self) -> Reading {
        let mut sum = Counters::zero(self.geometry);
        let (mut packets_before, mut bytes_before) = (0u64, 0u64);
        for cpu in 0..self.cpus {
            let state = self.state(cpu);
            let hot = self.hot(cpu);
            // SAFETY: every read is inside this CPU's slot; the program may
            // be updating a counter, and an aligned 8-byte read sees it
            // before or after, never torn.
            unsafe {
                packets_before =
                    packets_before.wrapping_add(ptr::addr_of!((*hot).packets).read_volatile());
                bytes_before =
                    bytes_before.wrapping_add(ptr::addr_of!((*hot).bytes).read_volatile());
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                let cells = ptr::addr_of!((*state).cells).cast::<sketch_cell>();
                for i in 0..self.geometry.cells() {
                    let cell = cells.add(i);
                    sum.add_cell(
                        i,
                        sketch_cell {
                            packets: ptr::addr_of!((*cell).packets).read_volatile(),
                            bytes: ptr::addr_of!((*cell).bytes).read_volatile(),
                        },
                    );
                }
                let mut proto_packets = [0i64; PROTOCOL_COUNT];
                let mut proto_bytes = [0i64; PROTOCOL_COUNT];
                for i in 0..PROTOCOL_COUNT {
                    proto_packets[i] = ptr::addr_of!((*state).proto_packets[i]).read_volatile();
                    proto_bytes[i] = ptr::addr_of!((*state).proto_bytes[i]).read_volatile();
                }
                sum.gaps_reused = sum
                    .gaps_reused
                    .wrapping_add(ptr::addr_of!((*state).reused).read_volatile());
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                sum.add_totals(
                    ptr::addr_of!((*hot).packets).read_volatile(),
                    ptr::addr_of!((*hot).bytes).read_volatile(),
                    &proto_packets,
                    &proto_bytes,
                );
            }
        }
        Reading {
            counters: sum,
            packets_before,
            bytes_before,
        }
    }

    /// The flows holding candidate buckets, on any CPU. A key being
    /// written while read can come out torn; implausible ones are dropped,
    /// and a plausible torn one only costs a query that estimates it small.
    pub fn candidates(&self) -> Vec<FlowKey> {
        let mut keys = Vec::new();
        for cpu in 0..self.cpus {
            let state = self.state(cpu);
            // SAFETY: reads inside this CPU's slot, see `read`.
            unsafe {
                let candidates = ptr::addr_of!((*state).candidates).cast::<sketch_candidate>();
                for i in 0..(*state).candidates.len() {
                    let candidate = candidates.add(i).read_volatile();
                    let key = FlowKey::from_abi(&candidate.flow);
                    if candidate.votes > 0 && key.is_plausible() {
                        keys.push(key);
                    }
                }
            }
        }
        keys
    }
}
