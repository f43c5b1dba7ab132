//! What netto's accounting costs the traffic it measures.
//!
//! iperf3 pushes TCP through a veth pair into a namespace, client and server
//! pinned to CPU 1 (unpinned veth throughput swings too much between
//! batches to compare); netto runs pinned to CPU 0.
//!
//! Throughput: runs with netto (accounting only, BPF run-time statistics off,
//! as they tax every program) and without it are interleaved, and medians
//! compared. Cost: one more run with statistics on and empty programs
//! attached on the same hooks, so netto's per-run cost is compared with the
//! floor of running any BPF program there, measured in the same run.
//!
//! Run as root: `cargo bench --bench overhead` (NETTO_BENCH_ROUNDS,
//! NETTO_BENCH_SECONDS override the defaults of 5 rounds of 5 s).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use netto::kernel::skel::floor::FloorSkelBuilder;
use netto::kernel::stats::{run_stats, RunStats, StatsGuard};
use netto::model::Snapshot;
use netto::netns::VethPair;

const NETTO: &str = env!("CARGO_BIN_EXE_netto");
const PORT: &str = "5399";
/// netto program -> the empty program on the same hook, and the target
/// ratio of their per-run costs.
const FLOORS: &[(&str, &str, f64)] = &[
    ("netto_softirq_entry", "floor_softirq_entry", 2.0),
    ("netto_softirq_exit", "floor_softirq_exit", 2.0),
    ("netto_sched_switch", "floor_sched_switch", 3.0),
    ("netto_sys_enter", "floor_sys_enter", f64::NAN),
    ("netto_sys_exit", "floor_sys_exit", f64::NAN),
    ("netto_hrtimer_entry", "floor_hrtimer_entry", f64::NAN),
    ("netto_irq_entry", "floor_irq_entry", f64::NAN),
];

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn iperf3(pair: &VethPair, seconds: u32) -> Result<f64> {
    let out = Command::new("iperf3")
        .args([
            "-c",
            &pair.peer_addr().to_string(),
            "-p",
            PORT,
            "-A",
            "1",
            "-J",
        ])
        .args(["-t", &seconds.to_string()])
        .output()
        .context("running iperf3 (Debian package iperf3)")?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .context("iperf3 reported no throughput")
}

/// One measured run with netto attached (and, for the cost run, the floor).
struct WithNetto {
    gbps: f64,
    snapshots: Vec<Snapshot>,
    floor: BTreeMap<String, RunStats>,
}

fn run_with_netto(pair: &VethPair, seconds: u32, cost_run: bool) -> Result<WithNetto> {
    let mut child = Command::new("taskset")
        .args(["-c", "0", NETTO, "stat", "--json", "--interval", "1"])
        .args(if cost_run {
            None
        } else {
            Some("--no-bpf-stats")
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().context("netto stdout")?;
    let stderr = BufReader::new(child.stderr.take().context("netto stderr")?);
    let child = Killed(child);
    for line in stderr.lines() {
        if line?.starts_with("netto: measuring") {
            break;
        }
    }
    let collected = thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Snapshot>(&l).ok())
            .collect::<Vec<_>>()
    });

    let mut storage = MaybeUninit::uninit();
    let floor = FloorSkelBuilder::default().open(&mut storage)?.load()?;
    let mut links = Vec::new();
    if cost_run {
        for prog in floor.object().progs_mut() {
            links.push(prog.attach()?);
        }
    }
    let before = floor_stats(&floor);
    let gbps = iperf3(pair, seconds)? / 1e9;
    let after = floor_stats(&floor);
    drop(links);

    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let snapshots = collected.join().expect("reader thread");
    drop(child);
    let floor = after
        .into_iter()
        .map(|(name, a)| {
            let b = before.get(&name).copied().unwrap_or_default();
            let delta = RunStats {
                run_count: a.run_count - b.run_count,
                run_time_ns: a.run_time_ns - b.run_time_ns,
            };
            (name, delta)
        })
        .collect();
    Ok(WithNetto {
        gbps,
        snapshots,
        floor,
    })
}

fn floor_stats<'obj>(skel: &impl Skel<'obj>) -> BTreeMap<String, RunStats> {
    skel.object()
        .progs()
        .filter_map(|p| {
            let stats = run_stats(p.as_fd()).ok()?;
            Some((p.name().to_string_lossy().into_owned(), stats))
        })
        .collect()
}

fn main() -> Result<()> {
    if unsafe { libc::geteuid() } != 0 {
        bail!("the overhead benchmark loads BPF programs and builds namespaces: run it as root");
    }
    let rounds = env_or("NETTO_BENCH_ROUNDS", 5);
    let seconds = env_or("NETTO_BENCH_SECONDS", 5);
    let pair = VethPair::create("bench")?;
    let _server = Killed(
        pair.command("iperf3")
            .args(["-s", "-A", "1", "-p", PORT])
            .stdout(Stdio::null())
            .spawn()
            .context("starting iperf3 in the namespace")?,
    );
    thread::sleep(Duration::from_millis(500));

    let mut without = Vec::new();
    let mut with = Vec::new();
    for round in 0..rounds {
        for netto_first in [round % 2 == 0, round % 2 != 0] {
            if netto_first {
                let run = run_with_netto(&pair, seconds, false)?;
                eprintln!("round {round}: with netto    {:.2} Gbit/s", run.gbps);
                with.push(run);
            } else {
                let gbps = iperf3(&pair, seconds)? / 1e9;
                eprintln!("round {round}: without netto {gbps:.2} Gbit/s");
                without.push(gbps);
            }
        }
    }

    let mut with_gbps: Vec<f64> = with.iter().map(|r| r.gbps).collect();
    let median_with = median(&mut with_gbps);
    let median_without = median(&mut without);
    println!("\nnetto accounting overhead, iperf3 TCP through veth, {rounds} interleaved rounds of {seconds} s");
    println!("throughput without netto  {median_without:.2} Gbit/s (median)");
    println!("throughput with netto     {median_with:.2} Gbit/s (median)");
    println!(
        "throughput ratio          {:.3}  (target >= 0.98)",
        median_with / median_without
    );

    let cost = {
        let _stats = StatsGuard::enable().context("enabling BPF run-time statistics")?;
        run_with_netto(&pair, seconds, true)?
    };
    let snaps: Vec<&Snapshot> = cost.snapshots.iter().collect();
    let seconds_measured: f64 = snaps.iter().map(|s| s.interval_s).sum();
    let user_ns: u64 = snaps.iter().map(|s| s.overhead.process_cpu_ns).sum();
    println!(
        "netto user-space CPU      {:.3} ms per second (target < 1)",
        user_ns as f64 / 1e6 / seconds_measured
    );

    let netto_cost = |name: &str| {
        let (count, time) = snaps
            .iter()
            .flat_map(|s| &s.overhead.programs)
            .filter(|p| p.name == name)
            .fold((0u64, 0u64), |(c, t), p| {
                (c + p.run_count, t + p.run_time_ns)
            });
        time as f64 / count.max(1) as f64
    };
    let floor_cost = |name: &str| {
        cost.floor.get(name).map_or(f64::NAN, |s| {
            s.run_time_ns as f64 / s.run_count.max(1) as f64
        })
    };
    let mut programs: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for p in snaps.iter().flat_map(|s| &s.overhead.programs) {
        let entry = programs.entry(&p.name).or_default();
        entry.0 += p.run_count;
        entry.1 += p.run_time_ns;
    }
    println!(
        "\n{:<26} {:>10} {:>8} {:>9}",
        "program (cost run)", "runs/s", "ns/run", "CPU %"
    );
    for (name, (count, time)) in &programs {
        println!(
            "{name:<26} {:>10.0} {:>8.0} {:>9.3}",
            *count as f64 / seconds_measured,
            *time as f64 / (*count).max(1) as f64,
            *time as f64 / seconds_measured / 1e7
        );
    }
    println!(
        "\n{:<22} {:>10} {:>10} {:>7} {:>7}",
        "program", "ns/run", "empty", "ratio", "target"
    );
    for &(program, floor, target) in FLOORS {
        let (cost, base) = (netto_cost(program), floor_cost(floor));
        let target = if target.is_nan() {
            "-".to_owned()
        } else {
            format!("{target:.0}x")
        };
        println!(
            "{program:<22} {cost:>10.0} {base:>10.0} {:>7.2} {target:>7}",
            cost / base
        );
    }
    Ok(())
}
