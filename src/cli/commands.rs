//! Each subcommand's own options, beside the measuring ones they flatten in.

use clap::Args;

use super::format::{format_help, Format, WeightArg};
use super::measure::{MeasureArgs, SamplingArgs, KUBELET_LOGS_HELP};
use super::otlp::OtlpArgs;
use super::values::*;
use super::LogArgs;
use crate::collect::groups::kubelet;
use crate::frontends::flame::Scope;
use crate::output_file::Destination;
use crate::sketch::config as sketch_config;
use crate::sketch::SketchConfig;

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
    #[command(flatten)]
    pub otlp: OtlpArgs,
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
    /// The OTLP exporter's settings (JSON), read before the process
    /// confines itself.
    #[arg(long)]
    pub otlp: Option<String>,
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
