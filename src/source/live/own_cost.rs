//! What netto's own cost takes from beside the accounting programs: the
//! stack sampler's and the co-hosted sketch's runs, which the collector
//! prices with the accounting's, and the sketch's cost as priced.

use crate::collect::cost::HookRuns;
use crate::kernel::sampler::SamplerCounters;
use crate::kernel::stats::RunStats;
use crate::model::{percent, ProgramCost, SketchSnapshot};
use crate::sketch::program::PROGRAM as SKETCH_PROGRAM;

/// The runs netto's own cost takes from outside the accounting: the
/// sampler's measured runs (its count is in the per-CPU records) and the
/// sketch's (one run per packet).
pub(super) fn beside(
    sampler: Option<&SamplerCounters>,
    sketch: Option<&SketchSnapshot>,
) -> Vec<HookRuns> {
    let sampler = sampler.map(|counted| HookRuns {
        hook: "sample",
        runs: 0,
        programs: vec![(
            "netto_sample".to_owned(),
            RunStats {
                run_count: counted.measured_runs,
                run_time_ns: counted.measured_ns,
                recursion_misses: 0,
            },
        )],
    });
    let sketch = sketch.map(|sketch| HookRuns {
        hook: "xdp_sketch",
        runs: sketch.packets,
        programs: vec![(
            SKETCH_PROGRAM.to_owned(),
            RunStats {
                run_count: sketch.cost.run_count,
                run_time_ns: sketch.cost.run_time_ns,
                recursion_misses: 0,
            },
        )],
    });
    sampler.into_iter().chain(sketch).collect()
}

/// The sketch's cost as netto's own cost priced it: its statistics cover
/// only the slices they were on.
pub(super) fn price_sketch(sketch: &mut SketchSnapshot, programs: &[ProgramCost]) {
    if let Some(priced) = programs.iter().find(|p| p.name == SKETCH_PROGRAM) {
        sketch.cost.run_count = priced.run_count;
        sketch.cost.run_time_ns = priced.run_time_ns;
        sketch.cost.cpu_percent = percent(priced.run_time_ns, sketch.interval_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SketchCost, XdpMode};

    fn sketch() -> SketchSnapshot {
        SketchSnapshot {
            ts: 0.0,
            interval_s: 2.0,
            iface: "veth-a".into(),
            mode: XdpMode::Native,
            probability: 0.125,
            rows: 4,
            columns: 2048,
            packet_unit: Default::default(),
            packets: 5_000,
            bytes: 7_500_000,
            gaps_reused: 0,
            top: Vec::new(),
            other_protocols: Default::default(),
            cost: SketchCost {
                run_count: 500,
                run_time_ns: 20_000,
                ns_per_packet: 40.0,
                cpu_percent: 0.001,
            },
        }
    }

    #[test]
    fn the_sampler_and_the_sketch_bring_their_measured_runs() {
        let counted = SamplerCounters {
            measured_runs: 30,
            measured_ns: 9_000,
            ..SamplerCounters::default()
        };
        assert!(beside(None, None).is_empty());
        let hooks = beside(Some(&counted), Some(&sketch()));
        let names: Vec<_> = hooks.iter().map(|h| (h.hook, h.runs)).collect();
        assert_eq!(names, [("sample", 0), ("xdp_sketch", 5_000)]);
        assert_eq!(hooks[0].programs[0].1.run_time_ns, 9_000);
        assert_eq!(hooks[1].programs[0].0, SKETCH_PROGRAM);
        assert_eq!(hooks[1].programs[0].1.run_count, 500);
    }

    #[test]
    fn the_sketch_costs_what_its_program_was_priced() {
        let mut sketch = sketch();
        let other = ProgramCost {
            name: "netto_sample".into(),
            hook: "sample".into(),
            run_count: 1,
            run_time_ns: 1,
        };
        price_sketch(&mut sketch, std::slice::from_ref(&other));
        assert_eq!(sketch.cost.run_count, 500, "not priced: left alone");
        let priced = ProgramCost {
            name: SKETCH_PROGRAM.into(),
            hook: "xdp_sketch".into(),
            run_count: 5_000,
            run_time_ns: 200_000_000,
        };
        price_sketch(&mut sketch, &[other, priced]);
        assert_eq!(sketch.cost.run_count, 5_000);
        assert_eq!(sketch.cost.run_time_ns, 200_000_000);
        assert!(
            (sketch.cost.cpu_percent - 10.0).abs() < 1e-9,
            "0.2 s of 2 s"
        );
    }
}
