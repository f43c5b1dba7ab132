//! How every measuring command (stat, record, top, serve) measures: the
//! options they share, turned into the live configuration in one place.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::values::{
    parse_budget, parse_calibrate_every, parse_frequency, parse_interval, parse_probability,
    parse_rate, OrOff, Rate,
};
use crate::collect::attribution::{Config as AttributionConfig, DEFAULT_MAX_GROUPS};
use crate::collect::estimate::ESTIMATE_HZ;
use crate::collect::groups::kubelet;
use crate::kernel::backend::BackendChoice;
use crate::kernel::sampler::Transport;
use crate::model::{GroupBy, Tier};
use crate::sketch::config as sketch_config;
use crate::sketch::SketchConfig;
use crate::source::live::{LiveConfig, StackSampling};

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
    /// socket's owner, or the device's namespace for forwarded traffic),
    /// or to the connection (flow) or service port it was for, with bytes
    /// and ns per KiB.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub by: Option<GroupByArg>,
    /// Groups shown with --by; the lighter ones are folded into `other`.
    #[arg(long, value_name = "N", requires = "by", default_value_t = DEFAULT_MAX_GROUPS, value_parser = parse_max_groups)]
    pub max_groups: usize,
    #[arg(long, value_name = "DIR", default_value = kubelet::DEFAULT_ROOT, help = KUBELET_LOGS_HELP)]
    pub kubelet_logs: std::path::PathBuf,
    /// Keep what measuring costs (netto's measuring process and its BPF
    /// programs; not serve's HTTP server, which --serve-budget bounds) under
    /// this percentage of one CPU by turning knobs down: the sampling
    /// frequency, attribution (--by), the XDP sketch's probability
    /// (--xdp-sketch) and (when sampling) the tier, each time the one whose
    /// measured cost saves the most (without BPF statistics, in that
    /// order), and back when there is room; `off`: no budget. Estimates are
    /// marked with their errors; when every knob is at its floor, netto
    /// says so.
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
    /// stood against it; that interval costs what the exact tier costs,
    /// and under --budget it waits until the average cost since start has
    /// room for it. `off`: never (estimates stay raw).
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
pub(super) const KUBELET_LOGS_HELP: &str =
    "The kubelet's log directory: its containers/ links (and pods/ \
     directories, where there) name the pods and containers of cgroups (--by cgroup) without the \
     API server. In a pod, where the node's are mounted";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GroupByArg {
    Process,
    Cgroup,
    Netns,
    Flow,
    Port,
}

impl From<GroupByArg> for GroupBy {
    fn from(arg: GroupByArg) -> Self {
        match arg {
            GroupByArg::Process => GroupBy::Process,
            GroupByArg::Cgroup => GroupBy::Cgroup,
            GroupByArg::Netns => GroupBy::Netns,
            GroupByArg::Flow => GroupBy::Flow,
            GroupByArg::Port => GroupBy::Port,
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
