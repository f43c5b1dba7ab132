//! What netto costs the traffic it measures.
//!
//! iperf3 pushes TCP through a veth pair into a namespace, client and server
//! pinned to CPU 1 (unpinned veth throughput swings too much between
//! batches to compare); whatever is measured runs pinned to CPU 0.
//!
//! Throughput: for each mode (netto accounting only; `netto stat` in the
//! estimating tiers; `netto record` sampling at 1 and 10 kHz through either
//! transport, and at 1 kHz in the sampled tier, the sampler alone; `perf
//! record -a -g` at the same frequencies, the tool a user would otherwise
//! run), runs with the mode and without anything are interleaved and
//! medians compared; the mode's own
//! process CPU per second is reported too. netto runs with default options
//! (BPF run-time statistics on for a tenth of each interval), and `netto
//! stat` says what it cost itself (`overhead.cost_percent`, its median and
//! the median error), to set beside what the traffic lost.
//!
//! Cost: one more run with statistics on and, on the same hooks, empty
//! programs and programs doing the least an exact hook does (a per-CPU
//! lookup, one clock read, one store), so netto's per-run cost is compared
//! with the baseline of running any BPF program there and with that of
//! reading the clock there, measured in the same run.
//!
//! Per call: system call loops on CPU 1 (a call that is no socket call, a
//! read that is checked and found not to be a socket, a socket write and
//! read) without anything, with `netto stat`, with empty programs on the
//! raw sys_enter/sys_exit tracepoints netto uses, and with empty programs
//! on the per-call trace events of read and write instead (what hooking only
//! the calls a socket window can be would cost), interleaved: what each adds
//! to one system call, hook dispatch included (which run-time statistics
//! cannot see).
//!
//! Attribution: cost runs without `--by`, with `--by cgroup` and with `--by
//! flow`, interleaved, and netto's BPF time per event in each; once under
//! iperf3, once under 10,000 short connections a second.
//!
//! Tiers: each estimating tier's estimates against the exact accounting on
//! the same load, from one run (the exact programs stay attached while the
//! sampler places samples as the tier would), beside the agreement the
//! exact tier's own windows measured (what a run that steps down carries
//! onto its estimates as their calibration); and `netto serve` with its
//! default budget under the load from its start, after a change of load,
//! and with the budget off (benches/serve/mod.rs).
//!
//! Run as root: `cargo bench --bench overhead` (NETTO_BENCH_ROUNDS and
//! NETTO_BENCH_SECONDS override the defaults of 3 rounds of 5 s per mode;
//! NETTO_BENCH_MODES=accounting,tier runs only the throughput modes whose
//! name contains one of those texts, `none` none of them; NETTO_BENCH_SECTIONS picks
//! sections among throughput,calls,cost,attribution,estimates,serve;
//! NETTO_BENCH_WINDOWS sizes the estimates section).
//! Each section prints a Markdown table; NETTO_BENCH_TABLE=1 writes it over
//! the section's table in docs/src/performance.md (`overhead-throughput`,
//! `overhead-calls`, `overhead-cost`, `overhead-attribution`,
//! `overhead-attribution-churn`,
//! `overhead-estimates`, `overhead-serve`, `overhead-serve-change`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use netto::kernel::skel::baseline::BaselineSkelBuilder;
use netto::kernel::stats::{run_stats, RunStats, StatsGuard};
use netto::model::Snapshot;
use netto::workload::netns::VethPair;

mod serve;
mod table;
use table::{load_average, Table};

const NETTO: &str = env!("CARGO_BIN_EXE_netto");
const LOADGEN: &str = env!("CARGO_BIN_EXE_netto-loadgen");
const PORT: &str = "5399";

/// netto program -> its hook, as bpf/baseline.bpf.c names the programs it
/// has there: `baseline_<hook>`, empty, and `least_<hook>`, the least an exact
/// hook does (a per-CPU lookup, one clock read, one store).
const BASELINES: &[(&str, &str)] = &[
    ("netto_softirq_entry", "softirq_entry"),
    ("netto_softirq_exit", "softirq_exit"),
    ("netto_sched_switch", "sched_switch"),
    ("netto_sys_enter_direct", "sys_enter"),
    ("netto_sys_enter", "sys_enter"),
    ("netto_sys_exit", "sys_exit"),
    ("netto_hrtimer_entry", "hrtimer_entry"),
    ("netto_hrtimer_exit", "hrtimer_exit"),
    ("netto_timer_irq_entry", "timer_irq_entry"),
    ("netto_timer_irq_exit", "timer_irq_exit"),
    ("netto_irq_entry", "irq_entry"),
];

/// The most netto's per-run cost may be, as a multiple of the empty
/// program's on the same hook (issue 12).
const BASELINE_TARGET: f64 = 2.0;

/// What runs beside the traffic in one throughput comparison.
struct Mode {
    name: &'static str,
    program: &'static str,
    args: &'static [&'static str],
    /// A stderr line saying the mode is measuring; None: give it a second.
    ready: Option<&'static str>,
    /// Whether it prints snapshots (JSON lines) whose own cost to report.
    reports_cost: bool,
}

const RECORD_OUT: &str = "/tmp/netto-bench-record.json";
const PERF_OUT: &str = "/tmp/netto-bench-perf.data";
/// Where perf moves the previous recording when it records again.
const PERF_OLD: &str = "/tmp/netto-bench-perf.data.old";

/// netto's exact accounting with default options, nothing else.
const ACCOUNTING: Mode = Mode {
    name: "netto accounting",
    program: NETTO,
    args: &["stat", "--json"],
    ready: Some("netto: measuring"),
    reports_cost: true,
};

const MODES: &[Mode] = &[
    ACCOUNTING,
    Mode {
        name: "netto tier softirq 99 Hz",
        program: NETTO,
        args: &["stat", "--json", "--tier", "softirq"],
        ready: Some("netto: measuring"),
        reports_cost: true,
    },
    Mode {
        name: "netto tier sampled 99 Hz",
        program: NETTO,
        args: &["stat", "--json", "--tier", "sampled"],
        ready: Some("netto: measuring"),
        reports_cost: true,
    },
    Mode {
        name: "netto record 1 kHz mmap",
        program: NETTO,
        args: &[
            "record",
            "--duration",
            "3600",
            "--frequency",
            "1000",
            "--force",
            "-o",
            RECORD_OUT,
        ],
        ready: Some("netto: recording"),
        reports_cost: false,
    },
    Mode {
        name: "netto record 1 kHz ringbuf",
        program: NETTO,
        args: &[
            "record",
            "--duration",
            "3600",
            "--frequency",
            "1000",
            "--transport",
            "ringbuf",
            "--force",
            "-o",
            RECORD_OUT,
        ],
        ready: Some("netto: recording"),
        reports_cost: false,
    },
    // The sampler alone, as perf samples: no accounting program.
    Mode {
        name: "netto record 1 kHz tier sampled",
        program: NETTO,
        args: &[
            "record",
            "--duration",
            "3600",
            "--frequency",
            "1000",
            "--tier",
            "sampled",
            "--force",
            "-o",
            RECORD_OUT,
        ],
        ready: Some("netto: recording"),
        reports_cost: false,
    },
    Mode {
        name: "netto record 10 kHz mmap",
        program: NETTO,
        args: &[
            "record",
            "--duration",
            "3600",
            "--frequency",
            "10000",
            "--force",
            "-o",
            RECORD_OUT,
        ],
        ready: Some("netto: recording"),
        reports_cost: false,
    },
    Mode {
        name: "netto record 10 kHz ringbuf",
        program: NETTO,
        args: &[
            "record",
            "--duration",
            "3600",
            "--frequency",
            "10000",
            "--transport",
            "ringbuf",
            "--force",
            "-o",
            RECORD_OUT,
        ],
        ready: Some("netto: recording"),
        reports_cost: false,
    },
    Mode {
        name: "perf record -a -g 1 kHz",
        program: "perf",
        args: &[
            "record", "-q", "-a", "-g", "-F", "1000", "-o", PERF_OUT, "--", "sleep", "3600",
        ],
        ready: None,
        reports_cost: false,
    },
    Mode {
        name: "perf record -a -g 10 kHz",
        program: "perf",
        args: &[
            "record", "-q", "-a", "-g", "-F", "10000", "-o", PERF_OUT, "--", "sleep", "3600",
        ],
        ready: None,
        reports_cost: false,
    },
];

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The files the modes write, removed however the benchmark ends.
struct Outputs;

impl Drop for Outputs {
    fn drop(&mut self) {
        for file in [RECORD_OUT, PERF_OUT, PERF_OLD] {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Set by SIGINT, SIGTERM or SIGHUP instead of dying at once: the benchmark
/// stops at its next measurement and returns an error, so the guards
/// (`Killed`, `Outputs`, the veth pair) remove its children, files and
/// namespace. A terminal's Ctrl-C also ends the iperf3 and netto running
/// then; a signal sent to the benchmark alone waits for the run in
/// progress (at most the longest iperf3 run, the serve section's settling).
static STOP: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

fn go_on() -> Result<()> {
    if STOP.load(Ordering::Relaxed) {
        bail!("interrupted: the benchmark stops and removes what it made");
    }
    Ok(())
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

/// Gbit/s of one pinned iperf3 run.
fn iperf3(pair: &VethPair, seconds: u32) -> Result<f64> {
    go_on()?;
    let peer = pair.peer_addr().to_string();
    let out = Command::new("iperf3")
        .args([
            "-c",
            &peer,
            "-p",
            PORT,
            "-A",
            "1",
            "-J",
            "-t",
            &seconds.to_string(),
        ])
        .output()
        .context("running iperf3 (Debian package iperf3)")?;
    go_on()?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let bps = report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .context("iperf3 reported no throughput")?;
    Ok(bps / 1e9)
}

/// A mode's process, pinned to CPU 0, away from the traffic.
struct Running {
    /// Killed if the benchmark ends while the mode runs.
    child: Killed,
    started: Instant,
    cpu_at_start: Duration,
    /// What it said it cost itself: (cost_percent, error_percent) per
    /// snapshot, once it has stopped.
    costs: Option<thread::JoinHandle<Vec<(f64, f64)>>>,
}

/// CPU time of every thread of `pid` so far, exact (schedstat), so a
/// start-up cost does not count as steady-state overhead.
fn process_cpu(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .sum()
}

fn start_mode(mode: &Mode) -> Result<Running> {
    go_on()?;
    let mut child = Command::new("taskset")
        .args(["-c", "0", mode.program])
        .args(mode.args)
        .stdout(if mode.reports_cost {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .map(Killed)
        .with_context(|| format!("starting {}", mode.name))?;
    let costs = child.0.stdout.take().map(|stdout| {
        thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| serde_json::from_str::<Snapshot>(&l).ok())
                .filter_map(|s| Some((s.overhead.cost_percent?, s.overhead.error_percent)))
                .collect()
        })
    });
    let mut lines = BufReader::new(child.0.stderr.take().context("stderr")?).lines();
    if let Some(ready) = mode.ready {
        loop {
            match lines.next() {
                Some(line) if line.as_deref().is_ok_and(|l| l.starts_with(ready)) => break,
                Some(_) => {}
                None => bail!("{} exited before measuring", mode.name),
            }
        }
    } else {
        thread::sleep(Duration::from_secs(1));
    }
    thread::spawn(move || lines.for_each(drop));
    // `taskset` execs the mode's program, so the child's pid is the mode's.
    let cpu_at_start = process_cpu(child.0.id());
    Ok(Running {
        child,
        started: Instant::now(),
        cpu_at_start,
        costs,
    })
}

impl Running {
    /// The process's CPU time per second while measuring, in ms, and the
    /// costs it reported; then SIGINT, and wait for it to finish (a
    /// recording is written then).
    fn stop(mut self) -> Result<(f64, Vec<(f64, f64)>)> {
        let cpu = process_cpu(self.child.0.id()).saturating_sub(self.cpu_at_start);
        let elapsed = self.started.elapsed();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(i32::try_from(self.child.0.id())?, libc::SIGINT) };
        self.child.0.wait()?;
        let costs = match self.costs.take() {
            Some(reader) => reader.join().expect("cost reader"),
            None => Vec::new(),
        };
        Ok((cpu.as_secs_f64() * 1e3 / elapsed.as_secs_f64(), costs))
    }
}

fn throughput(pair: &VethPair, rounds: u32, seconds: u32) -> Result<()> {
    let mut table = Table::new(
        "overhead-throughput",
        &[
            "mode",
            "without Gbit/s",
            "with Gbit/s",
            "ratio",
            "mode CPU ms/s",
            "own cost % (error)",
        ],
    )?;
    let only = std::env::var("NETTO_BENCH_MODES").unwrap_or_default();
    for mode in MODES
        .iter()
        .filter(|m| only.split(',').any(|o| m.name.contains(o)))
    {
        let (mut without, mut with, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
        let mut costs = Vec::new();
        for round in 0..rounds {
            for mode_first in [round % 2 == 0, round % 2 != 0] {
                if mode_first {
                    let running = start_mode(mode)?;
                    with.push(iperf3(pair, seconds)?);
                    let (ms, reported) = running.stop()?;
                    cpu.push(ms);
                    // The first interval is priced by one slice alone, the
                    // last is cut short by the stop.
                    let n = reported.len();
                    costs.extend(reported.into_iter().take(n.saturating_sub(1)).skip(1));
                } else {
                    without.push(iperf3(pair, seconds)?);
                }
            }
        }
        let (base, measured) = (median(&mut without), median(&mut with));
        let own = if costs.is_empty() {
            "-".to_owned()
        } else {
            let mut cost: Vec<f64> = costs.iter().map(|c| c.0).collect();
            let mut error: Vec<f64> = costs.iter().map(|c| c.1).collect();
            format!("{:.2} ({:.2})", median(&mut cost), median(&mut error))
        };
        table.row(&[
            mode.name.to_owned(),
            format!("{base:.2}"),
            format!("{measured:.2}"),
            format!("{:.3}", measured / base),
            format!("{:.3}", median(&mut cpu)),
            own,
        ]);
    }
    table.publish()
}

/// A system call loop: what one iteration does, and how many calls it makes.
struct CallLoop {
    name: &'static str,
    calls_per_iteration: u32,
    iteration: fn(&CallFds),
}

/// The descriptors the loops use: /dev/zero, and a unix datagram pair.
struct CallFds {
    zero: std::fs::File,
    pair: (
        std::os::unix::net::UnixDatagram,
        std::os::unix::net::UnixDatagram,
    ),
}

const CALL_LOOPS: &[CallLoop] = &[
    CallLoop {
        name: "getppid (no socket call)",
        calls_per_iteration: 1,
        iteration: |_| {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::getppid() };
        },
    },
    CallLoop {
        name: "read /dev/zero (not a socket)",
        calls_per_iteration: 1,
        iteration: |fds| {
            use std::io::Read;
            let _ = (&fds.zero).read(&mut [0u8; 1]);
        },
    },
    CallLoop {
        name: "unix socket write + read",
        calls_per_iteration: 2,
        iteration: |fds| {
            let _ = fds.pair.0.send(&[0u8; 8]);
            let _ = fds.pair.1.recv(&mut [0u8; 8]);
        },
    },
];

/// Runs `f` on CPU 1 (where the traffic runs in the other sections), then
/// lets the thread run anywhere again.
fn on_cpu1<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: cpu_set_t is plain data; the calls only read/write it.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of_val(&old), &mut old);
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(1, &mut one);
        libc::sched_setaffinity(0, std::mem::size_of_val(&one), &one);
        let out = f();
        libc::sched_setaffinity(0, std::mem::size_of_val(&old), &old);
        out
    }
}

/// ns per system call of each loop, the best of three passes of 300k
/// iterations (the least disturbed).
fn call_costs(fds: &CallFds) -> Vec<f64> {
    const ITERATIONS: u32 = 300_000;
    on_cpu1(|| {
        CALL_LOOPS
            .iter()
            .map(|l| {
                (0..3)
                    .map(|_| {
                        let start = Instant::now();
                        for _ in 0..ITERATIONS {
                            (l.iteration)(fds);
                        }
                        start.elapsed().as_nanos() as f64
                            / f64::from(ITERATIONS * l.calls_per_iteration)
                    })
                    .fold(f64::INFINITY, f64::min)
            })
            .collect()
    })
}

/// What runs beside the system call loops in one column of the per-call
/// table.
#[derive(Clone, Copy)]
enum Column {
    Nothing,
    Netto,
    /// Empty programs on the raw tracepoints every system call runs.
    RawTracepoints,
    /// Empty programs on the trace events of read and write only.
    CallEvents,
}

/// Runs the loops with `beside` attached or running; ns per call of each.
fn call_costs_beside(beside: Column, fds: &CallFds) -> Result<Vec<f64>> {
    go_on()?;
    let mut storage = MaybeUninit::uninit();
    let baseline = BaselineSkelBuilder::default().open(&mut storage)?.load()?;
    let progs = &baseline.progs;
    let attach = |progs: &[&libbpf_rs::ProgramMut<'_>]| -> Result<Vec<libbpf_rs::Link>> {
        progs.iter().map(|p| Ok(p.attach()?)).collect()
    };
    Ok(match beside {
        Column::Nothing => call_costs(fds),
        Column::Netto => {
            let running = start_mode(&ACCOUNTING)?;
            let costs = call_costs(fds);
            running.stop()?;
            costs
        }
        Column::RawTracepoints => {
            let _links = attach(&[&progs.baseline_sys_enter, &progs.baseline_sys_exit])?;
            call_costs(fds)
        }
        Column::CallEvents => {
            let _links = attach(&[
                &progs.baseline_read_enter,
                &progs.baseline_read_exit,
                &progs.baseline_write_enter,
                &progs.baseline_write_exit,
            ])?;
            call_costs(fds)
        }
    })
}

/// What netto's accounting adds to one system call, hook dispatch
/// included, beside what empty programs on either kind of syscall hook add.
fn per_call(rounds: u32) -> Result<()> {
    const COLUMNS: [(Column, &str); 4] = [
        (Column::Nothing, "without ns"),
        (Column::Netto, "+ netto"),
        (Column::RawTracepoints, "+ empty raw tracepoints"),
        (Column::CallEvents, "+ empty per-call events"),
    ];
    let pair = std::os::unix::net::UnixDatagram::pair()?;
    let fds = CallFds {
        zero: std::fs::File::open("/dev/zero")?,
        pair,
    };
    let mut measured: Vec<Vec<Vec<f64>>> = vec![Vec::new(); COLUMNS.len()];
    for round in 0..rounds {
        // Interleaved, in a rotating order.
        for k in 0..COLUMNS.len() {
            let column = (k + round as usize) % COLUMNS.len();
            measured[column].push(call_costs_beside(COLUMNS[column].0, &fds)?);
        }
    }
    let mut titles = vec!["system call (per call)"];
    titles.extend(COLUMNS.iter().map(|(_, title)| *title));
    let mut table = Table::new("overhead-calls", &titles)?;
    for (i, l) in CALL_LOOPS.iter().enumerate() {
        let base = median(&mut measured[0].iter().map(|c| c[i]).collect::<Vec<_>>());
        let mut cells = vec![l.name.to_owned()];
        for (column, runs) in measured.iter().enumerate() {
            let ns = median(&mut runs.iter().map(|c| c[i]).collect::<Vec<_>>());
            cells.push(format!("{:.0}", if column == 0 { ns } else { ns - base }));
        }
        table.row(&cells);
    }
    table.publish()
}

/// The cost run: netto's snapshots and the baseline programs' statistics.
struct CostRun {
    snapshots: Vec<Snapshot>,
    baseline: BTreeMap<String, RunStats>,
    /// What the load achieved, in its unit ([`Load::unit`]).
    throughput: f64,
}

/// What a cost run drives through the pair.
#[derive(Clone, Copy)]
enum Load {
    /// iperf3: one bulk TCP connection.
    Bulk,
    /// `netto-loadgen connect` at 10,000 short connections a second, each
    /// a new flow at both ends: the load that fills attribution's map.
    ShortConnections,
}

impl Load {
    fn unit(self) -> &'static str {
        match self {
            Load::Bulk => "Gbit/s",
            Load::ShortConnections => "connections/s",
        }
    }

    fn show(self, throughput: f64) -> String {
        match self {
            Load::Bulk => format!("{throughput:.2}"),
            Load::ShortConnections => format!("{throughput:.0}"),
        }
    }

    /// Drives the load for `seconds`; returns its throughput.
    fn drive(self, pair: &VethPair, seconds: u32) -> Result<f64> {
        match self {
            Load::Bulk => iperf3(pair, seconds),
            Load::ShortConnections => short_connections(pair, seconds),
        }
    }
}

/// The short-connection load's port, beside iperf3's.
const CHURN_PORT: u16 = 5398;

/// `netto-loadgen accept` in the namespace, `connect` from the host, both
/// on CPU 1 as iperf3 is: connections per second made.
fn short_connections(pair: &VethPair, seconds: u32) -> Result<f64> {
    go_on()?;
    let dest = format!("{}:{CHURN_PORT}", pair.peer_addr());
    let mut server = pair.command("taskset");
    server
        .args([
            "-c",
            "1",
            LOADGEN,
            "accept",
            "--listen",
            &dest,
            "--duration",
        ])
        .arg((seconds + 2).to_string())
        .stdout(Stdio::null());
    let server = Killed(server.spawn().context("starting netto-loadgen accept")?);
    let out = Command::new("taskset")
        .args([
            "-c", "1", LOADGEN, "connect", "--dest", &dest, "--rate", "10000",
        ])
        .args(["--duration", &seconds.to_string()])
        .output()
        .context("running netto-loadgen connect")?;
    drop(server);
    go_on()?;
    if !out.status.success() {
        bail!(
            "netto-loadgen connect failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let calls = report["calls"]
        .as_f64()
        .context("netto-loadgen reported no connections")?;
    Ok(calls / f64::from(seconds))
}

/// netto stat (with `extra` arguments) with BPF statistics on and the baseline
/// programs attached.
fn cost_run(pair: &VethPair, seconds: u32, extra: &[&str], load: Load) -> Result<CostRun> {
    go_on()?;
    let _stats = StatsGuard::enable().context("enabling BPF run-time statistics")?;
    let mut child = Command::new("taskset")
        .args(["-c", "0", NETTO, "stat", "--json", "--interval", "1"])
        .args(extra)
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
    let baseline = BaselineSkelBuilder::default().open(&mut storage)?.load()?;
    let mut links = Vec::new();
    // The empty programs on netto's own hooks (not the per-call events).
    for prog in baseline
        .object()
        .progs_mut()
        .filter(|p| p.section().to_string_lossy().starts_with("tp_btf/"))
    {
        links.push(prog.attach()?);
    }
    let before = baseline_stats(&baseline);
    let throughput = load.drive(pair, seconds)?;
    let after = baseline_stats(&baseline);
    drop(links);

    // SAFETY: signalling our own child.
    unsafe { libc::kill(i32::try_from(child.0.id())?, libc::SIGINT) };
    let snapshots = collected.join().expect("reader thread");
    drop(child);
    let baseline = after
        .into_iter()
        .map(|(name, a)| {
            let b = before.get(&name).copied().unwrap_or_default();
            let delta = RunStats {
                run_count: a.run_count - b.run_count,
                run_time_ns: a.run_time_ns - b.run_time_ns,
                recursion_misses: a.recursion_misses - b.recursion_misses,
            };
            (name, delta)
        })
        .collect();
    Ok(CostRun {
        snapshots,
        baseline,
        throughput,
    })
}

fn baseline_stats<'obj>(skel: &impl Skel<'obj>) -> BTreeMap<String, RunStats> {
    skel.object()
        .progs()
        .filter_map(|p| {
            let stats = run_stats(p.as_fd()).ok()?;
            Some((p.name().to_string_lossy().into_owned(), stats))
        })
        .collect()
}

fn report_costs(cost: &CostRun) -> Result<()> {
    let seconds: f64 = cost.snapshots.iter().map(|s| s.interval_s).sum();
    let user_ns: u64 = cost
        .snapshots
        .iter()
        .map(|s| s.overhead.process_cpu_ns)
        .sum();
    println!(
        "\nnetto stat user-space CPU {:.3} ms per second (target < 1)",
        user_ns as f64 / 1e6 / seconds
    );
    let mut programs: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for p in cost.snapshots.iter().flat_map(|s| &s.overhead.programs) {
        let entry = programs.entry(&p.name).or_default();
        entry.0 += p.run_count;
        entry.1 += p.run_time_ns;
    }
    let per_run = |(count, time): (u64, u64)| time as f64 / count.max(1) as f64;
    println!(
        "\n{:<26} {:>10} {:>8} {:>9}",
        "program (cost run)", "runs/s", "ns/run", "CPU %"
    );
    for (name, &(count, time)) in &programs {
        println!(
            "{name:<26} {:>10.0} {:>8.0} {:>9.3}",
            count as f64 / seconds,
            per_run((count, time)),
            time as f64 / seconds / 1e7
        );
    }
    let mut table = Table::new(
        "overhead-cost",
        &[
            "program",
            "ns/run",
            "empty",
            "ratio (target 2x)",
            "least",
            "least / empty",
            "netto above least, ns",
        ],
    )?;
    let baseline_ns = |name: &str| {
        cost.baseline
            .get(name)
            .map_or(f64::NAN, |s| per_run((s.run_count, s.run_time_ns)))
    };
    for &(program, hook) in BASELINES {
        // A program this kernel did not load (the helpers' twin of
        // sys_enter where direct loads work) has no row.
        let Some(&runs) = programs.get(program) else {
            continue;
        };
        let netto = per_run(runs);
        let empty = baseline_ns(&format!("baseline_{hook}"));
        let least = baseline_ns(&format!("least_{hook}"));
        table.row(&[
            program.trim_start_matches("netto_").to_owned(),
            format!("{netto:.0}"),
            format!("{empty:.0}"),
            format!("{:.2}", netto / empty),
            format!("{least:.0}"),
            format!("{:.2}", least / empty),
            format!("{:.0}", netto - least),
        ]);
    }
    println!(
        "(ratio: to the empty program on the hook, target {BASELINE_TARGET:.0}x; least: a per-CPU \
         lookup, one clock read and one store on the hook; above least: netto's own logic)"
    );
    table.publish()
}

/// The attribution section's variants: the accounting alone, then each
/// `--by` measured against it.
const ATTRIBUTION_VARIANTS: [(&str, &[&str]); 3] = [
    ("off", &[]),
    ("`--by cgroup`", &["--by", "cgroup"]),
    ("`--by flow`", &["--by", "flow"]),
];

/// Who pays (`--by cgroup`, `--by flow`) against the accounting alone:
/// netto's BPF time per event (all its programs' run time over the events
/// they timed), in cost runs of one benchmark run, the variants' order
/// turning every round. Target: at most 1.5x.
fn attribution_cost(pair: &VethPair, rounds: u32, seconds: u32, load: Load) -> Result<()> {
    let per_event = |cost: &CostRun| {
        let bpf: u64 = cost
            .snapshots
            .iter()
            .map(|s| s.overhead.bpf_run_time_ns)
            .sum();
        let events: u64 = cost
            .snapshots
            .iter()
            .flat_map(|s| s.events.values())
            .map(|e| e.count)
            .sum();
        bpf as f64 / events.max(1) as f64
    };
    let n = ATTRIBUTION_VARIANTS.len();
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut throughput: Vec<Vec<f64>> = vec![Vec::new(); n];
    for round in 0..rounds as usize {
        for turn in 0..n {
            let v = (round + turn) % n;
            let cost = cost_run(pair, seconds, ATTRIBUTION_VARIANTS[v].1, load)?;
            ns[v].push(per_event(&cost));
            throughput[v].push(cost.throughput);
        }
    }
    let (name, first) = match load {
        Load::Bulk => ("overhead-attribution", "attribution (cost runs)"),
        Load::ShortConnections => (
            "overhead-attribution-churn",
            "attribution (cost runs, short connections)",
        ),
    };
    let mut table = Table::new(
        name,
        &[first, load.unit(), "BPF ns/event", "ratio", "target"],
    )?;
    let off = median(&mut ns[0]);
    for (v, (name, _)) in ATTRIBUTION_VARIANTS.iter().enumerate() {
        let variant = median(&mut ns[v]);
        table.row(&[
            (*name).into(),
            load.show(median(&mut throughput[v])),
            format!("{variant:.0}"),
            format!("{:.2}", variant / off),
            if v == 0 { "-".into() } else { "1.5x".into() },
        ]);
    }
    table.publish()
}

/// How far each tier's estimates are from the exact accounting on the same
/// load. Both come from one run: every accounting program stays attached
/// (the exact figures) while the sampler places its samples as the tier
/// would, by their frames where the tier detaches what would say; windows
/// of the exact tier and the two estimating tiers take turns. The exact
/// windows give each event's agreement (samples x period / exact time,
/// pooled over them as a calibration pools a minute), printed beside the
/// estimates' ratios: how well a calibration tells a lower tier's bias.
/// iperf3 uses BBR, so the network timers (its pacing) have time to
/// estimate.
fn accuracy(pair: &VethPair, windows: u32, seconds: u32) -> Result<()> {
    use netto::breakdown::fold::Folder;
    use netto::breakdown::leave_out_softirq_loop;
    use netto::collect::estimate::{estimate_unmeasured, ESTIMATE_HZ};
    use netto::collect::Collector;
    use netto::kernel::backend::BackendChoice;
    use netto::kernel::features::Features;
    use netto::kernel::sampler::{Sampler, SamplerConfig, Transport, WRITER_WAIT};
    use netto::kernel::selection::{select, Storage};
    use netto::model::{EventKey, Tier};
    use netto::symbols::symbolizer::Symbolizer;
    use netto::workload::traffic::each_call::Loopback;

    let mut storage = Storage::default();
    let accounting = select(
        BackendChoice::Auto,
        &Features::detect(),
        &mut storage,
        &Loopback,
    )?
    .accounting;
    let mut sampler_storage = MaybeUninit::uninit();
    let mut sampler = Sampler::load(
        &mut sampler_storage,
        &accounting,
        SamplerConfig {
            frequency_hz: ESTIMATE_HZ,
            transport: Transport::Mmap,
            drain_period: Duration::from_millis(100),
            slots_per_half: None,
            writer_wait: WRITER_WAIT,
            tier: Tier::Softirq,
        },
    )?;
    let mut symbolizer = Symbolizer::load()?;
    let mut folder = Folder::new();
    let total = windows * seconds + 5;
    let peer = pair.peer_addr().to_string();
    let _load = Killed(
        Command::new("iperf3")
            .args([
                "-c",
                &peer,
                "-p",
                PORT,
                "-A",
                "1",
                "-C",
                "bbr",
                "-t",
                &total.to_string(),
            ])
            .stdout(Stdio::null())
            .spawn()
            .context("running iperf3")?,
    );
    thread::sleep(Duration::from_secs(2));
    let mut collector = Collector::start(&accounting, false)?;
    let mut ratios: BTreeMap<(Tier, EventKey), Vec<f64>> = BTreeMap::new();
    let mut errors: BTreeMap<(Tier, EventKey), Vec<f64>> = BTreeMap::new();
    // Per event, over the exact windows: samples x period, exact time.
    let mut agreed: BTreeMap<EventKey, (f64, f64)> = BTreeMap::new();
    for window in 0..windows {
        let tier = Tier::ALL[window as usize % Tier::ALL.len()];
        sampler.set_tier(tier);
        sampler.drain(|_| {})?;
        collector.collect(Default::default())?;
        let end = Instant::now() + Duration::from_secs(u64::from(seconds));
        while Instant::now() < end {
            go_on()?;
            thread::sleep(Duration::from_millis(100));
            sampler.drain(|s| folder.add(s.cpu, s.context, None, s.frames))?;
        }
        let exact = collector.collect(Default::default())?;
        symbolizer.refresh()?;
        let mut stacks = folder.take(&mut symbolizer, |_| None);
        leave_out_softirq_loop(&mut stacks);
        if tier == Tier::Exact {
            let period_ns = 1e9 / ESTIMATE_HZ as f64;
            for key in EventKey::ALL {
                let samples: u64 = stacks
                    .iter()
                    .filter(|s| s.context.event() == key)
                    .map(|s| s.count)
                    .sum();
                let pooled = agreed.entry(key).or_default();
                pooled.0 += samples as f64 * period_ns;
                pooled.1 += exact.event(key).total_ns as f64;
            }
            continue;
        }
        let mut estimated = exact.clone();
        estimated.tier = tier;
        estimate_unmeasured(&mut estimated, &stacks, ESTIMATE_HZ);
        for key in EventKey::ALL.into_iter().filter(|&k| !tier.measures(k)) {
            let truth = exact.event(key).total_ns as f64;
            let guess = estimated.event(key);
            if truth > 0.0 {
                ratios
                    .entry((tier, key))
                    .or_default()
                    .push(guess.total_ns as f64 / truth);
                errors
                    .entry((tier, key))
                    .or_default()
                    .push(guess.error_ns.unwrap_or(0) as f64 / truth);
            }
        }
    }
    println!(
        "\nestimates against exact, {windows} windows of {seconds} s, {ESTIMATE_HZ} Hz, \
         iperf3 bbr (exact, softirq and sampled windows in turn)"
    );
    let mut table = Table::new(
        "overhead-estimates",
        &[
            "tier",
            "event",
            "median ratio",
            "min..max",
            "error/exact",
            "target",
            "exact agreement",
        ],
    )?;
    for ((tier, key), values) in &mut ratios {
        let (lo, hi) = values
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let target = match key {
            EventKey::SockSend | EventKey::SockRecv => 0.15,
            _ => 0.10,
        };
        let errs = errors
            .get_mut(&(*tier, *key))
            .expect("errors beside ratios");
        let agreement = agreed
            .get(key)
            .filter(|(_, exact)| *exact > 0.0)
            .map_or(f64::NAN, |(sampled, exact)| sampled / exact);
        table.row(&[
            tier.name().to_owned(),
            key.name().to_owned(),
            format!("{:.3}", median(values)),
            format!("{lo:.3}..{hi:.3}"),
            format!("{:.3}", median(errs)),
            format!("within {:.0} %", target * 100.0),
            format!("{agreement:.3}"),
        ]);
    }
    table.publish()
}

fn main() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the overhead benchmark loads BPF programs and builds namespaces: run it as root");
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&STOP))
            .context("handling the signals that end the benchmark")?;
    }
    let _outputs = Outputs;
    let rounds = env_or("NETTO_BENCH_ROUNDS", 3);
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
    let sections = std::env::var("NETTO_BENCH_SECTIONS")
        .unwrap_or_else(|_| "throughput,calls,cost,attribution,estimates,serve".into());
    println!(
        "netto overhead: iperf3 TCP through veth, {rounds} interleaved rounds of {seconds} s per mode \
         (load average {:.2})",
        load_average()
    );
    if sections.contains("throughput") {
        throughput(&pair, rounds, seconds)?;
    }
    if sections.contains("calls") {
        per_call(rounds)?;
    }
    if sections.contains("cost") {
        report_costs(&cost_run(&pair, seconds, &[], Load::Bulk)?)?;
    }
    if sections.contains("attribution") {
        attribution_cost(&pair, rounds, seconds, Load::Bulk)?;
        attribution_cost(&pair, rounds, seconds, Load::ShortConnections)?;
    }
    if sections.contains("estimates") {
        accuracy(&pair, env_or("NETTO_BENCH_WINDOWS", 18), 10)?;
    }
    if sections.contains("serve") {
        serve::run(&pair, rounds)?;
    }
    println!("\nload average at the end: {:.2}", load_average());
    Ok(())
}
