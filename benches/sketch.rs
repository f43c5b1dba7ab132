//! What the XDP sketch costs per packet, against an XDP program that does
//! nothing, both run through BPF_PROG_TEST_RUN on 64-byte frames of a pool
//! of distinct flows.
//!
//! Each test run repeats one frame `REPEAT` times and the kernel reports
//! the mean time per run, which leaves the syscall out; the pool is walked
//! frame by frame, so the sketch sees every flow. (A repeated test run
//! switches the XDP dispatcher to the program, which takes milliseconds of
//! wall time per call though no CPU time is measured: hence a small pool
//! and long repeats.) On CPU 0, each frame runs through the no-op and then
//! every variant, round after round; each variant's test run is paired
//! with the no-op's of the same frame just before it, and the middle half
//! of the pairs is averaged (`measure` says why), so drift of the machine
//! and another tenant of the CPU hit all alike.
//!
//! Run as root: `cargo bench --bench sketch` (NETTO_BENCH_ROUNDS overrides
//! the default of 10 rounds, 320 pairs per variant). It runs unattended and
//! prints two Markdown tables, which NETTO_BENCH_TABLE=1 writes over the
//! `sketch` and `sketch-geometry` tables of docs/src/performance.md.
//!
//! A ratio to the no-op only means something next to the no-op's own cost
//! and the machine's load: a busy machine slows the test-run loop itself
//! and dilutes every ratio. So every table carries the load average before
//! and after and the no-op's ns per packet, costs are given in ns above
//! the no-op as well as in %, and a busy machine is warned about on stderr.
//!
//! Targets: at p = 1% at least 95% of the no-op rate; at p = 100% at most
//! twice the no-op's ns per packet.

use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr};

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{OpenObject, ProgramInput, ProgramMut};
use netto::kernel::skel::xdp_baseline::XdpBaselineSkelBuilder;
use netto::sketch::config::{Geometry, Sampling, DEFAULT_COLUMNS, DEFAULT_ROWS};
use netto::sketch::packet::frame;
use netto::sketch::program::Loaded;
use netto::sketch::variates::Variates;

mod table;
use table::{load_average, Table};

const FLOWS: usize = 32;
const FRAME: usize = 64;
/// Runs per test run. One test run of the sketch at p = 1 takes REPEAT
/// ring entries (one per sampled packet): at most the ring, which is topped up
/// after every test run as the live host does every interval, so the
/// benchmark measures the sampling path, not a dry ring's reuse.
const REPEAT: u32 = 2048;
/// Above this 1-minute load average (this project's machines have 2 CPUs)
/// other work competes with the benchmark's CPU.
const BUSY_LOAD: f64 = 1.5;
/// Above this, the no-op's test run itself is slowed down: its cost on an
/// idle machine of this project's kind (docs/src/performance.md) stays
/// well below.
const EXPECTED_NOOP_NS: f64 = 40.0;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pool() -> Vec<Vec<u8>> {
    (0..FLOWS)
        .map(|i| {
            let i = u32::try_from(i).expect("small pool");
            let src = IpAddr::V4(Ipv4Addr::from(0xc612_0000 | i));
            let dst = IpAddr::V4(Ipv4Addr::from(0xc613_0000 | (i * 7919) & 0xffff));
            frame(
                src,
                dst,
                1024 + (i % 50_000) as u16,
                80 + (i % 7) as u16,
                17,
                false,
                FRAME,
            )
        })
        .collect()
}

/// Mean ns per packet of one test run of `packet`; a sketch's ring is
/// topped up after it.
fn test_run(
    prog: &ProgramMut<'_>,
    sketch: Option<(&Loaded<'_>, &mut Variates)>,
    packet: &[u8],
) -> Result<f64> {
    let input = ProgramInput {
        data_in: Some(packet),
        repeat: REPEAT,
        ..Default::default()
    };
    let out = prog.test_run(input).context("BPF_PROG_TEST_RUN")?;
    if let Some((loaded, variates)) = sketch {
        let (cursor, limit) = loaded.slots().ring_position(0);
        let rows = loaded.geometry().rows();
        loaded
            .slots()
            .refill(0, &variates.top_up(rows, cursor, limit));
    }
    Ok(out.duration.as_nanos() as f64)
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// The `q` quantile of values already sorted.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The mean of the middle half: the kernel reports whole ns per run, so
/// a median of test runs moves in steps of 1 ns, while this mean resolves
/// less and still leaves out the test runs another tenant of the CPU
/// slowed down.
fn middle_mean(values: &[f64]) -> f64 {
    let sorted = sorted(values);
    let quarter = sorted.len() / 4;
    let middle = &sorted[quarter..sorted.len() - quarter];
    middle.iter().sum::<f64>() / middle.len() as f64
}

struct Variant<'obj> {
    label: String,
    loaded: Loaded<'obj>,
    variates: Variates,
}

fn sketch(
    storage: &mut MaybeUninit<OpenObject>,
    (rows, columns, p): (u32, u32, f64),
) -> Result<Variant<'_>> {
    let geometry = Geometry::new(rows, columns)?;
    let mut variates = Variates::new(Sampling::new(p)?, 1);
    Ok(Variant {
        label: format!("sketch p={:<5} {rows}x{columns}", format!("{}%", p * 100.0)),
        loaded: Loaded::load(storage, geometry, &mut variates)?,
        variates,
    })
}

/// A variant's figures: means of the middle half over every (round, frame)
/// pair.
struct Figures {
    ns: f64,
    /// The paired difference with the no-op's test run of the same frame
    /// just before it, and its interquartile range: the noise the
    /// comparison has left.
    above: f64,
    above_iqr: (f64, f64),
    /// The paired ratios no-op / variant.
    rate: f64,
}

/// One table's figures, and the load around the measurement.
struct Run {
    noop_ns: f64,
    figures: Vec<Figures>,
    pairs: usize,
    load_before: f64,
    load_after: f64,
    /// Warned about: the ratios say little about the targets.
    busy: bool,
}

/// Every frame of the pool runs through the no-op and then through every
/// variant, round after round: each variant's test run is compared with
/// the no-op's of the same frame a few milliseconds before, and the middle
/// half of the paired figures is averaged. A whole-pass mean per round (as
/// this benchmark took before) let slow drift and the odd preempted test
/// run move p = 0.01 % and p = 1 % by more than their difference.
fn measure(
    baseline: &ProgramMut<'_>,
    variants: &mut [Variant<'_>],
    pool: &[Vec<u8>],
    rounds: usize,
) -> Result<Run> {
    let load_before = load_average();
    let mut noop = Vec::new();
    let mut ns = vec![Vec::new(); variants.len()];
    let mut above = vec![Vec::new(); variants.len()];
    let mut rate = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        for packet in pool {
            let base = test_run(baseline, None, packet)?;
            noop.push(base);
            for (i, v) in variants.iter_mut().enumerate() {
                let program = v.loaded.program();
                let t = test_run(program, Some((&v.loaded, &mut v.variates)), packet)?;
                ns[i].push(t);
                above[i].push(t - base);
                rate[i].push(base / t);
            }
        }
    }
    let figures = (0..variants.len())
        .map(|i| {
            let above_sorted = sorted(&above[i]);
            Figures {
                ns: middle_mean(&ns[i]),
                above: middle_mean(&above_sorted),
                above_iqr: (quantile(&above_sorted, 0.25), quantile(&above_sorted, 0.75)),
                rate: middle_mean(&rate[i]),
            }
        })
        .collect();
    let mut run = Run {
        noop_ns: middle_mean(&noop),
        figures,
        pairs: noop.len(),
        load_before,
        load_after: load_average(),
        busy: false,
    };
    run.busy = warn_if_busy(&run);
    Ok(run)
}

/// Warns on stderr when the machine was busy, and says whether it was.
fn warn_if_busy(run: &Run) -> bool {
    let load = run.load_before.max(run.load_after);
    let loaded = load > BUSY_LOAD;
    let slowed = run.noop_ns > EXPECTED_NOOP_NS;
    if loaded {
        eprintln!(
            "warning: load average {load:.2} (above {BUSY_LOAD}): other work shares the CPU, \
             ratios are diluted; re-run on a quiet machine"
        );
    }
    if slowed {
        eprintln!(
            "warning: the no-op costs {:.1} ns per packet (about 30 on a quiet machine): \
             the test-run loop itself is slowed down",
            run.noop_ns
        );
    }
    loaded || slowed
}

/// Prints a run's figures as a Markdown table, and publishes it as the
/// page's table `name` when this run publishes.
fn report(name: &'static str, title: &str, variants: &[Variant<'_>], run: &Run) -> Result<()> {
    println!(
        "\n{title} (load average {:.2} before, {:.2} after; no-op {:.2} ns/packet; \
         middle-half means of {} pairs)",
        run.load_before, run.load_after, run.noop_ns, run.pairs
    );
    let mut table = Table::new(
        name,
        &[
            "program",
            "ns/packet",
            "ns above no-op (IQR)",
            "% of no-op rate",
            "x no-op ns",
        ],
    )?;
    table.row(&[
        "no-op XDP".into(),
        format!("{:.2}", run.noop_ns),
        "0".into(),
        "100.0".into(),
        "1.00".into(),
    ]);
    for (v, f) in variants.iter().zip(&run.figures) {
        table.row(&[
            v.label.split_whitespace().collect::<Vec<_>>().join(" "),
            format!("{:.2}", f.ns),
            format!(
                "{:.2} ({:.2} to {:.2})",
                f.above, f.above_iqr.0, f.above_iqr.1
            ),
            format!("{:.1}", f.rate * 100.0),
            format!("{:.2}", 1.0 / f.rate),
        ]);
    }
    table.publish()
}

fn main() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the sketch benchmark loads BPF programs: run it as root");
    }
    // SAFETY: a zeroed cpu_set_t with one bit set, for this thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
    libbpf_rs::set_print(None);
    let rounds = env_or("NETTO_BENCH_ROUNDS", 10);
    let pool = pool();
    let mut storage = MaybeUninit::uninit();
    let baseline = XdpBaselineSkelBuilder::default()
        .open(&mut storage)?
        .load()?;
    let baseline_prog = &baseline.progs.baseline_xdp;
    println!(
        "netto sketch benchmark: BPF_PROG_TEST_RUN, {FRAME}-byte UDP frames of {FLOWS} flows, \
         {REPEAT} runs per frame, {rounds} interleaved rounds, CPU 0"
    );

    let (rows, columns) = (DEFAULT_ROWS, DEFAULT_COLUMNS);
    // p = 0.01% leaves the skip path alone (a sampled packet every 2000):
    // what p = 1% adds beyond it is the 5% of packets it samples.
    let mut main_storage: Vec<_> = (0..4).map(|_| MaybeUninit::uninit()).collect();
    let mut main_variants: Vec<Variant> = main_storage
        .iter_mut()
        .zip([0.0001, 0.01, 0.1, 1.0].map(|p| (rows, columns, p)))
        .map(|(storage, shape)| sketch(storage, shape))
        .collect::<Result<_>>()?;
    let main_run = measure(baseline_prog, &mut main_variants, &pool, rounds)?;
    report(
        "sketch",
        "sampling probability (default geometry)",
        &main_variants,
        &main_run,
    )?;
    let (low, full) = (&main_run.figures[1], &main_run.figures[3]);
    let verdict = |met: bool| match (main_run.busy, met) {
        (true, _) => "not judged: busy machine",
        (false, true) => "met",
        (false, false) => "missed",
    };
    println!(
        "targets: p=1% at >= 95% of the no-op rate: {:.1}%, {:+.2} ns ({}); \
         p=100% at <= 2x the no-op ns: {:.2}x, {:+.2} ns ({})",
        low.rate * 100.0,
        low.above,
        verdict(low.rate >= 0.95),
        1.0 / full.rate,
        full.above,
        verdict(1.0 / full.rate <= 2.0),
    );

    let geometries = [
        (1, 2048),
        (2, 2048),
        (4, 256),
        (4, 2048),
        (4, 16384),
        (8, 128),
    ];
    let mut shape_storage: Vec<_> = (0..geometries.len() * 2)
        .map(|_| MaybeUninit::uninit())
        .collect();
    let mut shape_variants: Vec<Variant> = shape_storage
        .iter_mut()
        .zip(
            geometries
                .iter()
                .flat_map(|&(r, c)| [0.01, 1.0].map(|p| (r, c, p))),
        )
        .map(|(storage, shape)| sketch(storage, shape))
        .collect::<Result<_>>()?;
    let shape_run = measure(baseline_prog, &mut shape_variants, &pool, rounds)?;
    report(
        "sketch-geometry",
        "rows and columns",
        &shape_variants,
        &shape_run,
    )?;
    let reused: u64 = main_variants
        .iter()
        .chain(&shape_variants)
        .map(|v| v.loaded.slots().read().counters.gaps_reused)
        .sum();
    println!("gaps reused in all sketch runs: {reused} (0: every sampling decision was fresh)");
    Ok(())
}
