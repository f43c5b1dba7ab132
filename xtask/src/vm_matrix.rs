//! `cargo xtask vm-matrix`: the kernel matrix. netto's kernel-dependent
//! tests, run inside stock Debian kernels under qemu (see vm/ and docs/src/concepts/backends.md,
//! "Kernel support"). Needs root, qemu-system-x86, busybox-static, cpio,
//! kmod and apt (see scripts/install-deps.sh); downloads each kernel once.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::vm::guest::{self, Boot, Job, Machine};
use crate::vm::kernel::{Kernel, Series};
use crate::vm::matrix::{Cell, Column, Row};
use crate::vm::{executables, Layout};

/// What to run: the whole matrix unless narrowed.
#[derive(clap::Args)]
pub struct Options {
    /// Only this kernel series (repeatable): 6.1, 6.12.
    #[arg(long = "kernel", value_name = "SERIES")]
    kernels: Vec<String>,
    /// Only the rows that run this integration test (repeatable):
    /// socket_calls, own_cost, sampling, flows, sketch; every_cpu with
    /// --wide.
    #[arg(long = "row", value_name = "TEST")]
    rows: Vec<String>,
    /// The wide mode: the rows of a big host, in guests of 16 vCPUs. Too
    /// slow under emulation for CI's time limit, so no test command runs it.
    #[arg(long)]
    wide: bool,
}

/// A set of rows and the guest they run in.
struct Mode {
    rows: &'static [Row],
    machine: Machine,
    /// Results directory under the cargo target directory: each mode's own,
    /// so a wide run leaves the last narrow run's results alone.
    results: &'static str,
}

/// The matrix the test command runs: guests of two vCPUs, enough for a
/// test that keeps one CPU for the load and one for netto, each vCPU a
/// host thread of its own (multi-threaded TCG): single-threaded TCG skews
/// the guest's tick-sampled system time, which the socket-call rows hold
/// netto's windows to.
const NARROW: Mode = Mode {
    rows: MATRIX,
    machine: Machine {
        vcpus: 2,
        accel: "tcg",
    },
    results: "vm-matrix",
};

/// A big host: every CPU counted, sampled and shown at 16 (issue 36's
/// "Big hosts"). Under TCG on a small machine 16 vCPUs make every step
/// slower (docs/src/reliability.md has the times), so it stays out of the
/// test command and out of CI. Its vCPUs take turns on one host thread
/// (single-threaded TCG): with a thread each, the guests met the kernel's
/// text patching mid-way (int3 panics, hangs) on half their boots and
/// were slower on a 2-CPU host, and its row checks no system time.
const WIDE: Mode = Mode {
    rows: WIDE_MATRIX,
    machine: Machine {
        vcpus: 16,
        accel: "tcg,thread=single",
    },
    results: "vm-matrix-wide",
};

impl Options {
    fn mode(&self) -> &'static Mode {
        if self.wide {
            &WIDE
        } else {
            &NARROW
        }
    }
}

/// Both sides of upstream commit 86a7e0b69bd5 (`__sock_sendmsg`), and a
/// kernel that has both fentry and the tracepoint backend's hooks.
const KERNELS: &[Series] = &[
    Series {
        name: "6.1",
        package_pattern: r"^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$",
    },
    Series {
        name: "6.12",
        package_pattern: r"^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$",
    },
];

/// Modules the guest loads: the 9p share over virtio-pci, and veth for the
/// tests' namespaces. Their dependencies come along.
const MODULES: &[&str] = &["virtio_pci", "9pnet_virtio", "9p", "veth"];

/// TCG emulates every instruction: loads make fewer calls per second than
/// on the host, so the tests' load durations and waits are stretched (see
/// docs/src/concepts/backends.md, "Kernel support", for what needed it).
const TIME_SCALE: &str = "3";

const MINUTES: u64 = 60;

/// Fresh boots for the jobs a guest left unfinished when its kernel
/// panicked or hung. Three: one run of 2026-11-27 needed both of the two
/// it had (two int3 panics of the 6.12 guest, docs/src/reliability.md).
const RETRIES: usize = 3;

const MATRIX: &[Row] = &[
    // The fentry backend's hooks are kernel functions, which differ from
    // kernel to kernel (`__sock_sendmsg` inlined on 6.12): every kind of
    // socket call is checked in each guest. The tracepoint backend's hooks
    // are the system calls themselves; the host runs this test with it in
    // every suite run, and the tracepoint program-cost row below loads it
    // in each guest and holds it to a window per socket call.
    Row {
        feature: "socket calls, fentry backend",
        test: "socket_calls",
        filter: &[],
        env: &[("NETTO_TEST_BACKEND", "fentry")],
        bpf_stats_held: false,
        needs: &["fentry_fexit", "task_storage"],
        timeout: Duration::from_secs(10 * MINUTES),
    },
    // Each program's ns/run and each socket call's window cost, one row per
    // backend in the same guest: the performance page's fentry-against-tracepoint figures
    // (emulated, so ratios only). fentry cannot be measured on the host.
    Row {
        feature: "program cost, fentry backend",
        test: "own_cost",
        filter: &["each_program_and_each_socket_call"],
        env: &[("NETTO_TEST_BACKEND", "fentry")],
        bpf_stats_held: false,
        needs: &["fentry_fexit", "task_storage", "bpf_stats"],
        timeout: Duration::from_secs(4 * MINUTES),
    },
    Row {
        feature: "program cost, tracepoint backend",
        test: "own_cost",
        filter: &["each_program_and_each_socket_call"],
        env: &[("NETTO_TEST_BACKEND", "tracepoint")],
        bpf_stats_held: false,
        needs: &["tracepoints", "task_storage", "bpf_stats"],
        timeout: Duration::from_secs(4 * MINUTES),
    },
    // Only the tests that say whether sampling works: the NET_RX agreement
    // tests (an accuracy bound) cannot hold in an emulated guest, where the
    // host preempts qemu's vCPU threads and the cpu-clock hrtimer loses
    // the periods it overran (see docs/src/concepts/backends.md, "Kernel support").
    Row {
        feature: "stack sampling",
        test: "sampling",
        filter: &["tiny_buffer"],
        env: &[],
        bpf_stats_held: false,
        needs: &["perf_events"],
        timeout: Duration::from_secs(4 * MINUTES),
    },
    // Attribution with connections (`--by flow`): the add-on's flow paths
    // are verified only when loaded with them, and parse packet headers;
    // forwarding through a router namespace covers the socket, the packet
    // and the forwarded byte paths.
    Row {
        feature: "flows, forwarded packets",
        test: "flows",
        filter: &["forwarded_packets_go_to_their_tuples"],
        env: &[],
        bpf_stats_held: true,
        needs: &["tracepoints", "task_storage"],
        timeout: Duration::from_secs(6 * MINUTES),
    },
    // Not the tests no kernel takes part in, which the host's suite runs:
    // the Zipf accuracy tests run the Rust reference alone (under
    // emulation they were over half of this row's time), and the bad-input
    // test is argument checking before anything loads (nine netto runs,
    // each slow to start under emulation). Statistics held as for `flows`:
    // its co-hosting test runs `--by flow` under TCP load, and with the duty
    // cycle flipping the statistics key the 6.12 guest panicked on int3
    // (the reliability page has the counts).
    Row {
        feature: "XDP sketch",
        test: "sketch",
        filter: &["--skip", "zipf_", "--skip", "bad_input_is_one_line"],
        env: &[],
        bpf_stats_held: true,
        needs: &["xdp"],
        timeout: Duration::from_secs(8 * MINUTES),
    },
];

const WIDE_MATRIX: &[Row] = &[
    // A bounded loopback load pinned to each CPU, then `stat`, `record`
    // and `top --replay` of the recording. Statistics held: the duty cycle
    // would flip the statistics key while 16 vCPUs run BPF dispatch sites,
    // the int3 patching that panicked the 6.12 guest (see `flows`).
    Row {
        feature: "every CPU counted, sampled and shown",
        test: "every_cpu",
        filter: &[],
        env: &[("NETTO_TEST_CPUS", "16")],
        bpf_stats_held: true,
        needs: &["tracepoints", "task_storage", "perf_events"],
        timeout: Duration::from_secs(20 * MINUTES),
    },
];

/// `netto check --json`: printed with the results, and it tells which
/// features the kernel lacks.
fn check_job(netto: &Path) -> Job {
    Job {
        name: "00-check".to_owned(),
        program: netto.into(),
        args: vec!["check".to_owned(), "--json".to_owned()],
        env: Vec::new(),
        bpf_stats_held: false,
        timeout: Duration::from_secs(2 * MINUTES),
    }
}

fn row_jobs(rows: &[&Row], executables: &BTreeMap<String, PathBuf>) -> Vec<Job> {
    rows.iter()
        .enumerate()
        .map(|(i, row)| Job {
            name: format!("{:02}-{}", i + 1, row.test),
            program: executables[row.test].clone(),
            args: ["--test-threads=1", "--nocapture"]
                .iter()
                .chain(row.filter)
                .map(|a| a.to_string())
                .collect(),
            env: row
                .env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .chain([("NETTO_TEST_TIME_SCALE".into(), TIME_SCALE.into())])
                .collect(),
            bpf_stats_held: row.bpf_stats_held,
            timeout: row.timeout,
        })
        .collect()
}

/// The JSON line of `netto check --json`'s output.
fn check_findings(output: &str) -> Value {
    output
        .lines()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or(Value::Null)
}

/// The kernels and rows `options` name, in the matrix's order; an error
/// for a name the matrix does not have.
fn chosen<'m>(options: &Options) -> Result<(Vec<&'m Series>, Vec<&'m Row>)> {
    let known_kernels: Vec<&str> = KERNELS.iter().map(|s| s.name).collect();
    let matrix = options.mode().rows;
    let known_rows: BTreeSet<&str> = matrix.iter().map(|r| r.test).collect();
    for kernel in &options.kernels {
        if !known_kernels.contains(&kernel.as_str()) {
            bail!("no kernel series {kernel} in the matrix (it has {known_kernels:?})");
        }
    }
    for row in &options.rows {
        if !known_rows.contains(row.as_str()) {
            bail!("no row runs test {row} (the matrix's tests: {known_rows:?})");
        }
    }
    let wanted = |list: &[String], name: &str| list.is_empty() || list.iter().any(|n| n == name);
    Ok((
        KERNELS
            .iter()
            .filter(|s| wanted(&options.kernels, s.name))
            .collect(),
        matrix
            .iter()
            .filter(|r| wanted(&options.rows, r.test))
            .collect(),
    ))
}

/// One kernel's run: its column of the table, the failures and stops it
/// had, and its wall time (every boot).
struct KernelRun {
    column: Column,
    failures: Vec<String>,
    stops: Vec<String>,
    wall: Duration,
}

/// Boots `kernel` with `jobs`, then up to [`RETRIES`] more times for the
/// jobs a boot left unfinished because its kernel stopped.
fn boot_with_retries(
    kernel: &Kernel,
    machine: Machine,
    layout: &Layout,
    dir: &Path,
    jobs: &[Job],
    stops: &mut Vec<String>,
) -> Result<Boot> {
    let mut boot = guest::boot(kernel, machine, layout, dir, jobs)?;
    // Under TCG a guest kernel has been seen to panic on its own (an
    // int3 oops while it patched its text to switch a tracepoint, in a
    // workqueue netto has no part in) and to hang (see docs/src/reliability.md, "The kernel
    // matrix's retries"), ending every job after the one it was running. The
    // jobs it left unfinished get up to RETRIES fresh boots, and why
    // each boot stopped is shown.
    for attempt in 1..=RETRIES {
        let unfinished = guest::unfinished(&boot.results);
        let Some(why) = guest::kernel_stopped(&boot).filter(|_| !unfinished.is_empty()) else {
            break;
        };
        let serial = fs::read_to_string(&boot.serial_log).unwrap_or_default();
        eprintln!(
            "--- the {} guest's kernel {why}\nbooting it again ({attempt} of {RETRIES}) for {} unfinished jobs. Serial log tail:\n{}",
            kernel.release,
            unfinished.len(),
            guest::tail(&serial, 30)
        );
        stops.push(format!(
            "{}: {}",
            kernel.release,
            why.lines().next().unwrap_or("")
        ));
        let again: Vec<_> = unfinished.iter().map(|&i| jobs[i].clone()).collect();
        let retry_dir = dir.join(format!("retry{attempt}"));
        let retry = guest::boot(kernel, machine, layout, &retry_dir, &again)?;
        for (&i, result) in unfinished.iter().zip(retry.results) {
            boot.results[i] = result;
        }
        boot.serial_log = retry.serial_log;
        boot.timed_out |= retry.timed_out;
        boot.hung = retry.hung;
        boot.wall += retry.wall;
    }
    if let Some(why) =
        guest::kernel_stopped(&boot).filter(|_| !guest::unfinished(&boot.results).is_empty())
    {
        eprintln!(
            "--- the {} guest's kernel {why}\nno boots left: its unfinished jobs fail",
            kernel.release
        );
        stops.push(format!(
            "{}: {} (no boots left)",
            kernel.release,
            why.lines().next().unwrap_or("")
        ));
    }
    Ok(boot)
}

fn run_kernel(
    series: &Series,
    machine: Machine,
    rows: &[&Row],
    layout: &Layout,
    executables: &executables::Executables,
) -> Result<KernelRun> {
    let kernel = series
        .prepare(&layout.cache_dir, MODULES)
        .with_context(|| format!("preparing kernel {}", series.name))?;
    let mut jobs = vec![check_job(&executables.netto)];
    jobs.extend(row_jobs(rows, &executables.tests));
    let mut stops = Vec::new();
    let dir = layout.results_dir.join(series.name);
    let boot = boot_with_retries(&kernel, machine, layout, &dir, &jobs, &mut stops)?;
    let check = check_findings(&boot.results[0].output);
    eprintln!(
        "\n=== kernel {} ({}): {:.0} s wall{}; netto check:\n{}",
        kernel.release,
        kernel.package,
        boot.wall.as_secs_f64(),
        if boot.timed_out {
            ", KILLED at its deadline"
        } else {
            ""
        },
        serde_json::to_string_pretty(&check)?
    );
    let cells: Vec<Cell> = rows
        .iter()
        .zip(&boot.results[1..])
        .map(|(row, result)| Cell::judge(row, &check, result))
        .collect();
    let mut failures = Vec::new();
    for ((row, cell), result) in rows.iter().zip(&cells).zip(&boot.results[1..]) {
        if let Cell::NotAvailable(why) = cell {
            eprintln!(
                "--- {} on {}: not available: {why}",
                row.feature, kernel.release
            );
        }
        if let Cell::Fail(why) = cell {
            eprintln!(
                "--- {} on {}: {why}; output tail:\n{}",
                row.feature,
                kernel.release,
                guest::tail(&result.output, 40)
            );
            failures.push(format!("{} on {}: {why}", row.feature, kernel.release));
        }
    }
    if cells.iter().any(Cell::failed) {
        let serial = fs::read_to_string(&boot.serial_log).unwrap_or_default();
        eprintln!(
            "--- serial log {} (tail):\n{}",
            boot.serial_log.display(),
            guest::tail(&serial, 30)
        );
    }
    Ok(KernelRun {
        column: Column {
            heading: format!("{} ({})", series.name, kernel.release),
            cells,
        },
        failures,
        stops,
        wall: boot.wall,
    })
}

/// One line for the stage table of `scripts/stages.sh`, when the run is one
/// of its stages (`NETTO_STAGE_LOG` names the table's file).
fn log_stage(name: &str, wall: Duration, ok: bool) {
    let Some(path) = std::env::var_os("NETTO_STAGE_LOG") else {
        return;
    };
    let line = format!(
        "{name}\t{:.0}\t{}\n",
        wall.as_secs_f64(),
        if ok { "ok" } else { "FAILED" }
    );
    let written = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("vm-matrix: cannot add to the stage log {path:?}: {e}");
    }
}

/// Runs the matrix; an error names every cell that failed.
pub fn run(options: &Options) -> Result<()> {
    let started = Instant::now();
    let (kernels, rows) = chosen(options)?;
    let tests: Vec<&str> = rows
        .iter()
        .map(|r| r.test)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let executables = executables::build(&tests).context("building the tests the guests run")?;
    let mode = options.mode();
    let mut layout = Layout::from_netto(&executables.netto);
    layout.results_dir = layout.target_dir.join(mode.results);
    let mut columns = Vec::new();
    let mut failures = Vec::new();
    let mut stops = Vec::new();
    let mut walls = Vec::new();
    for series in kernels {
        let run = run_kernel(series, mode.machine, &rows, &layout, &executables)?;
        log_stage(
            &format!("kernel matrix: {}", run.column.heading),
            run.wall,
            run.failures.is_empty(),
        );
        walls.push(format!(
            "{} {:.0} s",
            run.column.heading,
            run.wall.as_secs_f64()
        ));
        columns.push(run.column);
        failures.extend(run.failures);
        stops.extend(run.stops);
    }
    let mut table = crate::vm::matrix::render(&rows, &columns);
    table.push_str(&format!(
        "\nGuests of {} vCPUs; wall time: {}.\n",
        mode.machine.vcpus,
        walls.join(", ")
    ));
    if !stops.is_empty() {
        table.push_str("\nGuest kernels that stopped (their unfinished jobs booted again):\n");
        for stop in &stops {
            table.push_str(&format!("- {stop}\n"));
        }
    }
    fs::write(layout.results_dir.join("matrix.md"), &table)?;
    println!(
        "\nkernel matrix ({:.0} s; results in {}):\n{table}",
        started.elapsed().as_secs_f64(),
        layout.results_dir.display()
    );
    if !failures.is_empty() {
        bail!(
            "failed in a guest:\n{}",
            failures
                .iter()
                .map(|f| format!("- {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(kernels: &[&str], rows: &[&str]) -> Options {
        let owned = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        Options {
            kernels: owned(kernels),
            rows: owned(rows),
            wide: false,
        }
    }

    #[test]
    fn nothing_named_is_the_whole_matrix() {
        let (kernels, rows) = chosen(&options(&[], &[])).unwrap();
        assert_eq!(kernels.len(), KERNELS.len());
        assert_eq!(rows.len(), MATRIX.len());
    }

    #[test]
    fn a_name_narrows_the_matrix_to_its_rows_in_order() {
        let (kernels, rows) = chosen(&options(&["6.12"], &["sketch", "own_cost"])).unwrap();
        assert_eq!(kernels.iter().map(|s| s.name).collect::<Vec<_>>(), ["6.12"]);
        let tests: Vec<&str> = rows.iter().map(|r| r.test).collect();
        assert!(tests.iter().all(|t| ["own_cost", "sketch"].contains(t)));
        assert_eq!(tests.last(), Some(&"sketch"), "the matrix's order");
        assert!(tests.contains(&"own_cost"));
    }

    #[test]
    fn an_unknown_name_is_an_error_that_lists_the_known_ones() {
        let error = chosen(&options(&["5.10"], &[])).err().unwrap();
        assert!(error
            .to_string()
            .contains(r#"no kernel series 5.10 in the matrix (it has ["6.1", "6.12"])"#));
        let error = chosen(&options(&[], &["soak"])).err().unwrap();
        assert!(error.to_string().starts_with("no row runs test soak"));
    }

    #[test]
    fn the_wide_mode_runs_its_own_rows_in_sixteen_vcpus() {
        let wide = Options {
            wide: true,
            ..options(&["6.12"], &[])
        };
        assert_eq!(
            wide.mode().machine,
            Machine {
                vcpus: 16,
                accel: "tcg,thread=single"
            }
        );
        let (_, rows) = chosen(&wide).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.test).collect::<Vec<_>>(),
            ["every_cpu"]
        );
        assert!(rows[0].env.contains(&("NETTO_TEST_CPUS", "16")));
        // Neither mode runs the other's rows.
        let error = chosen(&options(&[], &["every_cpu"])).err().unwrap();
        assert!(error.to_string().starts_with("no row runs test every_cpu"));
        let narrow = Options {
            wide: true,
            ..options(&[], &["sketch"])
        };
        assert!(chosen(&narrow).is_err());
        assert_eq!(options(&[], &[]).mode().machine.vcpus, 2);
    }
}
