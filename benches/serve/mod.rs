//! The `serve` section of the overhead benchmark: `netto serve` with its
//! defaults (budget 1 % of one CPU) against the pinned iperf3 load, read
//! back from its own history (`/api/v1/history`), one snapshot a second.
//!
//! - From start: serve and iperf3 start together and run 40 s; what
//!   measuring cost over the whole run (start-up included), the intervals
//!   over the budget, when the run left `exact`, and the throughput beside
//!   rounds without serve, interleaved.
//! - A change of load: serve on the idle host for 10 s, then iperf3 for
//!   15 s; how long after the load began the run left `exact`.
//! - Each interval's cost with the budget off, under the same load: what a
//!   run costs when no knob turns, to tell a periodic cost (statistics,
//!   calibration) from the cost of a step.

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use netto::workload::netns::VethPair;

use super::table::Table;
use super::{iperf3, median, Killed, NETTO};

const LISTEN: &str = "127.0.0.1:9479";
const BUDGET: f64 = 1.0;
const FROM_START_S: u32 = 40;
const IDLE_S: u64 = 10;
const LOADED_S: u32 = 15;
const UNBUDGETED_S: u32 = 20;

/// One snapshot of serve's history, as far as this section reads it.
struct Interval {
    /// When it began, Unix seconds.
    began: f64,
    seconds: f64,
    tier: String,
    calibrating: bool,
    measuring: f64,
    startup: f64,
}

fn serve(args: &[&str]) -> Result<Killed> {
    Ok(Killed(
        Command::new("taskset")
            .args(["-c", "0", NETTO, "serve", "--listen", LISTEN])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting netto serve")?,
    ))
}

fn history() -> Result<Vec<Interval>> {
    let out = Command::new("curl")
        .args(["-sf", &format!("http://{LISTEN}/api/v1/history")])
        .output()
        .context("curl (Debian package curl)")?;
    let snapshots: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).context("serve's history")?;
    Ok(snapshots
        .iter()
        .map(|s| {
            let seconds = s["interval_s"].as_f64().unwrap_or(f64::NAN);
            let overhead = &s["overhead"];
            Interval {
                began: s["ts"].as_f64().unwrap_or(f64::NAN) - seconds,
                seconds,
                tier: s["tier"].as_str().unwrap_or("?").to_owned(),
                calibrating: !s["calibrating"].is_null(),
                measuring: overhead["measuring_percent"].as_f64().unwrap_or(f64::NAN),
                startup: overhead["startup_cpu_ns"].as_f64().unwrap_or(0.0) / 1e7 / seconds,
            }
        })
        .collect())
}

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(f64::NAN, |d| d.as_secs_f64())
}

/// Measuring's cost over the intervals, weighted by their length.
fn average(intervals: &[Interval], startup: bool) -> f64 {
    let seconds: f64 = intervals.iter().map(|i| i.seconds).sum();
    let spent: f64 = intervals
        .iter()
        .map(|i| (i.measuring - if startup { 0.0 } else { i.startup }) * i.seconds)
        .sum();
    spent / seconds
}

/// The intervals over the budget, start-up left out (what the budget
/// judges), as their indices from 1.
fn over(intervals: &[Interval]) -> Vec<usize> {
    (1..=intervals.len())
        .filter(|&n| {
            let i = &intervals[n - 1];
            i.measuring - i.startup > BUDGET
        })
        .collect()
}

/// When the run first left `exact` (a calibration interval aside),
/// seconds after `since`.
fn left_exact(intervals: &[Interval], since: f64) -> Option<f64> {
    intervals
        .iter()
        .find(|i| i.tier != "exact" && !i.calibrating)
        .map(|i| i.began - since)
}

fn list(values: impl Iterator<Item = String>) -> String {
    values.collect::<Vec<_>>().join(", ")
}

pub fn run(pair: &VethPair, rounds: u32) -> Result<()> {
    let mut start_table = Table::new(
        "overhead-serve",
        &[
            "round",
            "measuring % of one CPU, 40 s from start (start-up left out)",
            "intervals over 1 % (from 1)",
            "left exact after (s from the first interval)",
            "tier at the end",
            "throughput with serve, Gbit/s",
        ],
    )?;
    let (mut with, mut without, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for serve_first in [round % 2 == 0, round % 2 != 0] {
            if !serve_first {
                without.push(iperf3(pair, FROM_START_S)?);
                continue;
            }
            let running = serve(&[])?;
            let gbits = iperf3(pair, FROM_START_S)?;
            let run = history()?;
            drop(running);
            let first = run.first().map_or(f64::NAN, |i| i.began);
            whole.push(average(&run, true));
            start_table.row(&[
                format!("{}", round + 1),
                format!("{:.2} ({:.2})", average(&run, true), average(&run, false)),
                list(over(&run).iter().map(ToString::to_string)),
                left_exact(&run, first).map_or("never".into(), |s| format!("{s:.1}")),
                run.last().map_or("?".into(), |i| i.tier.clone()),
                format!("{gbits:.2}"),
            ]);
            println!(
                "round {}: measuring % of one CPU per interval (start-up left out), tier: {}",
                round + 1,
                list(
                    run.iter()
                        .map(|i| format!("{:.2} {}", i.measuring - i.startup, i.tier))
                )
            );
            with.push(gbits);
        }
    }
    let ratio = median(&mut with.clone()) / median(&mut without.clone());
    start_table.row(&[
        "median".into(),
        format!("{:.2}", median(&mut whole)),
        "-".into(),
        "-".into(),
        "-".into(),
        format!(
            "{:.2}; without {:.2}; ratio {ratio:.3}",
            median(&mut with),
            median(&mut without)
        ),
    ]);
    start_table.publish()?;

    let mut change_table = Table::new(
        "overhead-serve-change",
        &[
            "round",
            "left exact after the load began (s)",
            "intervals over 1 % after it",
            "tier at the end",
        ],
    )?;
    for round in 0..rounds {
        let running = serve(&[])?;
        thread::sleep(Duration::from_secs(IDLE_S));
        let load_began = now_s();
        iperf3(pair, LOADED_S)?;
        let run = history()?;
        drop(running);
        let loaded: Vec<Interval> = run
            .into_iter()
            .filter(|i| i.began + i.seconds > load_began)
            .collect();
        println!(
            "round {}: from the interval the load began in, measuring % of one CPU \
             (start-up left out), tier: {}",
            round + 1,
            list(
                loaded
                    .iter()
                    .map(|i| format!("{:.2} {}", i.measuring - i.startup, i.tier))
            )
        );
        change_table.row(&[
            format!("{}", round + 1),
            left_exact(&loaded, load_began).map_or("never".into(), |s| format!("{s:.1}")),
            format!("{}", over(&loaded).len()),
            loaded.last().map_or("?".into(), |i| i.tier.clone()),
        ]);
    }
    change_table.publish()?;

    // The budget off: no step, so any cost that comes back every few
    // intervals is the run's own.
    let running = serve(&["--budget", "off"])?;
    iperf3(pair, UNBUDGETED_S)?;
    let run = history()?;
    drop(running);
    println!(
        "\nserve --budget off under the load, measuring % of one CPU per interval: {}",
        list(
            run.iter()
                .map(|i| format!("{:.2}", i.measuring - i.startup))
        )
    );
    let settled: Vec<&Interval> = run.iter().skip(2).collect();
    for phase in 0..4 {
        let mut costs: Vec<f64> = settled
            .iter()
            .skip(phase)
            .step_by(4)
            .map(|i| i.measuring)
            .collect();
        println!(
            "  every fourth interval from the {}th: median {:.2}",
            phase + 3,
            median(&mut costs)
        );
    }
    Ok(())
}
