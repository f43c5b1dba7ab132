//! `netto-loadgen`: drives one kind of socket or file syscall for a fixed time, so
//! netto's accounting can be checked against a workload whose syscalls and bytes are
//! known. Each run ends with one JSON line saying what it did and what CPU it used;
//! `recv` and `discard` first print `{"ready":true}` so a script knows when to start
//! the sender.
//!
//! Exit codes: 0 done, 1 the run failed, 2 the request was invalid.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use netto::cli::parse_or_exit_code;
use netto::collect::cpu_time;
use netto::workload::traffic::{
    self, ChurnConfig, Closer, Discard, Proto, Receiver, RecvSyscall, SendConfig, SendSyscall,
    Summary, TrafficError, Until,
};

#[derive(Parser)]
#[command(
    name = "netto-loadgen",
    version,
    about = "Generate known socket or file traffic to check netto against"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send to --dest with one chosen syscall
    Send(SendArgs),
    /// Receive on --listen with one chosen syscall
    Recv(RecvArgs),
    /// Accept and discard everything arriving on --listen
    Discard(DiscardArgs),
    /// Open short TCP connections to --dest, one after another, each
    /// writing --size bytes and then reset
    Connect(ConnectArgs),
    /// Accept TCP connections on --listen and close each at once: the
    /// server for `connect`
    Accept(AcceptArgs),
    /// Read a temporary regular file, the control that is not socket traffic
    ReadFile(RunArgs),
}

#[derive(Args)]
struct SendArgs {
    #[arg(long)]
    proto: Proto,
    #[arg(long)]
    syscall: SendSyscall,
    /// Loopback or 198.18.0.0/15 only. Given more than once, each
    /// destination gets its own socket and thread in this one process, and
    /// the report says what each sent (`by_dest`)
    #[arg(long, value_name = "IP:PORT", required = true)]
    dest: Vec<SocketAddr>,
    /// Bytes per datagram or per call [default: 1400 for udp, 65536 for tcp]
    #[arg(long, value_name = "BYTES")]
    size: Option<usize>,
    /// TCP congestion control algorithm, e.g. bbr
    #[arg(long, value_name = "NAME")]
    congestion: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct RecvArgs {
    #[arg(long)]
    proto: Proto,
    #[arg(long)]
    syscall: RecvSyscall,
    #[arg(long, value_name = "IP:PORT")]
    listen: SocketAddr,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct DiscardArgs {
    #[arg(long)]
    proto: Proto,
    #[arg(long, value_name = "IP:PORT")]
    listen: SocketAddr,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct ConnectArgs {
    /// Loopback or 198.18.0.0/15 only
    #[arg(long, value_name = "IP:PORT")]
    dest: SocketAddr,
    /// Bytes written on each connection
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    size: usize,
    /// The most connections to open per second [default: as many as go]
    #[arg(long, value_name = "PER_SECOND")]
    rate: Option<u32>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct AcceptArgs {
    #[arg(long, value_name = "IP:PORT")]
    listen: SocketAddr,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct RunArgs {
    /// How long to run, in seconds (fractions allowed)
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    duration: Duration,
    /// Pin the traffic to this CPU
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
    /// Name this process (prctl PR_SET_NAME, which any process may do; at
    /// most 15 bytes), as netto's tests of how names are printed need
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
}

/// The closing line of every run; field order is part of the output format.
#[derive(Serialize)]
struct Report {
    pid: u32,
    calls: u64,
    bytes: u64,
    utime_ns: u64,
    stime_ns: u64,
    /// What each destination's socket sent, when a sender had several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    by_dest: Vec<DestReport>,
}

#[derive(Serialize)]
struct DestReport {
    dest: String,
    calls: u64,
    bytes: u64,
}

enum Failure {
    /// The request itself is wrong: exit code 2.
    Usage(String),
    /// The request was fine but the run failed: exit code 1.
    Run(String),
}

impl From<TrafficError> for Failure {
    fn from(e: TrafficError) -> Failure {
        if e.is_invalid_input() {
            Failure::Usage(e.to_string())
        } else {
            Failure::Run(e.to_string())
        }
    }
}

fn main() -> ExitCode {
    let cli: Cli = match parse_or_exit_code("netto-loadgen") {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => fail(failure),
    }
}

fn run(command: Command) -> Result<(), Failure> {
    let stop = stop_on_signals()?;
    let summary = match command {
        Command::Send(args) => {
            let configs: Vec<SendConfig> = args
                .dest
                .iter()
                .map(|&dest| SendConfig {
                    proto: args.proto,
                    syscall: args.syscall,
                    dest,
                    size: args.size.unwrap_or(SendConfig::default_size(args.proto)),
                    congestion: args.congestion.clone(),
                    max_rate: None,
                })
                .collect();
            for config in &configs {
                config.validate()?;
            }
            prepare(&args.run)?;
            return send_each(&configs, until(&args.run, &stop));
        }
        Command::Recv(args) => {
            prepare(&args.run)?;
            let receiver = Receiver::bind(args.proto, args.syscall, args.listen)?;
            announce_ready()?;
            receiver.run(until(&args.run, &stop))?
        }
        Command::Discard(args) => {
            prepare(&args.run)?;
            let discard = Discard::bind(args.proto, args.listen)?;
            announce_ready()?;
            discard.run(until(&args.run, &stop))?
        }
        Command::Connect(args) => {
            let config = ChurnConfig {
                dest: args.dest,
                size: args.size,
                rate: args.rate,
            };
            config.validate()?;
            prepare(&args.run)?;
            traffic::churn(&config, until(&args.run, &stop))?
        }
        Command::Accept(args) => {
            prepare(&args.run)?;
            let closer = Closer::bind(args.listen)?;
            announce_ready()?;
            closer.run(until(&args.run, &stop))?
        }
        Command::ReadFile(run) => {
            prepare(&run)?;
            traffic::read_file(until(&run, &stop))?
        }
    };
    report(summary, Vec::new())
}

/// Sends to every destination at once, one thread each (threads inherit
/// the pinning), and reports the total and, for more than one, each.
fn send_each(configs: &[SendConfig], until: Until<'_>) -> Result<(), Failure> {
    let results: Vec<Result<Summary, TrafficError>> = thread::scope(|scope| {
        let senders: Vec<_> = configs
            .iter()
            .map(|config| scope.spawn(move || traffic::send(config, until)))
            .collect();
        senders
            .into_iter()
            .map(|sender| sender.join().unwrap_or(Err(TrafficError::SenderPanicked)))
            .collect()
    });
    let mut total = Summary::default();
    let mut by_dest = Vec::new();
    for (config, result) in configs.iter().zip(results) {
        let summary = result?;
        total += summary;
        by_dest.push(DestReport {
            dest: config.dest.to_string(),
            calls: summary.calls,
            bytes: summary.bytes,
        });
    }
    if by_dest.len() == 1 {
        by_dest.clear();
    }
    report(total, by_dest)
}

/// SIGINT and SIGTERM end the run early but still print the report, so a caller
/// that stops a receiver learns what it received.
fn stop_on_signals() -> Result<Arc<AtomicBool>, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Failure::Run(format!("cannot handle signal {signal}: {e}")))?;
    }
    Ok(stop)
}

fn until<'a>(run: &RunArgs, stop: &'a AtomicBool) -> Until<'a> {
    Until::after(run.duration).or_flag(stop)
}

/// Pins the traffic's thread and names the process, as asked.
fn prepare(run: &RunArgs) -> Result<(), Failure> {
    if let Some(name) = &run.name {
        let name = std::ffi::CString::new(name.as_str())
            .map_err(|_| Failure::Usage("--name cannot hold a NUL byte".into()))?;
        nix::sys::prctl::set_name(&name)
            .map_err(|e| Failure::Run(format!("cannot set the name: {e}")))?;
    }
    pin(run.cpu)
}

fn pin(cpu: Option<usize>) -> Result<(), Failure> {
    match cpu {
        Some(cpu) => traffic::pin_current_thread(cpu).map_err(|e| {
            Failure::Usage(format!(
                "cannot pin to CPU {cpu}: {e}; pick one of /sys/devices/system/cpu/online"
            ))
        }),
        None => Ok(()),
    }
}

fn announce_ready() -> Result<(), Failure> {
    print_line(r#"{"ready":true}"#)
}

fn report(summary: Summary, by_dest: Vec<DestReport>) -> Result<(), Failure> {
    let times = cpu_time::cpu_times()
        .map_err(|e| Failure::Run(format!("cannot read this process's CPU time: {e}")))?;
    let report = Report {
        pid: std::process::id(),
        calls: summary.calls,
        bytes: summary.bytes,
        utime_ns: nanos(times.user),
        stime_ns: nanos(times.system),
        by_dest,
    };
    let line = serde_json::to_string(&report)
        .map_err(|e| Failure::Run(format!("cannot encode the report: {e}")))?;
    print_line(&line)
}

fn nanos(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

/// Flushes at once: readers wait on these lines while the process keeps running.
fn print_line(line: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Run(format!("cannot write to stdout: {e}")))
}

fn fail(failure: Failure) -> ExitCode {
    let (message, code) = match failure {
        Failure::Usage(message) => (message, 2),
        Failure::Run(message) => (message, 1),
    };
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let _ = writeln!(io::stderr(), "netto-loadgen: {one_line}");
    ExitCode::from(code)
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if secs.is_nan() || secs <= 0.0 {
        return Err("must be more than 0 seconds".to_owned());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{text} seconds is too long"))
}
