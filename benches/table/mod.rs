//! How a Rust benchmark prints its figures: as a Markdown table, which a
//! run with NETTO_BENCH_TABLE=1 also writes over the benchmark's own table
//! in docs/src/performance.md, through scripts/bench-table.sh (the shell
//! benchmarks call that script directly). So the page holds each
//! benchmark's latest run, with when, where and how it was made.

// Each benchmark uses the part it needs.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use anyhow::{bail, Context, Result};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench-table.sh");
const PUBLISH: &str = "NETTO_BENCH_TABLE";

/// One table of a benchmark: printed a row at a time as it is measured,
/// and published whole at the end.
pub struct Table {
    name: &'static str,
    header: String,
    rows: String,
    load_before: f64,
}

impl Table {
    /// NAME is the table's marker name on the page. When this run
    /// publishes, a page without NAME's markers stops the benchmark here,
    /// before it measures anything.
    pub fn new(name: &'static str, columns: &[&str]) -> Result<Table> {
        if publishing() {
            let status = Command::new(SCRIPT)
                .args([name, "--check"])
                .status()
                .with_context(|| format!("running {SCRIPT}"))?;
            if !status.success() {
                bail!("cannot publish table {name}: {SCRIPT} --check failed");
            }
        }
        let rule = vec!["---"; columns.len()];
        Ok(Table {
            name,
            header: format!("{}\n{}\n", line(columns), line(&rule)),
            rows: String::new(),
            load_before: load_average(),
        })
    }

    /// Adds a row and prints it (the header before the first one).
    pub fn row(&mut self, cells: &[String]) {
        if self.rows.is_empty() {
            print!("\n{}", self.header);
        }
        let row = line(cells);
        println!("{row}");
        self.rows.push_str(&row);
        self.rows.push('\n');
    }

    /// With NETTO_BENCH_TABLE=1, writes the table over its old one on the
    /// page, with the load average from when the table was started and
    /// the command that made it. A table without rows is left unpublished.
    pub fn publish(self) -> Result<()> {
        if !publishing() {
            return Ok(());
        }
        if self.rows.is_empty() {
            println!("{}: nothing measured, table not rewritten", self.name);
            return Ok(());
        }
        let mut child = Command::new(SCRIPT)
            .args([
                self.name,
                "--load-before",
                &format!("{:.2}", self.load_before),
            ])
            .args(["--command", &command()])
            .stdin(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {SCRIPT}"))?;
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(format!("{}{}", self.header, self.rows).as_bytes())?;
        if !child.wait()?.success() {
            bail!("{SCRIPT} could not rewrite table {}", self.name);
        }
        Ok(())
    }

    /// One row per criterion benchmark this process ran since `started`,
    /// in the order they ran: its median time, criterion's 95 % interval
    /// of it, and its throughput where it declares one.
    fn criterion_rows(&mut self, started: SystemTime) -> Result<()> {
        let mut ran = Vec::new();
        for file in criterion_results(&criterion_dir())? {
            let modified = fs::metadata(&file)?.modified()?;
            if modified < started {
                continue;
            }
            let read = |path: &Path| -> Result<serde_json::Value> {
                let text = fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                Ok(serde_json::from_str(&text)?)
            };
            let id = read(&file)?;
            let estimates = read(&file.with_file_name("estimates.json"))?;
            let median = &estimates["median"];
            let ns = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
            let (point, low, high) = (
                ns(&median["point_estimate"]),
                ns(&median["confidence_interval"]["lower_bound"]),
                ns(&median["confidence_interval"]["upper_bound"]),
            );
            let throughput = match id["throughput"].as_object().and_then(|t| t.iter().next()) {
                Some((unit, n)) => {
                    let per_s = n.as_f64().unwrap_or(f64::NAN) / point * 1e9;
                    let unit = if unit.starts_with("Bytes") {
                        "bytes"
                    } else {
                        "elements"
                    };
                    format!("{} {unit}/s", si(per_s))
                }
                None => "-".to_owned(),
            };
            let name = id["full_id"].as_str().unwrap_or("?").to_owned();
            let cells = vec![
                name,
                time(point),
                format!("{} to {}", time(low), time(high)),
                throughput,
            ];
            ran.push((modified, cells));
        }
        ran.sort_by_key(|(modified, _)| *modified);
        for (_, cells) in ran {
            self.row(&cells);
        }
        Ok(())
    }
}

/// What `criterion_main!` does for a criterion group, then the table of
/// what ran (one row per benchmark): printed, and with NETTO_BENCH_TABLE=1
/// written over table `name`.
pub fn criterion_main(name: &'static str, group: fn()) -> Result<()> {
    let mut table = Table::new(
        name,
        &["benchmark", "median", "95 % interval", "throughput"],
    )?;
    let started = SystemTime::now();
    group();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
    table.criterion_rows(started)?;
    table.publish()
}

fn publishing() -> bool {
    std::env::var(PUBLISH).is_ok_and(|v| v == "1")
}

fn line(cells: &[impl AsRef<str>]) -> String {
    let cells: Vec<&str> = cells.iter().map(AsRef::as_ref).collect();
    format!("| {} |", cells.join(" | "))
}

/// The 1-minute load average, or NaN where /proc/loadavg is unreadable.
pub fn load_average() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The command that made this run, as one would type it again: the
/// benchmark's settings (NETTO_BENCH_*), `cargo bench` and its arguments.
fn command() -> String {
    let mut words: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("NETTO_BENCH_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    words.sort();
    // A benchmark built in the test profile says so: its user space is
    // unoptimized (the BPF programs are built the same either way).
    let profile = if cfg!(debug_assertions) {
        " --profile dev"
    } else {
        ""
    };
    words.push(format!(
        "cargo bench{profile} --bench {}",
        env!("CARGO_CRATE_NAME")
    ));
    // cargo passes `--bench` to every benchmark; the rest came after `--`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if !args.is_empty() {
        words.push("--".into());
        words.extend(args);
    }
    words.join(" ")
}

/// Where criterion keeps its results: the directory criterion itself picks
/// for a benchmark run by cargo.
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
            PathBuf::from,
        )
        .join("criterion")
}

/// Every `new/benchmark.json` under `dir`: one per benchmark, for its
/// latest run.
fn criterion_results(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.ends_with("new/benchmark.json") {
                found.push(path);
            }
        }
    }
    Ok(found)
}

fn time(ns: f64) -> String {
    match ns {
        ns if ns >= 1e9 => format!("{:.3} s", ns / 1e9),
        ns if ns >= 1e6 => format!("{:.3} ms", ns / 1e6),
        ns if ns >= 1e3 => format!("{:.3} us", ns / 1e3),
        ns => format!("{ns:.1} ns"),
    }
}

fn si(value: f64) -> String {
    match value {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 1e3 => format!("{:.2} k", v / 1e3),
        v => format!("{v:.1}"),
    }
}
