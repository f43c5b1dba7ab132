//! What entering a BPF program costs on this host, which BPF run-time
//! statistics leave out: they time the program's body, not the kernel's
//! work to reach it (the tracepoint's slow path, the dispatcher's
//! bookkeeping). Measured once at start-up, before netto's own programs
//! attach, by timing bursts of a cheap system call with and without an
//! empty program on each of the raw tracepoints every system call runs
//! (bpf/dispatch.bpf.c), as netto's window hooks are, alternating, and
//! taking the median difference per program run.
//!
//! It is an estimate, with an error: the other tracepoints netto uses are
//! entered the same way and priced the same, and fentry programs (another
//! trampoline) are priced the same too; their own dispatch is measured
//! only in the emulated kernel matrix, where timings mean little.

use std::hint::black_box;
use std::mem::MaybeUninit;
use std::time::Instant;

use libbpf_rs::OpenObject;

use super::skel;
use super::skel::dispatch::DispatchSkelBuilder;
use super::KernelError;

/// Rounds of one burst without and one with the program.
const ROUNDS: usize = 11;
/// System calls in one burst: long enough to dwarf the clock reads, short
/// enough that the whole measurement takes a few milliseconds.
const CALLS: u32 = 1_000;

/// The estimated cost of entering one BPF program, in ns per run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispatch {
    pub ns: f64,
    /// One standard error of `ns`, from the spread of the rounds.
    pub error_ns: f64,
}

/// Times the bursts (see the module documentation). Runs before netto's
/// programs attach, so that it prices the first programs on the hooks.
pub fn measure() -> Result<Dispatch, KernelError> {
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let (loaded, ()) = skel::load::<DispatchSkelBuilder, _, _>(
        &mut storage,
        |source| KernelError::Load {
            what: "the dispatch probe",
            source,
        },
        |_| Ok(()),
    )?;
    let programs = [
        &loaded.progs.dispatch_sys_enter,
        &loaded.progs.dispatch_sys_exit,
    ];
    let mut differences = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        // Alternate which burst goes first, so that a drift of the host's
        // speed over the measurement cancels out.
        let (without, with) = if round % 2 == 0 {
            let without = burst_ns();
            (without, with_programs(&programs)?)
        } else {
            let with = with_programs(&programs)?;
            (burst_ns(), with)
        };
        let runs = f64::from(CALLS) * programs.len() as f64;
        differences.push((with - without) / runs);
    }
    Ok(summary(&mut differences))
}

fn with_programs(programs: &[&libbpf_rs::ProgramMut<'_>]) -> Result<f64, KernelError> {
    let _links = programs
        .iter()
        .map(|program| {
            program.attach().map_err(|source| KernelError::Attach {
                prog: program.name().to_string_lossy().into_owned(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(burst_ns())
}

/// ns taken by [`CALLS`] getppid calls: the cheapest system call, with no
/// locks or memory to touch.
fn burst_ns() -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS {
        // SAFETY: getppid has no preconditions and cannot fail.
        black_box(unsafe { libc::getppid() });
    }
    start.elapsed().as_secs_f64() * 1e9
}

/// The median of the rounds' differences, and its standard error from
/// their median absolute deviation (robust to a round an interrupt hit):
/// for normal spreads σ ≈ 1.4826 MAD and the median's error ≈ 1.2533 σ/√n.
fn summary(differences: &mut [f64]) -> Dispatch {
    let ns = median(differences).max(0.0);
    let mut deviations: Vec<f64> = differences.iter().map(|d| (d - ns).abs()).collect();
    let sigma = 1.4826 * median(&mut deviations);
    Dispatch {
        ns,
        error_ns: 1.2533 * sigma / (differences.len() as f64).sqrt(),
    }
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_difference_with_an_error_from_its_spread() {
        let mut rounds = [40.0, 42.0, 38.0, 41.0, 39.0, 400.0, 40.0];
        let dispatch = summary(&mut rounds);
        assert_eq!(dispatch.ns, 40.0, "a round an interrupt hit is left out");
        // MAD 1 ns: sigma 1.48 ns, over 7 rounds.
        let expected = 1.2533 * 1.4826 / 7f64.sqrt();
        assert!((dispatch.error_ns - expected).abs() < 1e-9);
        // A host too noisy to see it never gives a negative cost.
        assert_eq!(summary(&mut [-3.0, -1.0, -2.0]).ns, 0.0);
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [1.0, 3.0]), 2.0);
    }
}
