//! Loading `netto_sketch` for one geometry, through its generated skeleton:
//! rows and columns go into its read-only data and size its per-CPU slots
//! before the verifier sees it.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{OpenObject, ProgramMut};

use crate::abi::sketch::sketch_hot;
use crate::kernel::skel::sketch::{types, SketchSkel, SketchSkelBuilder};

use super::config::Geometry;
use super::error::SketchError;
use super::slots::{slot_bytes, Slots};
use super::variates::Variates;

/// The program's name, which is also how its JIT-ed frames are symbolized.
pub const PROGRAM: &str = "netto_sketch";

/// A loaded, not necessarily attached, sketch program and its state.
pub struct Loaded<'obj> {
    slots: Slots,
    skel: SketchSkel<'obj>,
    geometry: Geometry,
}

impl<'obj> Loaded<'obj> {
    /// Loads the program into `storage` and starts every CPU slot from
    /// `variates`.
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        geometry: Geometry,
        variates: &mut Variates,
    ) -> Result<Loaded<'obj>, SketchError> {
        let cpus = libbpf_rs::num_possible_cpus().map_err(SketchError::Load)?;
        let cpus_u32 = u32::try_from(cpus).expect("CPU count fits u32");
        // A power of two of hot lines: the program bounds the CPU number
        // with a mask.
        let hot_lines = cpus.next_power_of_two();
        let mut open = SketchSkelBuilder::default()
            .open(storage)
            .map_err(SketchError::Load)?;
        let rodata = open.maps.rodata_data.as_deref_mut().ok_or_else(|| {
            SketchError::Load(io::Error::other("the object has no read-only data").into())
        })?;
        rodata.geometry = types::sketch_config {
            rows: geometry.rows(),
            columns: geometry.columns(),
            column_bits: geometry.column_bits(),
            cpu_mask: u32::try_from(hot_lines - 1).expect("CPU count fits u32"),
        };
        let hot_bytes = u32::try_from(hot_lines * size_of::<sketch_hot>())
            .expect("hot lines are far below 4 GiB");
        open.maps
            .data_hot
            .set_value_size(hot_bytes)
            .map_err(SketchError::Load)?;
        let slot_bytes = u32::try_from(slot_bytes(geometry)).expect("slots are far below 4 GiB");
        let slots_map = &mut open.maps.sketch_slots;
        slots_map
            .set_value_size(slot_bytes)
            .map_err(SketchError::Load)?;
        slots_map
            .set_max_entries(cpus_u32)
            .map_err(SketchError::Load)?;
        let skel = open.load().map_err(SketchError::Load)?;
        let slots = Slots::map(
            skel.maps.data_hot.as_fd(),
            skel.maps.sketch_slots.as_fd(),
            geometry,
            cpus,
        )?;
        for cpu in 0..cpus {
            slots.start(cpu, &variates.slot_start(geometry.rows()));
        }
        Ok(Loaded {
            slots,
            skel,
            geometry,
        })
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn slots(&self) -> &Slots {
        &self.slots
    }

    /// The program (mutable only in libbpf-rs's sense: test runs need it).
    pub fn program(&self) -> &ProgramMut<'obj> {
        &self.skel.progs.netto_sketch
    }

    /// Runs the program once on `packet` (BPF_PROG_TEST_RUN) on this CPU
    /// and returns its verdict.
    #[cfg(any(test, feature = "test-support"))]
    pub fn test_run(&self, packet: &[u8]) -> Result<u32, SketchError> {
        let input = libbpf_rs::ProgramInput {
            data_in: Some(packet),
            ..Default::default()
        };
        let output = self
            .program()
            .test_run(input)
            .map_err(SketchError::TestRun)?;
        Ok(output.return_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breakdown::{categorize, Category};

    #[test]
    fn breakdown_knows_the_program_by_name() {
        assert_eq!(
            categorize(&["veth_xdp_rcv_skb", PROGRAM]),
            Category::XdpSketch
        );
    }
}
