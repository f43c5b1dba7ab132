//! Command-line arguments and their validation. Bad input is rejected here,
//! before anything touches the kernel.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::collect::attribution::{Config as AttributionConfig, DEFAULT_MAX_GROUPS};
use crate::collect::estimate::ESTIMATE_HZ;
use crate::collect::groups::kubelet;
use crate::frontends::flame::{Scope, Weight};
use crate::kernel::backend::BackendChoice;
use crate::kernel::sampler::Transport;
use crate::sketch::config as sketch_config;
use crate::sketch::SketchConfig;
use crate::source::live::{LiveConfig, StackSampling};

use crate::model::{GroupBy, Tier, MAX_DURATION_S, MAX_INTERVAL_S, MIN_INTERVAL_S};
use crate::output_file::Destination;

#[derive(Debug, Parser)]
#[command(
    name = "netto",
    version,
    about = "How much CPU the Linux kernel network stack costs, measured exactly with eBPF",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Without a subcommand netto runs `top`, and takes its options.
    #[command(flatten)]
    pub top: TopArgs,
}

impl Cli {
    /// The subcommand to run: `top` when none was named.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Top(self.top))
    }
}

/// libbpf's log, for the commands that load BPF programs (and only
/// those: `report` or a replay loads none, so offers no `-v`). Flattened
/// beside [`MeasureArgs`], not into it: clap leaves the group of a struct
/// with a flattened field empty, and `--replay` conflicts with that group.
#[derive(Debug, Args)]
#[group(skip)]
pub struct LogArgs {
    /// Print libbpf's own log (verifier output on load failures).
    #[arg(short, long)]
    pub verbose: bool,
}

impl Command {
    /// Whether to print libbpf's log.
    pub fn libbpf_log(&self) -> bool {
        match self {
            Command::Stat(args) => args.log.verbose,
            Command::Record(args) => args.log.verbose,
            Command::Top(args) => args.source.log.verbose,
            Command::Serve(args) => args.source.log.verbose,
            Command::Check(args) => args.log.verbose,
            Command::Sketch(args) => args.log.verbose,
            Command::Report(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::DemoTraffic(_)
            | Command::ServeHttp(_)
            | Command::DocsReference(_) => false,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the CPU time of the kernel's network entry points every interval.
    Stat(StatArgs),
    /// Report what this kernel allows and which backend netto would use.
    Check(CheckArgs),
    /// Sample where the network time goes, then write a flame graph,
    /// folded stacks, a pprof profile or a JSON recording.
    Record(RecordArgs),
    /// Render a recording again, or the difference of two.
    Report(ReportArgs),
    /// The interactive view (the default): events, history, breakdown,
    /// live or replayed.
    Top(TopArgs),
    /// Serve a live web view, a JSON API and Prometheus metrics.
    Serve(ServeArgs),
    /// Attach an XDP NitroSketch to an interface and show its heaviest
    /// flows and what the sketch costs, every interval.
    Sketch(SketchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print a manual page (roff): netto(1), or netto-COMMAND(1) for a command.
    Man(ManArgs),
    /// The demo traffic's child process (started by `--demo`).
    #[command(name = "demo-traffic", hide = true)]
    DemoTraffic(DemoTrafficArgs),
    /// `serve`'s HTTP server process (started by `serve`).
    #[command(name = "serve-http", hide = true)]
    ServeHttp(ServeHttpArgs),
    /// Write the reference pages generated from the code (metrics, command
    /// line, JSON schemas) into a directory: for netto's own docs.
    #[command(name = "docs-reference", hide = true)]
    DocsReference(DocsReferenceArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    Auto,
    Fentry,
    Tracepoint,
}

impl From<BackendArg> for BackendChoice {
    fn from(arg: BackendArg) -> Self {
        match arg {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Fentry => BackendChoice::Fentry,
            BackendArg::Tracepoint => BackendChoice::Tracepoint,
        }
    }
}

/// When to run the built-in demo traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoArg {
    Off,
    On,
    /// only when the host's network is idle at start
    Auto,
}

/// How every measuring command (stat, record, top, serve) measures. A new
/// measuring option is one field here and its use in
/// [`MeasureArgs::live_config`], the one place a live run is configured.
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// Seconds per interval (one snapshot each).
    #[arg(long, default_value = "1", value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_interval)]
    pub interval: f64,
    /// Accounting backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Push TCP traffic through a veth pair into a private network namespace
    /// while running, so an idle host shows real numbers; removed on exit.
    /// `--demo=auto`: only if the host's network is idle at start.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "on", default_value_t = DemoArg::Off, value_name = "WHEN")]
    pub demo: DemoArg,
    /// The demo's rate in bits per second (k, M, G: powers of 1000), or
    /// `max` for as fast as the veth pair takes (about a CPU or more).
    #[arg(long, default_value = DEFAULT_DEMO_RATE, value_name = "RATE", value_parser = parse_rate)]
    pub demo_rate: Rate,
    /// Do not turn on BPF run-time statistics (they add two clock reads to
    /// every BPF program on the host while netto runs); netto's per-program
    /// cost is then not reported.
    #[arg(long)]
    pub no_bpf_stats: bool,
    /// Co-host the XDP NitroSketch on this interface (default settings; see
    /// `netto sketch`): its heaviest flows and its own cost in every snapshot.
    #[arg(long, value_name = "IFACE")]
    pub xdp_sketch: Option<String>,
    /// The co-hosted sketch's probability, in (0, 1] (as `netto sketch
    /// --probability`); with --budget, the ceiling it steps back up to.
    #[arg(long, value_name = "P", requires = "xdp_sketch", default_value_t = sketch_config::DEFAULT_PROBABILITY, allow_negative_numbers = true, value_parser = parse_probability)]
    pub xdp_sketch_probability: f64,
    /// Attribute every event's time to the process, cgroup or network
    /// namespace it was for (socket calls: the caller; softirq work: the
    /// socket's owner, or the device's namespace for forwarded traffic).
    #[arg(long, value_enum, value_name = "WHAT")]
    pub by: Option<GroupByArg>,
    /// Groups shown with --by; the lighter ones are folded into `other`.
    #[arg(long, value_name = "N", requires = "by", default_value_t = DEFAULT_MAX_GROUPS, value_parser = parse_max_groups)]
    pub max_groups: usize,
    #[arg(long, value_name = "DIR", default_value = kubelet::DEFAULT_ROOT, help = KUBELET_LOGS_HELP)]
    pub kubelet_logs: std::path::PathBuf,
    /// Keep what measuring costs (netto's measuring process and its BPF
    /// programs; not serve's HTTP server, which --serve-budget bounds) under
    /// this percentage of one CPU by turning the sampling frequency down, then
    /// attribution (--by) off, then the XDP sketch's probability
    /// (--xdp-sketch) down, then (when sampling) the tier down, and back
    /// when there is room; `off`: no budget. Estimates are marked with
    /// their errors; when every knob is at its floor, netto says so.
    #[arg(long, value_name = "PERCENT", default_value = "off", allow_negative_numbers = true, value_parser = parse_budget)]
    pub budget: OrOff,
    /// How much of the accounting runs: `exact` (every event exact),
    /// `softirq` (socket calls estimated from stack samples, no hook on
    /// system calls) or `sampled` (every event estimated, no per-event
    /// hook). Estimates carry their error.
    #[arg(long, value_enum, default_value_t = TierArg::Exact, conflicts_with = "by")]
    pub tier: TierArg,
    /// In a tier that estimates (--tier, or where --budget took the run),
    /// measure one interval exactly whenever none has for this many
    /// seconds, and calibrate the estimates by how the tier's samples
    /// stood against it; that interval costs what the exact tier costs.
    /// `off`: never (estimates stay raw).
    #[arg(long, value_name = "SECONDS", default_value = "off", value_parser = parse_calibrate_every)]
    pub calibrate_every: OrOff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TierArg {
    Exact,
    Softirq,
    Sampled,
}

impl From<TierArg> for Tier {
    fn from(arg: TierArg) -> Self {
        match arg {
            TierArg::Exact => Tier::Exact,
            TierArg::Softirq => Tier::Softirq,
            TierArg::Sampled => Tier::Sampled,
        }
    }
}

/// The demo's rate unless told: enough traffic for every panel to show
/// something, a small share of a CPU.
pub const DEFAULT_DEMO_RATE: &str = "1G";

/// Bits per second, or `None`: as fast as it goes (`--demo-rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate(pub Option<u64>);

/// A number, or `off` (`--budget`, `--calibrate-every`): its own type, so
/// that clap takes `None` for a value rather than for an absent option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrOff(pub Option<f64>);

impl MeasureArgs {
    /// The live run these options ask for, sampling stacks as `sampling`
    /// says (not at all without), for `duration` seconds (until stopped
    /// without); `flush_on_stop` delivers the interval in progress on a
    /// stop too.
    pub fn live_config(
        &self,
        sampling: Option<&SamplingArgs>,
        duration: Option<f64>,
        flush_on_stop: bool,
    ) -> LiveConfig {
        LiveConfig {
            backend: self.backend.into(),
            bpf_stats: !self.no_bpf_stats,
            interval: Duration::from_secs_f64(self.interval),
            duration: duration.map(Duration::from_secs_f64),
            sampling: sampling
                .map(|s| StackSampling {
                    frequency_hz: s.frequency,
                    transport: s.transport.into(),
                })
                .or_else(|| {
                    (self.tier != TierArg::Exact).then_some(StackSampling {
                        frequency_hz: ESTIMATE_HZ,
                        transport: Transport::Mmap,
                    })
                }),
            flush_on_stop,
            xdp_sketch: self.xdp_sketch.as_ref().map(|iface| {
                (
                    iface.clone(),
                    SketchConfig {
                        probability: self.xdp_sketch_probability,
                        ..SketchConfig::default()
                    },
                )
            }),
            attribution: self.attribution(),
            budget: self.budget.0,
            tier: self.tier.into(),
            calibrate_every_s: self.calibrate_every.0,
        }
    }
}

/// Who pays: attribution of every event's time to groups (`--by`).
impl MeasureArgs {
    pub fn attribution(&self) -> Option<AttributionConfig> {
        self.by.map(|by| AttributionConfig {
            by: by.into(),
            max_groups: self.max_groups,
            kubelet_logs: self.kubelet_logs.clone(),
        })
    }
}

/// `--kubelet-logs`, where the names of pods and containers come from:
/// an option of the measuring commands and of `check`. (A struct of its
/// own flattened into [`MeasureArgs`] would empty clap's group of it,
/// which `--replay` conflicts with.)
const KUBELET_LOGS_HELP: &str = "The kubelet's log directory: its containers/ links (and pods/ \
     directories, where there) name the pods and containers of cgroups (--by cgroup) without the \
     API server. In a pod, where the node's are mounted";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GroupByArg {
    Process,
    Cgroup,
    Netns,
}

impl From<GroupByArg> for GroupBy {
    fn from(arg: GroupByArg) -> Self {
        match arg {
            GroupByArg::Process => GroupBy::Process,
            GroupByArg::Cgroup => GroupBy::Cgroup,
            GroupByArg::Netns => GroupBy::Netns,
        }
    }
}

/// More groups than fit a screen, or than Prometheus wants as label values,
/// is a typo.
const MAX_GROUPS: usize = 1000;

fn parse_max_groups(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_GROUPS).contains(&n) => Ok(n),
        _ => Err(format!("must be a whole number from 1 to {MAX_GROUPS}")),
    }
}

/// Stack sampling, for the commands that sample (record, top, serve); each
/// sets its own default frequency.
#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// Stack samples per second per CPU.
    #[arg(long, value_name = "HZ", default_value = "1000", allow_negative_numbers = true, value_parser = parse_frequency)]
    pub frequency: u64,
    /// How samples reach user space.
    #[arg(long, value_enum, default_value_t = TransportArg::Mmap)]
    pub transport: TransportArg,
}

#[derive(Debug, Args)]
pub struct StatArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub log: LogArgs,
    /// Run this long, then exit 0 (default: until interrupted).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// One JSON object per interval and line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// One line per interval instead of a table, like vmstat: each
    /// event's share of one CPU, their sum, netto's own cost and a note
    /// where the interval is unusual.
    #[arg(long, conflicts_with = "json")]
    pub brief: bool,
}

/// What `record` and `report` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// inferno flame graph, frames coloured by category
    Svg,
    /// folded stacks (flamegraph.pl, inferno, speedscope)
    Folded,
    /// a netto recording: snapshots and symbolized stacks, replayable
    Json,
    /// gzip-compressed pprof profile (Parca, Pyroscope, go tool pprof)
    Pprof,
}

impl Format {
    /// As written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Folded => "folded",
            Format::Json => "json",
            Format::Pprof => "pprof",
        }
    }

    /// The format to write `output` in: `explicit` (--format) when given,
    /// svg on standard output, else the one [`EXTENSIONS`] gives the file
    /// name's end (in any case).
    pub fn for_output(
        output: &Destination,
        explicit: Option<Format>,
    ) -> Result<Format, UnknownFormat> {
        let path = match (explicit, output) {
            (Some(format), _) => return Ok(format),
            (None, Destination::Stdout) => return Ok(Format::Svg),
            (None, Destination::File(path)) => path,
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        EXTENSIONS
            .iter()
            .find(|(_, ends)| ends.iter().any(|end| name.ends_with(end)))
            .map(|&(format, _)| format)
            .ok_or_else(|| UnknownFormat(path.clone()))
    }
}

/// The file name endings each format is recognised by (`-o` without
/// `--format`). pprof is gzip-compressed under either name: `go tool
/// pprof`, Parca and Pyroscope read it so, and it is what pprof itself
/// names `.pb.gz`.
pub const EXTENSIONS: &[(Format, &[&str])] = &[
    (Format::Svg, &[".svg"]),
    (Format::Folded, &[".folded", ".txt"]),
    (Format::Json, &[".json"]),
    (Format::Pprof, &[".pprof", ".pb.gz"]),
];

/// An `-o` file name whose end names no format, without --format.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot tell the format of {} from its name: use {}, or pass --format",
    .0.display(),
    known_extensions()
)]
pub struct UnknownFormat(pub std::path::PathBuf);

/// `.svg, .folded or .txt, ...`: every format's endings, from [`EXTENSIONS`].
fn known_extensions() -> String {
    EXTENSIONS
        .iter()
        .map(|(_, ends)| ends.join(" or "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--format`'s help: the default, with the endings from [`EXTENSIONS`].
fn format_help() -> String {
    format!(
        "Output format [default: from the end of the file name ({}); svg for -o -]",
        known_extensions()
    )
}

/// What a flame graph's widths count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightArg {
    /// nanoseconds of exact event time: each interval's samples of a
    /// context scaled to the context's measured time
    Time,
    /// stack samples
    Samples,
}

impl From<WeightArg> for Weight {
    fn from(arg: WeightArg) -> Self {
        match arg {
            WeightArg::Time => Weight::Time,
            WeightArg::Samples => Weight::Samples,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    Mmap,
    Ringbuf,
}

impl From<TransportArg> for Transport {
    fn from(arg: TransportArg) -> Self {
        match arg {
            TransportArg::Mmap => Transport::Mmap,
            TransportArg::Ringbuf => Transport::Ringbuf,
        }
    }
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub log: LogArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// How long to sample.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_duration)]
    pub duration: f64,
    /// Where to write: a file, or `-` for standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Destination,
    #[arg(long, value_enum, help = format_help())]
    pub format: Option<Format>,
    /// What flame graph widths count (svg, folded; pprof: the value shown
    /// first). A json recording keeps both.
    #[arg(long, value_enum, default_value_t = WeightArg::Time)]
    pub weight: WeightArg,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["recording", "diff"])))]
pub struct ReportArgs {
    /// A recording written by `netto record --format json`.
    #[arg(value_name = "RECORDING")]
    pub recording: Option<std::path::PathBuf>,
    /// Render a differential flame graph of two recordings.
    #[arg(long, num_args = 2, value_names = ["BEFORE", "AFTER"], conflicts_with = "recording")]
    pub diff: Option<Vec<std::path::PathBuf>>,
    /// Where to write: a file, or `-` for standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Destination,
    #[arg(long, value_enum, help = format_help())]
    pub format: Option<Format>,
    /// What flame graph widths count (svg, folded; pprof: the value shown
    /// first).
    #[arg(long, value_enum, default_value_t = WeightArg::Time)]
    pub weight: WeightArg,
    /// Draw one group of a recording made with --by: its stacks only, in
    /// its own exact time (NAME as the recording's attribution names it:
    /// a cgroup path, a pid, a namespace inode; --cgroup is the same).
    #[arg(long, visible_alias = "cgroup", value_name = "NAME")]
    pub group: Option<String>,
    /// Draw every group of a recording made with --by under a root frame of
    /// its own, in its own exact time (pprof: a `group` label).
    #[arg(long, conflicts_with = "group")]
    pub group_frames: bool,
    /// Overwrite an existing output file.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub reading: ReadingArgs,
}

/// How a command reads a recording (`report`, `--replay`): a file is read
/// whole, so its size is bounded (`netto report /dev/zero` would grow until
/// the OOM killer took it).
#[derive(Debug, Args)]
pub struct ReadingArgs {
    /// Refuse a recording larger than this many bytes (suffixes K, M, G and
    /// T, of 1024: 512M, 2G).
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub max_recording_size: u64,
}

impl ReportArgs {
    /// Whose stacks to draw.
    pub fn scope(&self) -> Scope<'_> {
        match (&self.group, self.group_frames) {
            (Some(name), _) => Scope::Group(name),
            (None, true) => Scope::EachGroup,
            (None, false) => Scope::All,
        }
    }
}

/// Longest history and flame graph window the live views (`top`, `serve`)
/// keep: memory grows with it (one snapshot, stacks included, per interval).
const MAX_HISTORY_S: f64 = 3600.0;

/// Where a live view's snapshots come from: measured now, or a recording
/// played back. Shared by `top` and `serve`, which set their own default
/// sampling frequency.
#[derive(Debug, Args)]
#[command(mut_arg("max_recording_size", |a| a.requires("replay")))]
pub struct SourceArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub log: LogArgs,
    /// Play a recording (from `netto record --format json`) instead of
    /// measuring: no root, no BPF.
    #[arg(long, value_name = "RECORDING", conflicts_with_all = ["MeasureArgs", "SamplingArgs", "verbose"])]
    pub replay: Option<std::path::PathBuf>,
    /// Replay this many times faster than recorded (`inf`: all at once).
    #[arg(long, default_value = "1", value_name = "FACTOR", requires = "replay", allow_negative_numbers = true, value_parser = parse_speed)]
    pub speed: f64,
    #[command(flatten)]
    pub reading: ReadingArgs,
}

#[derive(Debug, Args)]
#[command(mut_arg("frequency", |a| a
    .default_value("499")
    .help("Stack samples per second per CPU at the start (+ and - change it)")))]
pub struct TopArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Seconds of the past the history chart shows.
    #[arg(long, value_name = "SECONDS", default_value = "300", allow_negative_numbers = true, value_parser = parse_window)]
    pub history: f64,
    /// Seconds a flame graph written with `s` covers.
    #[arg(long, value_name = "SECONDS", default_value = "30", allow_negative_numbers = true, value_parser = parse_window)]
    pub flame_seconds: f64,
    /// What the widths of a flame graph written with `s` count.
    #[arg(long, value_enum, default_value_t = WeightArg::Time)]
    pub weight: WeightArg,
}

/// `serve` is the agent left running: it keeps a budget unless told not
/// to, and calibrates the estimates the budget may leave it with.
#[derive(Debug, Args)]
#[command(mut_arg("frequency", |a| a
    .default_value("99")
    .help("Stack samples per second per CPU, for the breakdown and flame graph")))]
#[command(mut_arg("budget", |a| a.default_value("1")))]
#[command(mut_arg("calibrate_every", |a| a.default_value("600")))]
pub struct ServeArgs {
    /// Address and port to listen on: ADDR:PORT (an IP address, or
    /// localhost for 127.0.0.1), or a bare PORT on 127.0.0.1.
    #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT", value_parser = parse_listen)]
    pub listen: std::net::SocketAddr,
    /// Allow a non-loopback --listen address. Everything served is
    /// read-only, but there is no authentication and no TLS.
    #[arg(long)]
    pub allow_remote: bool,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Seconds of history kept for the chart, the history and recording
    /// endpoints and flame graphs (up to an hour; each minute kept costs
    /// memory: see the agent page).
    #[arg(long, default_value = "300", value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_window)]
    pub history: f64,
    /// Another name the server answers to in the Host header, besides
    /// localhost and IP addresses (repeatable), e.g. the name Prometheus
    /// scrapes it by.
    #[arg(long, value_name = "NAME", value_parser = parse_host_name)]
    pub allow_host: Vec<String>,
    /// Serve this long, then stop and exit 0 (default: until stopped).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// Most CPU the HTTP server process may take, in percent of one CPU:
    /// past it, requests that draw something (flame graphs, profiles,
    /// snapshots, history) are answered 429 with Retry-After until serving
    /// is back under it (a live source only: a replay measures nothing).
    /// Each client is also held to a request rate. Serving never takes
    /// from measuring's --budget.
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_SERVE_BUDGET, allow_negative_numbers = true, value_parser = parse_serve_budget)]
    pub serve_budget: f64,
    /// The user the HTTP server process runs as when netto runs as root
    /// [default: a uid and gid of its own, unused by any user, group or
    /// process, picked at start].
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
}

/// What `serve` tells its HTTP server process on the command line: whom
/// to become. The rest comes through the pipe.
/// What the demo child is told by the command that starts it.
#[derive(Debug, Args)]
pub struct DemoTrafficArgs {
    /// Bits per second; absent: as fast as it goes.
    #[arg(long)]
    pub rate: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ServeHttpArgs {
    #[arg(long, requires = "gid")]
    pub uid: Option<u32>,
    #[arg(long, requires = "uid")]
    pub gid: Option<u32>,
}

#[derive(Debug, Args)]
pub struct SketchArgs {
    /// The interface to attach to.
    #[arg(long, value_name = "IFACE")]
    pub iface: String,
    /// Probability with which each row of each packet is updated, in (0, 1].
    #[arg(long, value_name = "P", default_value_t = sketch_config::DEFAULT_PROBABILITY, allow_negative_numbers = true, value_parser = parse_probability)]
    pub probability: f64,
    /// Rows of the Count Sketch (1 to 8).
    #[arg(long, value_name = "R", default_value_t = sketch_config::DEFAULT_ROWS, value_parser = parse_rows)]
    pub rows: u32,
    /// Columns per row: a power of two from 16 to 32768.
    #[arg(long, value_name = "C", default_value_t = sketch_config::DEFAULT_COLUMNS, value_parser = parse_columns)]
    pub columns: u32,
    /// Flows shown per interval.
    #[arg(long, value_name = "K", default_value_t = sketch_config::DEFAULT_TOP, value_parser = parse_top)]
    pub top: usize,
    /// Seconds per interval.
    #[arg(long, default_value = "1", value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_interval)]
    pub interval: f64,
    /// Run this long, then exit 0 (default: until interrupted).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// One JSON object per interval and line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Do not turn on BPF run-time statistics; the sketch's cost is then
    /// not reported.
    #[arg(long)]
    pub no_bpf_stats: bool,
    #[command(flatten)]
    pub log: LogArgs,
}

impl SketchArgs {
    pub fn config(&self) -> SketchConfig {
        SketchConfig {
            probability: self.probability,
            rows: self.rows,
            columns: self.columns,
            top: self.top,
            seed: None,
        }
    }
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (netto-COMMAND(1)); netto(1) without.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

#[derive(Debug, Args)]
pub struct DocsReferenceArgs {
    /// The directory to write into (docs/src/reference in netto's tree);
    /// it must exist, and its pages are replaced.
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the findings as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "DIR", default_value = kubelet::DEFAULT_ROOT, help = KUBELET_LOGS_HELP)]
    pub kubelet_logs: std::path::PathBuf,
    #[command(flatten)]
    pub log: LogArgs,
}

/// Parses the command line of a netto binary. Help and version print and
/// exit 0; bad arguments print `PROGRAM: error: message` (the form of
/// every error netto prints), then clap's tip or the subcommands there
/// are, each on a line of its own, and exit 2.
pub fn parse_or_exit_code<T: Parser>(program: &str) -> Result<T, std::process::ExitCode> {
    T::try_parse().map_err(|e| {
        if e.use_stderr() {
            let mut lines = usage_error_lines::<T>(&e).into_iter();
            eprintln!("{program}: error: {}", lines.next().unwrap_or_default());
            for line in lines {
                eprintln!("  {line}");
            }
            std::process::ExitCode::from(2)
        } else {
            let _ = e.print();
            std::process::ExitCode::SUCCESS
        }
    })
}

/// clap's message, without its usage section: the error first, then its
/// tips and possible values, a line each; for a command that does not
/// exist, the commands that do.
pub fn usage_error_lines<T: clap::CommandFactory>(e: &clap::Error) -> Vec<String> {
    use clap::error::ErrorKind;
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return vec!["missing subcommand or arguments: see --help".to_owned()];
    }
    let rendered = e.render().to_string();
    let mut lines: Vec<String> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(first) = lines.first_mut() {
        *first = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    }
    if e.kind() == ErrorKind::InvalidSubcommand {
        let commands: Vec<String> = T::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_owned())
            .collect();
        lines.push(format!("commands: {}", commands.join(", ")));
    }
    lines
}

fn parse_seconds(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !value.is_finite() || value < min || value > max {
        return Err(format!("must be between {min} and {max} seconds"));
    }
    Ok(value)
}

fn parse_frequency(text: &str) -> Result<u64, String> {
    use crate::kernel::sampler::{MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ};
    let value: u64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a whole number of hertz"))?;
    if !(MIN_FREQUENCY_HZ..=MAX_FREQUENCY_HZ).contains(&value) {
        return Err(format!(
            "must be between {MIN_FREQUENCY_HZ} and {MAX_FREQUENCY_HZ} Hz"
        ));
    }
    Ok(value)
}

/// `off`, or what `number` makes of `text` (its errors say `off` is
/// taken too).
fn or_off(text: &str, number: impl FnOnce(&str) -> Result<f64, String>) -> Result<OrOff, String> {
    if text == "off" {
        return Ok(OrOff(None));
    }
    number(text).map(|n| OrOff(Some(n)))
}

fn parse_budget(text: &str) -> Result<OrOff, String> {
    use crate::model::{MAX_BUDGET_PERCENT, MIN_BUDGET_PERCENT};
    or_off(text, |text| match text.parse::<f64>() {
        Ok(percent) if (MIN_BUDGET_PERCENT..=MAX_BUDGET_PERCENT).contains(&percent) => Ok(percent),
        Ok(_) => Err(format!(
            "must be from {MIN_BUDGET_PERCENT} to {MAX_BUDGET_PERCENT} (percent of one CPU), or off"
        )),
        Err(_) => Err(format!("'{text}' is not a percentage (or off)")),
    })
}

fn parse_calibrate_every(text: &str) -> Result<OrOff, String> {
    or_off(text, |text| {
        parse_seconds(text, MIN_INTERVAL_S, MAX_DURATION_S).map_err(|e| format!("{e} (or off)"))
    })
}

/// `serve --serve-budget`'s default, in percent of one CPU.
pub const DEFAULT_SERVE_BUDGET: f64 = 2.0;

fn parse_serve_budget(text: &str) -> Result<f64, String> {
    use crate::model::{MAX_BUDGET_PERCENT, MIN_BUDGET_PERCENT};
    match text.parse::<f64>() {
        Ok(percent) if (MIN_BUDGET_PERCENT..=MAX_BUDGET_PERCENT).contains(&percent) => Ok(percent),
        Ok(_) => Err(format!(
            "must be from {MIN_BUDGET_PERCENT} to {MAX_BUDGET_PERCENT} (percent of one CPU)"
        )),
        Err(_) => Err(format!("'{text}' is not a percentage")),
    }
}

/// `--listen`: ADDR:PORT with an IP address or `localhost`, or a bare
/// port on 127.0.0.1. No other name: which address it would resolve to
/// is the resolver's choice, and netto says exactly where it listens.
fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{Ipv4Addr, SocketAddr};
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    let port = |digits: &str| {
        digits
            .parse::<u16>()
            .map_err(|_| format!("'{digits}' is not a port (0 to 65535)"))
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(text)?)));
    }
    match text.rsplit_once(':') {
        Some((host, digits)) if host.eq_ignore_ascii_case("localhost") => {
            Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(digits)?)))
        }
        _ => Err(format!(
            "'{text}' is not ADDR:PORT (an IP address or localhost, and a port) or a PORT"
        )),
    }
}

fn parse_host_name(text: &str) -> Result<String, String> {
    if crate::frontends::web::host_header::is_host_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!("'{text}' is not a host name"))
    }
}

/// Replay speeds: beyond the fastest, every pause is shorter than drawing
/// a frame, so `inf` (all at once) says what is meant; below the slowest,
/// one interval would outlast any session (and a pause must fit a
/// `Duration`).
pub const MIN_SPEED: f64 = 0.001;
pub const MAX_SPEED: f64 = 1000.0;

fn parse_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(speed) if speed == f64::INFINITY || (MIN_SPEED..=MAX_SPEED).contains(&speed) => {
            Ok(speed)
        }
        _ => Err(format!(
            "'{text}' is not a speed factor ({MIN_SPEED} to {MAX_SPEED}, or inf)"
        )),
    }
}

fn parse_probability(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a probability"))?;
    sketch_config::Sampling::new(value).map_err(|e| e.to_string())?;
    Ok(value)
}

fn parse_count(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a whole number"))
}

fn parse_rows(text: &str) -> Result<u32, String> {
    sketch_config::check_rows(parse_count(text)?).map_err(|e| e.to_string())
}

fn parse_columns(text: &str) -> Result<u32, String> {
    sketch_config::check_columns(parse_count(text)?).map_err(|e| e.to_string())
}

/// More flows than fit a terminal is a typo.
const MAX_TOP: usize = 1000;

fn parse_top(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(k) if (1..=MAX_TOP).contains(&k) => Ok(k),
        _ => Err(format!("must be a whole number from 1 to {MAX_TOP}")),
    }
}

fn parse_interval(text: &str) -> Result<f64, String> {
    parse_seconds(text, MIN_INTERVAL_S, MAX_INTERVAL_S)
}

fn parse_window(text: &str) -> Result<f64, String> {
    parse_seconds(text, 1.0, MAX_HISTORY_S)
}

/// The units a size may be given in.
const SIZE_UNITS: [(&str, u64); 5] = [
    ("", 1),
    ("K", 1 << 10),
    ("M", 1 << 20),
    ("G", 1 << 30),
    ("T", 1 << 40),
];

fn parse_size(text: &str) -> Result<u64, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let unit = unit
        .strip_suffix("iB")
        .filter(|u| !u.is_empty())
        .unwrap_or(unit);
    let scale = SIZE_UNITS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(unit))
        .map(|&(_, scale)| scale);
    match (digits.parse::<u64>(), scale) {
        (Ok(n), Some(scale)) if n > 0 => n
            .checked_mul(scale)
            .ok_or_else(|| format!("'{text}' is more bytes than 2^64")),
        _ => Err(format!(
            "'{text}' is not a size in bytes (a whole number above 0, optionally with K, M, G or T)"
        )),
    }
}

/// Bits per second (`--demo-rate`): a number with k, M or G (powers of
/// 1000, as network rates go), or `max`.
fn parse_rate(text: &str) -> Result<Rate, String> {
    const MIN: f64 = 1e6;
    const MAX: f64 = 1e12;
    if text == "max" {
        return Ok(Rate(None));
    }
    let (number, scale) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 1e3),
        Some((at, 'M')) => (&text[..at], 1e6),
        Some((at, 'G')) => (&text[..at], 1e9),
        _ => (text, 1.0),
    };
    match number.parse::<f64>().map(|n| n * scale) {
        Ok(bits) if (MIN..=MAX).contains(&bits) => Ok(Rate(Some(bits as u64))),
        Ok(_) => Err("must be from 1M to 1000G bits per second, or max".to_owned()),
        Err(_) => Err(format!(
            "'{text}' is not a rate (bits per second with k, M or G, such as 500M), or max"
        )),
    }
}

fn parse_duration(text: &str) -> Result<f64, String> {
    let value = parse_seconds(text, 0.0, MAX_DURATION_S)?;
    if value == 0.0 {
        return Err(format!(
            "must be between 0 and {MAX_DURATION_S} seconds, exclusive of 0"
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
