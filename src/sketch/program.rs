//! Loading the sketch for one geometry, through its generated skeleton:
//! the object has one program per column count (bpf/sketch.bpf.c says why),
//! only the geometry's is loaded; rows go into its read-only data, and rows
//! and columns size its per-CPU slots before the verifier sees it.

use std::mem::MaybeUninit;
use std::os::fd::AsFd;

use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{OpenObject, ProgramMut};

use crate::abi::bytes_of;
use crate::abi::sketch::{sketch_config, sketch_hot};
use crate::kernel::skel;
use crate::kernel::skel::sketch::{SketchProgs, SketchSkel, SketchSkelBuilder};

use super::config::Geometry;
use super::error::SketchError;
use super::slots::{slot_bytes, Slots};
use super::variates::Variates;

/// What every sketch program's name starts with: its JIT-ed frames are
/// symbolized by that name (`netto_sketch_11` for 2048 columns).
pub const PROGRAM: &str = "netto_sketch";

/// The name of the program for `geometry`'s column count.
fn program_name(geometry: Geometry) -> String {
    format!("{PROGRAM}_{}", geometry.column_bits())
}

/// The loaded program of each column count, by log2 of the columns: the
/// skeleton has a field per program.
fn program_of<'a, 'obj>(progs: &'a SketchProgs<'obj>, column_bits: u32) -> &'a ProgramMut<'obj> {
    match column_bits {
        4 => &progs.netto_sketch_4,
        5 => &progs.netto_sketch_5,
        6 => &progs.netto_sketch_6,
        7 => &progs.netto_sketch_7,
        8 => &progs.netto_sketch_8,
        9 => &progs.netto_sketch_9,
        10 => &progs.netto_sketch_10,
        11 => &progs.netto_sketch_11,
        12 => &progs.netto_sketch_12,
        13 => &progs.netto_sketch_13,
        14 => &progs.netto_sketch_14,
        // Geometry holds 16 to 32768 columns (its unit tests and the
        // program list's _Static_assert keep the two in step).
        _ => &progs.netto_sketch_15,
    }
}

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
        let config = sketch_config {
            rows: geometry.rows(),
            cpu_mask: u32::try_from(hot_lines - 1).expect("CPU count fits u32"),
        };
        let (skel, ()) =
            skel::load::<SketchSkelBuilder, _, _>(storage, SketchError::Load, |open| {
                open.maps
                    .rodata_geometry
                    .set_initial_value(bytes_of(&config))
                    .map_err(SketchError::Load)?;
                let wanted = program_name(geometry);
                for mut prog in open.open_object_mut().progs_mut() {
                    let load = prog.name() == wanted.as_str();
                    prog.set_autoload(load);
                }
                let hot_bytes = u32::try_from(hot_lines * size_of::<sketch_hot>())
                    .expect("hot lines are far below 4 GiB");
                open.maps
                    .data_hot
                    .set_value_size(hot_bytes)
                    .map_err(SketchError::Load)?;
                let slot_bytes =
                    u32::try_from(slot_bytes(geometry)).expect("slots are far below 4 GiB");
                let slots_map = &mut open.maps.sketch_slots;
                slots_map
                    .set_value_size(slot_bytes)
                    .map_err(SketchError::Load)?;
                slots_map
                    .set_max_entries(cpus_u32)
                    .map_err(SketchError::Load)
            })?;
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
        program_of(&self.skel.progs, self.geometry.column_bits())
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
    use libbpf_rs::skel::SkelBuilder;

    use super::*;
    use crate::breakdown::{categorize, Category};
    use crate::sketch::config::{SKETCH_MAX_COLUMNS, SKETCH_MIN_COLUMNS};

    #[test]
    fn the_geometry_is_its_section_whole() {
        let mut storage = MaybeUninit::uninit();
        let mut open = SketchSkelBuilder::default().open(&mut storage).unwrap();
        let config = sketch_config::default();
        open.maps
            .rodata_geometry
            .set_initial_value(bytes_of(&config))
            .expect("the section is the size of the geometry");
        assert!(open
            .maps
            .rodata_geometry
            .set_initial_value(&bytes_of(&config)[1..])
            .is_err());
    }

    #[test]
    fn breakdown_knows_every_program_by_name() {
        for columns in [SKETCH_MIN_COLUMNS, 2048, SKETCH_MAX_COLUMNS] {
            let name = program_name(Geometry::new(1, columns).expect("valid geometry"));
            assert_eq!(
                categorize(&["veth_xdp_rcv_skb", &name]),
                Category::XdpSketch,
                "{name}"
            );
        }
    }

    #[test]
    fn program_names_fit_the_kernel_and_say_the_columns() {
        // The kernel keeps 15 characters of a program's name.
        let names: Vec<String> = [SKETCH_MIN_COLUMNS, 2048, SKETCH_MAX_COLUMNS]
            .map(|c| program_name(Geometry::new(1, c).expect("valid geometry")))
            .into();
        assert_eq!(
            names,
            ["netto_sketch_4", "netto_sketch_11", "netto_sketch_15"]
        );
        assert!(names.iter().all(|n| n.len() <= 15));
    }
}
