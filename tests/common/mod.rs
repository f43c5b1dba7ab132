//! Shared by the integration tests: run netto and the load generator as a
//! user would, and read what they print. Everything started here is killed
//! on drop, so a failing assertion leaves no process behind.
// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod classic_tc;
pub mod pane;
pub mod serve;
pub mod topology;
pub mod venv;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Once};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::ValueEnum;
use netto::cli::BackendArg;
use netto::kernel::accounting::Accounting;
use netto::kernel::features::Features;
use netto::kernel::selection::{select, Storage};
use netto::model::{EventKey, Snapshot};
use netto::workload::netns::{NetnsError, VethPair};
use netto::workload::traffic::each_call::Loopback;
use netto::workload::undo;
use serde_json::Value;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

pub const NETTO: &str = env!("CARGO_BIN_EXE_netto");
pub const LOADGEN: &str = env!("CARGO_BIN_EXE_netto-loadgen");

/// `s` made an interval of the `softirq` tier: its socket calls estimated,
/// each with `error_ns` (for recordings the front ends replay).
pub fn in_softirq_tier(s: &mut Snapshot, error_ns: u64) {
    s.tier = netto::model::Tier::Softirq;
    for key in [EventKey::SockSend, EventKey::SockRecv] {
        let time = s.events.get_mut(&key).unwrap();
        time.estimated = true;
        time.error_ns = Some(error_ns);
    }
}

/// `s` made an interval of the `softirq` tier (as [`in_softirq_tier`])
/// whose `sock_send` estimate carries the agreement a tier that measured
/// it saw `age_s` earlier, over `samples` samples.
pub fn calibrated_in_softirq_tier(
    s: &mut Snapshot,
    error_ns: u64,
    agreement: f64,
    samples: u64,
    age_s: f64,
) {
    in_softirq_tier(s, error_ns);
    s.events.get_mut(&EventKey::SockSend).unwrap().calibration = Some(netto::model::Calibration {
        agreement,
        samples,
        ts: s.ts - age_s,
        ..Default::default()
    });
}

/// The backend every test measures with: `NETTO_TEST_BACKEND` (what
/// `--backend` takes), else netto's own choice. The VM matrix runs the same
/// test binaries once per backend with this set.
fn requested_backend() -> Option<String> {
    std::env::var("NETTO_TEST_BACKEND")
        .ok()
        .filter(|b| !b.is_empty())
}

/// The backend a library test loads: `NETTO_TEST_BACKEND` (the kernel
/// matrix sets it), else `auto`.
pub fn test_backend() -> netto::kernel::backend::BackendChoice {
    requested_backend()
        .map_or(BackendArg::Auto, |b| {
            BackendArg::from_str(&b, true).unwrap_or_else(|e| panic!("NETTO_TEST_BACKEND={b}: {e}"))
        })
        .into()
}

/// Whether the (kernel-truncated) program name is one of the socket window
/// programs of either backend: the syscall hooks, or the hooked socket
/// functions' entries and exits.
pub fn is_window_program(name: &str) -> bool {
    ["netto_sys_", "netto_send_", "netto_recv_", "netto_exit_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Whether the windows under test are the fentry backend's: the socket
/// functions, not whole system calls.
pub fn windows_are_socket_functions() -> bool {
    requested_backend().as_deref() == Some("fentry")
}

/// The lowest share of a socket call's system time its window may hold.
/// The fentry backend's windows are the socket functions only: the system
/// call's entry and the fd lookup stay outside (guests: recvmmsg
/// 0.52-0.93).
pub fn window_floor() -> f64 {
    if windows_are_socket_functions() {
        0.4
    } else {
        0.6
    }
}

/// `--backend NAME` for a netto command line, or nothing for auto.
pub fn backend_args() -> Vec<String> {
    requested_backend()
        .map(|b| vec!["--backend".to_owned(), b])
        .unwrap_or_default()
}

/// The same choice for tests that drive the library directly, resolved
/// and loaded as netto resolves `--backend`.
pub fn library_accounting(storage: &mut Storage) -> Accounting<'_> {
    select(test_backend(), &Features::detect(), storage, &Loopback)
        .expect("no backend can run here")
        .accounting
}

/// How much slower than a real machine the tests run: `NETTO_TEST_TIME_SCALE`
/// (the VM matrix sets it for guests under qemu TCG, which emulates every
/// instruction), else 1. Load durations and waits grow by it; ratios and
/// thresholds stay as they are, unless a test says otherwise through
/// [`emulated`].
fn time_scale() -> f64 {
    std::env::var("NETTO_TEST_TIME_SCALE")
        .ok()
        .map(|s| {
            s.parse::<f64>()
                .ok()
                .filter(|f| *f >= 1.0)
                .unwrap_or_else(|| panic!("NETTO_TEST_TIME_SCALE={s}: expected a number >= 1"))
        })
        .unwrap_or(1.0)
}

/// Whether the tests run in an emulated guest of the kernel matrix: the few
/// references that do not hold there (each test says which and why) are
/// relaxed, never the measurement under test.
pub fn emulated() -> bool {
    time_scale() > 1.0
}

/// `seconds` of load, stretched by [`time_scale`].
pub fn scaled_secs(seconds: u64) -> u64 {
    (seconds as f64 * time_scale()).ceil() as u64
}

/// A wait, stretched by [`time_scale`].
pub fn scaled(wait: Duration) -> Duration {
    wait.mul_f64(time_scale())
}

pub fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Undoes what the test made (namespaces, cgroups, a CPU taken offline:
/// `netto::workload::undo`) when SIGINT, SIGTERM or SIGHUP ends the test
/// process, as a terminal's Ctrl-C on a test run does, which would otherwise
/// kill it without running a destructor; then exits as the signal would
/// have. Installed once, by the first thing made that needs it.
pub fn undo_on_signals() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let mut signals =
            Signals::new([SIGINT, SIGTERM, SIGHUP]).expect("installing the test's signal handlers");
        thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let undone = undo::undo_all();
                eprintln!("test process ended by signal {signal}: undid {undone} things it made");
                std::process::exit(128 + signal);
            }
        });
    });
}

/// [`VethPair::create`], undone on a signal as well ([`undo_on_signals`]).
pub fn veth_pair(tag: &str) -> Result<VethPair, NetnsError> {
    undo_on_signals();
    VethPair::create(tag)
}

/// A child process killed when dropped.
pub struct Guarded(pub Child);

/// Waits for `child` to exit; panics with `what` if it has not within
/// `timeout` (a hang is a failure, not a stuck test run).
pub fn exit_within(child: &mut Child, timeout: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "{what} after {timeout:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `netto stat --json` running in the background, pinned to `cpu` so that
/// it does not disturb the CPU under test.
pub struct NettoStat {
    child: Guarded,
    lines: mpsc::Receiver<String>,
}

impl NettoStat {
    pub fn start(cpu: usize, extra: &[&str]) -> NettoStat {
        let mut child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), NETTO, "stat", "--json"])
            .args(backend_args())
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning netto");
        let stderr = child.stderr.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let child = Guarded(child);
        wait_for_line(stderr, "netto: measuring", scaled(Duration::from_secs(30)));
        NettoStat {
            child,
            lines: forward_lines(stdout),
        }
    }

    /// SIGINT, then every snapshot printed, as a user pressing Ctrl-C sees:
    /// the interval in progress at the signal is the last. Read to the end
    /// of netto's output, so that line is never still in the pipe.
    pub fn stop(mut self) -> Vec<Snapshot> {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.0.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("signalling netto");
        let status = self.child.0.wait().expect("waiting for netto");
        assert!(status.success(), "netto exited with {status}");
        let snaps: Vec<Snapshot> = self
            .lines
            .iter()
            .map(|line| serde_json::from_str(&line).expect("netto printed a bad JSON line"))
            .collect();
        if let Some(wanted) = requested_backend() {
            let used: BTreeSet<&str> = snaps.iter().map(|s| s.backend.as_str()).collect();
            assert!(
                used.iter().all(|b| *b == wanted),
                "asked for the {wanted} backend, netto measured with {used:?}"
            );
        }
        snaps
    }
}

/// `netto record ARGS -o OUT` on CPU 1 with the suite's backend, once it
/// has said it is recording.
pub fn start_record(args: &[&str], out: &std::path::Path) -> Guarded {
    let mut child = Command::new("taskset")
        .args(["-c", "1", NETTO, "record"])
        .args(args)
        .args(backend_args())
        .arg("-o")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning netto record");
    let stderr = child.stderr.take().unwrap();
    let child = Guarded(child);
    wait_for_line(stderr, "netto: recording", scaled(Duration::from_secs(30)));
    child
}

/// Reads `stream` until a line starts with `prefix`; panics on timeout or
/// end of stream (with what was read), then keeps draining it.
pub fn wait_for_line(stream: impl std::io::Read + Send + 'static, prefix: &str, timeout: Duration) {
    let lines = forward_lines(stream);
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => break,
            Ok(line) => seen.push(line),
            Err(_) => panic!("no line starting with {prefix:?}; got {seen:?}"),
        }
    }
    thread::spawn(move || for _ in lines {});
}

/// Every line of `stream`, as it comes.
pub fn forward_lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Snapshots whose interval overlaps [from, to] (unix seconds).
pub fn overlapping(snaps: &[Snapshot], from: f64, to: f64) -> Vec<&Snapshot> {
    snaps
        .iter()
        .filter(|s| s.ts > from && s.ts - s.interval_s < to)
        .collect()
}

pub fn event_on_cpu(snaps: &[&Snapshot], key: EventKey, cpu: usize) -> u64 {
    snaps.iter().map(|s| s.event(key).per_cpu_ns[cpu]).sum()
}

/// What a finished loadgen run reports about itself.
#[derive(Debug)]
pub struct LoadReport {
    pub calls: u64,
    pub bytes: u64,
    /// A sender to several destinations: the bytes each was sent.
    pub bytes_by_dest: BTreeMap<String, u64>,
    pub stime_ns: u64,
    pub started: f64,
    pub ended: f64,
}

/// A loadgen server (recv or discard) that has said it is ready.
pub struct Server {
    child: Guarded,
    stdout: mpsc::Receiver<String>,
}

impl Server {
    pub fn start(mut command: Command) -> Server {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning loadgen server");
        let stdout = forward_lines(child.stdout.take().unwrap());
        let child = Guarded(child);
        let line = stdout
            .recv_timeout(scaled(Duration::from_secs(10)))
            .expect("loadgen server never said ready");
        assert!(line.contains("ready"), "unexpected first line {line}");
        Server { child, stdout }
    }

    /// Waits for the server to finish on its own and returns its report.
    pub fn finish(mut self, started: f64) -> LoadReport {
        let status = self.child.0.wait().unwrap();
        assert!(status.success(), "loadgen server failed: {status}");
        let line = self.stdout.recv_timeout(Duration::from_secs(5)).unwrap();
        report(&line, started, now_unix())
    }
}

fn report(line: &str, started: f64, ended: f64) -> LoadReport {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("bad report {line}"));
    LoadReport {
        calls: v["calls"].as_u64().unwrap(),
        bytes: v["bytes"].as_u64().unwrap(),
        bytes_by_dest: v["by_dest"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                (
                    d["dest"].as_str().unwrap().to_owned(),
                    d["bytes"].as_u64().unwrap(),
                )
            })
            .collect(),
        stime_ns: v["stime_ns"].as_u64().unwrap(),
        started,
        ended,
    }
}

/// Runs a loadgen client to completion and returns its report.
pub fn run_client(mut command: Command) -> LoadReport {
    let started = now_unix();
    let out = command
        .stderr(Stdio::inherit())
        .output()
        .expect("running loadgen");
    assert!(out.status.success(), "loadgen failed: {}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    report(
        text.lines().last().expect("loadgen printed nothing"),
        started,
        now_unix(),
    )
}

/// `netto-loadgen` with the arguments of a command line, split on spaces.
pub fn loadgen(args: &str) -> Command {
    let mut command = Command::new(LOADGEN);
    command.args(args.split_whitespace());
    command
}

/// The same, run inside the namespace of `pair`.
pub fn loadgen_in(pair: &VethPair, args: &str) -> Command {
    let mut command = pair.command(LOADGEN);
    command.args(args.split_whitespace());
    command
}

/// Softirq time of the whole host from /proc/stat, in ns (tick-sampled).
pub fn proc_stat_softirq_ns() -> u64 {
    proc_stat_ns("cpu", 7)
}

/// Column `column` (the line's name is column 0) of the /proc/stat line
/// named `line` (`cpu` for the host, `cpuN` for one CPU), from ticks to ns.
fn proc_stat_ns(line: &str, column: usize) -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let fields = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(line))
        .unwrap_or_else(|| panic!("no {line} in /proc/stat"));
    let ticks: u64 = fields
        .split_whitespace()
        .nth(column)
        .unwrap()
        .parse()
        .unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .expect("sysconf")
        .expect("a clock tick") as u64;
    ticks * 1_000_000_000 / hz
}

/// Time the host took from virtual CPUs (their `steal` in /proc/stat) since
/// the start. netto's clock runs on through it, in whatever context the CPU
/// was in, while the kernel's own accounting of a process or thread (tick
/// accounting of system time; run time in schedstat) leaves it out: a run
/// whose CPU lost time to its host reads high against that reference by up
/// to the time lost (one CI run: a UDP receiver's windows 4.35 s against
/// 0.90 s of system time, where this machine reads 0.8 of about 3 s).
pub struct Stolen {
    /// The /proc/stat line: `cpuN` for one CPU, `cpu` for the host.
    line: String,
    before: u64,
}

impl Stolen {
    /// From one CPU, for a load pinned to it.
    pub fn start(cpu: usize) -> Stolen {
        Stolen::from_line(format!("cpu{cpu}"))
    }

    /// From every CPU, for a load the scheduler moves between them.
    pub fn start_host() -> Stolen {
        Stolen::from_line("cpu".to_owned())
    }

    fn from_line(line: String) -> Stolen {
        let before = proc_stat_ns(&line, STEAL_COLUMN);
        Stolen { line, before }
    }

    pub fn ns(&self) -> u64 {
        proc_stat_ns(&self.line, STEAL_COLUMN).saturating_sub(self.before)
    }
}

/// /proc/stat's `steal` column.
const STEAL_COLUMN: usize = 8;

/// The most of a time the kernel accounted (`reference_ns`: a process's
/// system time, a thread's run time, the host's softirq time) netto may
/// charge, as a share of it: the test's own `ceiling`, raised by the time
/// the CPUs lost to the host ([`Stolen`]), which netto's clock counts and
/// the kernel's accounting does not.
pub fn kernel_time_ceiling(ceiling: f64, reference_ns: u64, stolen_ns: u64) -> f64 {
    ceiling + stolen_ns as f64 / reference_ns as f64
}

/// Interrupts of the kinds netto's hardirq hooks see, on every CPU, from
/// the kernel's own counts in /proc/interrupts: device interrupts (the
/// numbered rows), local timer (LOC), rescheduling (RES), function call
/// (CAL, TLB shootdowns included) and irq_work (IWI) interrupts.
pub fn proc_interrupts_hooked() -> u64 {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap();
    let cpus = text.lines().next().unwrap().split_whitespace().count();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let (name, counts) = line.split_once(':')?;
            let name = name.trim();
            let hooked = name.chars().all(|c| c.is_ascii_digit())
                || ["LOC", "RES", "CAL", "IWI"].contains(&name);
            hooked.then(|| {
                counts
                    .split_whitespace()
                    .take(cpus)
                    .map(|n| n.parse::<u64>().unwrap_or(0))
                    .sum::<u64>()
            })
        })
        .sum()
}

/// Runs of the loaded BPF program named `name` (kernel-truncated) that
/// the kernel counted while its run-time statistics were on.
pub fn program_runs(name: &str) -> u64 {
    bpftool_json("prog")
        .iter()
        .filter(|p| p["name"].as_str() == Some(name))
        .filter_map(|p| p["run_cnt"].as_u64())
        .sum()
}

fn bpftool_json(object: &str) -> Vec<Value> {
    let out = Command::new("bpftool")
        .args([object, "show", "--json"])
        .output()
        .expect("bpftool");
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

/// Ids of the BPF programs named netto_* (kernel-truncated) loaded now.
pub fn netto_program_ids() -> Vec<u64> {
    bpftool_json("prog")
        .iter()
        .filter(|p| p["name"].as_str().is_some_and(|n| n.starts_with("netto_")))
        .filter_map(|p| p["id"].as_u64())
        .collect()
}

pub fn netto_programs_loaded() -> usize {
    netto_program_ids().len()
}

/// BPF links whose program is one of netto's: attachments that the kernel
/// removes when their last fd closes, unlike legacy attachments.
pub fn netto_links() -> usize {
    let ids = netto_program_ids();
    bpftool_json("link")
        .iter()
        .filter(|l| l["prog_id"].as_u64().is_some_and(|id| ids.contains(&id)))
        .count()
}

/// BPF links of attribution's delivery points (programs `netto_attr_*`).
pub fn attribution_links() -> usize {
    links_of(|name| name.starts_with("netto_attr_"))
}

/// BPF links of the programs whose (kernel-truncated, 15 characters) name
/// `wanted` picks.
pub fn links_of(wanted: impl Fn(&str) -> bool) -> usize {
    let ids: Vec<u64> = bpftool_json("prog")
        .iter()
        .filter(|p| p["name"].as_str().is_some_and(&wanted))
        .filter_map(|p| p["id"].as_u64())
        .collect();
    bpftool_json("link")
        .iter()
        .filter(|l| l["prog_id"].as_u64().is_some_and(|id| ids.contains(&id)))
        .count()
}

/// netto run to completion with `args`. Whatever it printed is held to
/// netto's promise never to print a kernel address ([`has_kernel_address`]).
pub fn netto(args: &[&str]) -> std::process::Output {
    let out = Command::new(NETTO)
        .args(args)
        .output()
        .expect("running netto");
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !has_kernel_address(&text),
            "netto {args:?} printed a kernel address on {stream}: {text}"
        );
    }
    out
}

/// Whether `text` holds something shaped like an x86-64 kernel address:
/// `ffff` followed by at least 8 more hex digits (a full address is 16,
/// and one cut short is still a leak), anywhere in a run of hex digits, in
/// either case, with `0x` or without (the `x` ends the run before it).
pub fn has_kernel_address(text: &str) -> bool {
    const FFFF: &[u8] = b"ffff";
    text.as_bytes()
        .split(|b| !b.is_ascii_hexdigit())
        .any(|run| {
            (0..run.len().saturating_sub(11))
                .any(|i| run[i..i + FFFF.len()].eq_ignore_ascii_case(FFFF))
        })
}

/// The recorded demo every replay test reads (a fixture kept valid as
/// netto's recording format changes).
pub const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/recordings/demo.json"
);

/// [`RECORDING`], parsed.
pub fn recording() -> netto::model::Recording {
    serde_json::from_str(&std::fs::read_to_string(RECORDING).unwrap()).unwrap()
}

/// [`RECORDING`] as JSON, for tests that change what the model cannot hold.
pub fn recording_json() -> Value {
    serde_json::from_str(&std::fs::read_to_string(RECORDING).unwrap()).unwrap()
}

/// The middle value (the upper one of an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// One line on stderr, a non-zero exit, no panic.
pub fn assert_clean_failure(out: &std::process::Output, mentions: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "exit 0 for bad input; stderr {stderr}"
    );
    assert_ne!(out.status.code(), Some(101), "panicked: {stderr}");
    // One line of error, then (for a usage error) clap's tips or the
    // commands there are, each indented on a line of its own.
    let mut lines = stderr.trim_end().lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with("netto: error: "),
        "not one error line: {stderr:?}"
    );
    assert!(
        lines.all(|l| l.starts_with("  ") && !l.trim().is_empty()),
        "not one error line and its tips: {stderr:?}"
    );
    assert!(
        stderr.contains(mentions),
        "{stderr:?} does not mention {mentions:?}"
    );
    assert!(out.stdout.is_empty(), "wrote to stdout on error");
}

/// Sends `signal` (a `libc::SIG*` number) to process `pid`, which must
/// exist.
pub fn kill(pid: i32, signal: i32) {
    let signal = nix::sys::signal::Signal::try_from(signal).expect("a signal number");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
        .unwrap_or_else(|e| panic!("sending {signal} to {pid}: {e}"));
}
