//! Loading `netto_sketch` for one geometry: rows and columns go into its
//! read-only data and size its per-CPU slots before the verifier sees it.

use std::os::fd::AsFd;

use libbpf_rs::{MapCore, Object, ObjectBuilder, ProgramMut};

use crate::abi::bytes_of;
use crate::abi::sketch::{sketch_config, sketch_hot};

use super::config::Geometry;
use super::error::SketchError;
use super::slots::{slot_bytes, Slots};
use super::variates::Variates;

const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sketch.bpf.o"));

/// The program's name, which is also how its JIT-ed frames are symbolized.
pub const PROGRAM: &str = "netto_sketch";
const SLOTS_MAP: &str = "sketch_slots";
/// The section of the per-CPU hot lines; libbpf prefixes its map's name.
const HOT_SECTION: &str = ".data.hot";

/// A loaded, not necessarily attached, sketch program and its state.
pub struct Loaded {
    slots: Slots,
    object: Object,
    geometry: Geometry,
}

impl Loaded {
    /// Loads the program and starts every CPU slot from `variates`.
    pub fn load(geometry: Geometry, variates: &mut Variates) -> Result<Loaded, SketchError> {
        let cpus = libbpf_rs::num_possible_cpus().map_err(SketchError::load)?;
        // A power of two of hot lines: the program bounds the CPU number
        // with a mask.
        let hot_lines = cpus.next_power_of_two();
        let config = sketch_config {
            rows: geometry.rows(),
            columns: geometry.columns(),
            column_bits: geometry.column_bits(),
            cpu_mask: u32::try_from(hot_lines - 1).expect("CPU count fits u32"),
        };
        let mut open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(SketchError::load)?;
        for mut map in open.maps_mut() {
            let name = map.name().to_string_lossy().into_owned();
            if name.ends_with(HOT_SECTION) {
                let size = u32::try_from(hot_lines * size_of::<sketch_hot>())
                    .expect("hot lines are far below 4 GiB");
                map.set_value_size(size).map_err(SketchError::load)?;
            } else if name == SLOTS_MAP {
                let size = u32::try_from(slot_bytes(geometry)).expect("slots are far below 4 GiB");
                map.set_value_size(size).map_err(SketchError::load)?;
                map.set_max_entries(u32::try_from(cpus).expect("CPU count fits u32"))
                    .map_err(SketchError::load)?;
            } else if name.ends_with(".rodata") {
                let data = map
                    .initial_value_mut()
                    .filter(|data| data.len() == size_of::<sketch_config>())
                    .ok_or_else(|| {
                        SketchError::Load("read-only data is not one sketch_config".into())
                    })?;
                data.copy_from_slice(bytes_of(&config));
            }
        }
        let object = open.load().map_err(SketchError::load)?;
        let map = object
            .maps()
            .find(|m| m.name() == SLOTS_MAP)
            .ok_or_else(|| SketchError::Load(format!("no map {SLOTS_MAP}")))?;
        let hot = object
            .maps()
            .find(|m| m.name().to_string_lossy().ends_with(HOT_SECTION))
            .ok_or_else(|| SketchError::Load(format!("no map {HOT_SECTION}")))?;
        let slots = Slots::map(hot.as_fd(), map.as_fd(), geometry, cpus)?;
        for cpu in 0..cpus {
            slots.start(cpu, &variates.slot_start(geometry.rows()));
        }
        Ok(Loaded {
            slots,
            object,
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
    pub fn program(&self) -> ProgramMut<'_> {
        self.object
            .progs_mut()
            .find(|p| p.name() == PROGRAM)
            .expect("the object defines netto_sketch")
    }

    /// Runs the program once on `packet` (BPF_PROG_TEST_RUN) on this CPU
    /// and returns its verdict.
    pub fn test_run(&self, packet: &[u8]) -> Result<u32, SketchError> {
        let input = libbpf_rs::ProgramInput {
            data_in: Some(packet),
            ..Default::default()
        };
        let output = self
            .program()
            .test_run(input)
            .map_err(SketchError::test_run)?;
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
