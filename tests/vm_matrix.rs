//! The kernel matrix: the suite's kernel-dependent tests, run inside stock
//! Debian kernels under qemu (see tests/vm/ and README, "Kernel support").
//! Needs root, qemu-system-x86, busybox-static, cpio, kmod and apt (see
//! scripts/install-deps.sh); downloads each kernel once.

mod vm;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use vm::guest::{self, Job};
use vm::kernel::Series;
use vm::matrix::{Cell, Column, Row};
use vm::{executables, Layout};

const NETTO: &str = env!("CARGO_BIN_EXE_netto");

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
/// README, "Kernel support", for what needed it).
const TIME_SCALE: &str = "3";

const MINUTES: u64 = 60;

/// Fresh boots for the jobs a guest left unfinished when its kernel
/// panicked or hung. Three: one run of 2026-11-27 needed both of the two
/// it had (two int3 panics of the 6.12 guest, README "Kernel support").
const RETRIES: usize = 3;

const MATRIX: &[Row] = &[
    Row {
        feature: "socket calls, fentry backend",
        test: "socket_calls",
        filter: &[],
        env: &[("NETTO_TEST_BACKEND", "fentry")],
        needs: &["fentry_fexit", "task_storage"],
        timeout: Duration::from_secs(10 * MINUTES),
    },
    Row {
        feature: "socket calls, tracepoint backend",
        test: "socket_calls",
        filter: &[],
        env: &[("NETTO_TEST_BACKEND", "tracepoint")],
        needs: &["tracepoints", "task_storage"],
        timeout: Duration::from_secs(10 * MINUTES),
    },
    // Each program's ns/run and each socket call's window cost, one row per
    // backend in the same guest: README's fentry-against-tracepoint figures
    // (emulated, so ratios only). fentry cannot be measured on the host.
    Row {
        feature: "program cost, fentry backend",
        test: "own_cost",
        filter: &["each_program_and_each_socket_call"],
        env: &[("NETTO_TEST_BACKEND", "fentry")],
        needs: &["fentry_fexit", "task_storage", "bpf_stats"],
        timeout: Duration::from_secs(4 * MINUTES),
    },
    Row {
        feature: "program cost, tracepoint backend",
        test: "own_cost",
        filter: &["each_program_and_each_socket_call"],
        env: &[("NETTO_TEST_BACKEND", "tracepoint")],
        needs: &["tracepoints", "task_storage", "bpf_stats"],
        timeout: Duration::from_secs(4 * MINUTES),
    },
    // Only the tests that say whether sampling works: the NET_RX agreement
    // tests (an accuracy bound) cannot hold in an emulated guest, where the
    // host preempts qemu's vCPU threads and the cpu-clock hrtimer loses
    // the periods it overran (see README, "Kernel support").
    Row {
        feature: "stack sampling",
        test: "sampling",
        filter: &["tiny_buffer"],
        env: &[],
        needs: &["perf_events"],
        timeout: Duration::from_secs(4 * MINUTES),
    },
    // The Zipf accuracy tests run the Rust reference alone, no kernel: the
    // host's suite runs them, and under emulation they were over half of
    // this row's time.
    Row {
        feature: "XDP sketch",
        test: "sketch",
        filter: &["--skip", "zipf_"],
        env: &[],
        needs: &["xdp"],
        timeout: Duration::from_secs(8 * MINUTES),
    },
];

/// `netto check --json`: printed with the results, and it tells which
/// features the kernel lacks.
fn check_job() -> Job {
    Job {
        name: "00-check".to_owned(),
        program: NETTO.into(),
        args: vec!["check".to_owned(), "--json".to_owned()],
        env: Vec::new(),
        timeout: Duration::from_secs(2 * MINUTES),
    }
}

fn row_jobs(executables: &BTreeMap<String, PathBuf>) -> Vec<Job> {
    MATRIX
        .iter()
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

#[test]
fn kernel_dependent_features_work_on_every_kernel_of_the_matrix() {
    let started = Instant::now();
    let layout = Layout::from_netto(Path::new(NETTO));
    let tests: Vec<&str> = MATRIX
        .iter()
        .map(|r| r.test)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let executables = executables::integration_tests(Path::new(NETTO), &tests);
    let mut columns = Vec::new();
    let mut failures = Vec::new();
    let mut stops = Vec::new();
    for series in KERNELS {
        let kernel = series.prepare(&layout.cache_dir, MODULES);
        let mut jobs = vec![check_job()];
        jobs.extend(row_jobs(&executables));
        let dir = layout.results_dir.join(series.name);
        let mut boot = guest::boot(&kernel, &layout.target_dir, &dir, &jobs);
        // Under TCG a guest kernel has been seen to panic on its own (an
        // int3 oops while it patched its text to switch a tracepoint, in a
        // workqueue netto has no part in) and to hang (see README, "Kernel
        // support"), ending every job after the one it was running. The
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
            let retry = guest::boot(&kernel, &layout.target_dir, &retry_dir, &again);
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
            serde_json::to_string_pretty(&check).unwrap()
        );
        let cells: Vec<Cell> = MATRIX
            .iter()
            .zip(&boot.results[1..])
            .map(|(row, result)| Cell::judge(row, &check, result))
            .collect();
        for ((row, cell), result) in MATRIX.iter().zip(&cells).zip(&boot.results[1..]) {
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
        columns.push(Column {
            heading: format!("{} ({})", series.name, kernel.release),
            cells,
        });
    }
    let mut table = vm::matrix::render(MATRIX, &columns);
    if !stops.is_empty() {
        table.push_str("\nGuest kernels that stopped (their unfinished jobs booted again):\n");
        for stop in &stops {
            table.push_str(&format!("- {stop}\n"));
        }
    }
    fs::write(layout.results_dir.join("matrix.md"), &table).unwrap();
    println!(
        "\nkernel matrix ({:.0} s; results in {}):\n{table}",
        started.elapsed().as_secs_f64(),
        layout.results_dir.display()
    );
    assert!(failures.is_empty(), "failed in a guest: {failures:#?}");
}
