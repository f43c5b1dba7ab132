//! The live source: loads netto's BPF programs, then turns every interval
//! into a [`Snapshot`] with its symbolized stacks and breakdown.
//!
//! Everything that touches BPF lives on one thread, because libbpf objects
//! are tied to the thread that loads them; the front end talks to it only
//! through channels. Start-up runs in three steps, the same for every
//! command, so each says the same things in the same order: `Opened`
//! (privileges, backend, statistics), `Extras` (the sampler, kernel
//! symbols, the demo traffic, the co-hosted sketch), then `Measure`, the
//! interval loop, which replaces the sampler when the frequency changes.

use std::mem::MaybeUninit;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use libbpf_rs::OpenObject;

use super::budget::{Budget, Knob};
use super::calibration_intervals::CalibrationIntervals;
use super::duty::DutyCycle;
use super::intervals::Intervals;
use super::{Control, Origin, Source, SourceInfo};
use crate::breakdown::fold::Folder;
use crate::breakdown::{breakdowns, leave_out_softirq_loop};
use crate::collect::cost::HookRuns;
use crate::collect::estimate::{estimate_unmeasured, Calibrator, ESTIMATE_HZ};
use crate::collect::{attribution, Beside, Collector};
use crate::kernel::accounting::Accounting;
use crate::kernel::attribution::Points;
use crate::kernel::backend::BackendChoice;
use crate::kernel::features::Features;
use crate::kernel::sampler::{
    Sampler, SamplerConfig, SamplerCounters, Transport, MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ,
    WRITER_WAIT,
};
use crate::kernel::selection;
use crate::kernel::stats::RunStats;
use crate::model::{percent, EventKey, ProgramCost, SamplingStats, SketchSnapshot, Snapshot, Tier};
use crate::sketch::{Host, SketchConfig};
use crate::symbols::symbolizer::Symbolizer;
use crate::workload::demo::DemoProcess;

/// How often samples are moved out of the kernel buffer; the buffer is
/// sized for it.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
pub struct StackSampling {
    pub frequency_hz: u64,
    pub transport: Transport,
}

/// The built-in demo traffic: never, always, or only when the host's network
/// is idle (so a newcomer sees real numbers, and a busy host is left alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoWhen {
    Off,
    On,
    IfIdle,
}

/// How long start-up watches the host before deciding it is idle, and
/// below what share of one CPU its network events count as idle.
const IDLE_PROBE: Duration = Duration::from_millis(500);
const IDLE_PERCENT: f64 = 1.0;

#[derive(Debug, Clone)]
pub struct LiveConfig {
    pub backend: BackendChoice,
    /// Turn on BPF run-time statistics for a slice of every interval,
    /// which the BPF part of netto's cost figures needs.
    pub bpf_stats: bool,
    pub interval: Duration,
    /// End by itself after this long, with a last, shorter snapshot.
    pub duration: Option<Duration>,
    /// Sample kernel stacks; `None` measures the exact events only.
    pub sampling: Option<StackSampling>,
    /// Whether to run the built-in demo traffic (a child process).
    pub demo: DemoWhen,
    /// On [`Control::Stop`], deliver the interval in progress too, so a
    /// recording keeps every sample taken before Ctrl-C.
    pub flush_on_stop: bool,
    /// Co-host the XDP sketch on this interface: its flows and its cost go
    /// into every snapshot, its frames into the breakdown.
    pub xdp_sketch: Option<(String, SketchConfig)>,
    /// Attribute every event's time to groups (`--by`); `None`: not loaded.
    pub attribution: Option<attribution::Config>,
    /// Keep netto's whole cost under this percentage of one CPU by turning
    /// the sampling frequency down ([`super::budget`]); `None`: no budget.
    pub budget: Option<f64>,
    /// The tier to start in; any but `exact` needs `sampling`, whose
    /// samples its estimates come from.
    pub tier: Tier,
    /// In a tier that estimates, measure one interval exactly whenever
    /// none has for this many seconds ([`CalibrationIntervals`]); `None`:
    /// never.
    pub calibrate_every_s: Option<f64>,
}

/// Loads and attaches everything, then returns once the first interval has
/// begun; errors in start-up (privileges, missing kernel features) come
/// back here rather than on the stream.
pub fn start(config: LiveConfig) -> Result<Source> {
    if config.tier != Tier::Exact && config.sampling.is_none() {
        anyhow::bail!(
            "the {} tier estimates from stack samples: it needs sampling",
            config.tier.name()
        );
    }
    let (ready_tx, ready_rx) = mpsc::sync_channel(1);
    let (control_tx, control_rx) = mpsc::channel();
    let (snapshot_tx, snapshot_rx) = mpsc::channel();
    let thread = thread::Builder::new()
        .name("netto-live".into())
        .spawn(move || run(&config, &ready_tx, &control_rx, &snapshot_tx))
        .context("starting the measuring thread")?;
    let info = match ready_rx.recv() {
        Ok(Ok(info)) => info,
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => {
            return Err(match thread.join() {
                Ok(Err(e)) => e,
                _ => anyhow::anyhow!("the measuring thread ended during start-up"),
            })
        }
    };
    Ok(Source {
        info,
        snapshots: snapshot_rx,
        control: control_tx,
        thread: Some(thread),
    })
}

/// The measuring thread: start-up in three steps, then the interval loop.
/// Every start-up failure goes to `start()`, which is waiting for it.
fn run(
    config: &LiveConfig,
    ready: &SyncSender<Result<SourceInfo>>,
    control: &Receiver<Control>,
    out: &Sender<Snapshot>,
) -> Result<()> {
    let mut accounting_storage = selection::Storage::default();
    let mut sampler_storage = MaybeUninit::uninit();
    let mut sketch_storage = MaybeUninit::uninit();
    let mut points_storage = MaybeUninit::uninit();
    let Some(mut opened) = started(ready, Opened::open(config, &mut accounting_storage)) else {
        return Ok(());
    };
    let extras = Extras::start(
        config,
        &opened.accounting,
        &mut sampler_storage,
        &mut sketch_storage,
        &mut points_storage,
    );
    let Some(extras) = started(ready, extras) else {
        return Ok(());
    };
    let Extras {
        sampler,
        symbolizer,
        sketch,
        points,
        demo: _demo,
        mut notes,
    } = extras;
    let measure = Measure::start(
        config,
        &opened.accounting,
        opened.duty.take(),
        symbolizer,
        sketch,
        control,
        out,
    );
    let Some(mut measure) = started(ready, measure) else {
        return Ok(());
    };
    let attributing = measure.attribute(config, points);
    let Some(attribution_notes) = started(ready, attributing) else {
        return Ok(());
    };
    notes.extend(attribution_notes);
    if started(ready, measure.switch_tier(sampler.as_ref())).is_none() {
        return Ok(());
    }
    if ready.send(Ok(opened.info(config, notes))).is_err() {
        return Ok(());
    }
    measure.run(&opened.accounting, config, sampler)
}

/// A start-up step's value; its failure is handed to `start()` instead.
fn started<T>(ready: &SyncSender<Result<SourceInfo>>, step: Result<T>) -> Option<T> {
    step.map_err(|e| {
        let _ = ready.send(Err(e));
    })
    .ok()
}

/// Start-up step 1: the accounting, loaded, self-checked and attached
/// (privileges and backend, see [`selection::select`]), and BPF run-time
/// statistics as asked, held a slice of each interval ([`DutyCycle`]).
struct Opened<'obj> {
    accounting: Accounting<'obj>,
    duty: Option<DutyCycle>,
    notes: Vec<String>,
}

impl<'obj> Opened<'obj> {
    fn open(config: &LiveConfig, storage: &'obj mut selection::Storage) -> Result<Self> {
        let selection = selection::select(config.backend, &Features::detect(), storage)?;
        let mut notes = selection.notes;
        let duty = match config.bpf_stats.then(|| DutyCycle::new(config.interval)) {
            Some(Ok(duty)) => Some(duty),
            Some(Err(e)) => {
                notes.push(format!(
                    "note: BPF run-time statistics unavailable ({e}); program costs not reported"
                ));
                None
            }
            None => None,
        };
        notes.extend(selection.accounting.limits());
        Ok(Opened {
            accounting: selection.accounting,
            duty,
            notes,
        })
    }

    /// What the front end shows about this run, with what the later steps
    /// have to say.
    fn info(&self, config: &LiveConfig, later_notes: Vec<String>) -> SourceInfo {
        let mut notes = self.notes.clone();
        notes.extend(later_notes);
        notes.extend(config.budget.map(|percent| budget_note(config, percent)));
        notes.extend(calibration_note(config));
        let attached = self.accounting.attached().len();
        notes.push(match (self.accounting.tier(), config.sampling) {
            (Tier::Exact, _) | (_, None) => format!("measuring ({attached} BPF programs attached)"),
            (tier, Some(sampling)) => format!(
                "measuring in the {} tier ({attached} accounting programs attached): {} \
                 estimated from stack samples at {} Hz, each with its error",
                tier.name(),
                if tier == Tier::Softirq {
                    "socket calls"
                } else {
                    "every event"
                },
                sampling.frequency_hz
            ),
        });
        SourceInfo {
            host: read_trimmed("/proc/sys/kernel/hostname"),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            backend: self.accounting.backend().name().to_owned(),
            frequency_hz: config.sampling.map(|s| s.frequency_hz),
            origin: Origin::Live,
            notes,
        }
    }
}

/// Start-up step 2: what runs beside the accounting, each only if asked
/// for.
struct Extras<'obj> {
    /// The first sampler: later ones replace it when the frequency changes.
    sampler: Option<Sampler<'obj>>,
    symbolizer: Option<Symbolizer>,
    demo: Option<DemoProcess>,
    sketch: Option<Host<'obj>>,
    /// Attribution's delivery points, loaded with `--by` (not attached yet).
    points: Option<Points<'obj>>,
    notes: Vec<String>,
}

impl<'obj> Extras<'obj> {
    fn start(
        config: &LiveConfig,
        accounting: &Accounting<'_>,
        sampler_storage: &'obj mut MaybeUninit<OpenObject>,
        sketch_storage: &'obj mut MaybeUninit<OpenObject>,
        points_storage: &'obj mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        let sampler = config
            .sampling
            .map(|s| load_sampler(sampler_storage, accounting, config, s.frequency_hz))
            .transpose()?;
        // After netto's own programs are loaded, so their JIT-ed symbols
        // are in the table and do not force a reload.
        let symbolizer = sampler
            .is_some()
            .then(Symbolizer::load)
            .transpose()
            .context("reading kernel symbols")?;
        let mut notes = Vec::new();
        let demo = start_demo(config.demo, accounting)?;
        notes.extend(demo.as_ref().map(|demo| demo.describe().to_owned()));
        let sketch = match &config.xdp_sketch {
            Some((iface, sketch_config)) => {
                let host = Host::attach(iface, sketch_config, sketch_storage)?;
                notes.push(format!(
                    "XDP sketch on {iface} ({} XDP), p={}, {}x{}",
                    host.mode().name(),
                    host.probability(),
                    sketch_config.rows,
                    sketch_config.columns
                ));
                Some(host)
            }
            None => None,
        };
        let points = config
            .attribution
            .map(|_| Points::load(points_storage, accounting))
            .transpose()?;
        notes.extend(points.iter().flat_map(Points::limits));
        Ok(Extras {
            sampler,
            symbolizer,
            demo,
            sketch,
            points,
            notes,
        })
    }
}

fn load_sampler<'obj>(
    storage: &'obj mut MaybeUninit<OpenObject>,
    accounting: &Accounting<'_>,
    config: &LiveConfig,
    frequency_hz: u64,
) -> Result<Sampler<'obj>> {
    let transport = config.sampling.map_or(Transport::Mmap, |s| s.transport);
    Ok(Sampler::load(
        storage,
        accounting,
        SamplerConfig {
            frequency_hz,
            transport,
            drain_period: DRAIN_PERIOD,
            slots_per_half: None,
            writer_wait: WRITER_WAIT,
            tier: accounting.tier(),
        },
    )?)
}

fn start_demo(demo: DemoWhen, accounting: &Accounting<'_>) -> Result<Option<DemoProcess>> {
    let wanted = match demo {
        DemoWhen::Off => false,
        DemoWhen::On => true,
        DemoWhen::IfIdle => network_idle(accounting)?,
    };
    if !wanted {
        return Ok(None);
    }
    DemoProcess::start()
        .context("starting the demo traffic")
        .map(Some)
}

/// Whether the host's network events stay under [`IDLE_PERCENT`] of one
/// CPU for [`IDLE_PROBE`].
fn network_idle(accounting: &Accounting<'_>) -> Result<bool> {
    let mut probe = Collector::start(accounting, false)?;
    thread::sleep(IDLE_PROBE);
    let snapshot = probe.collect(Beside::default())?;
    let busy_ns = [
        EventKey::NetRxSoftirq,
        EventKey::NetTxSoftirq,
        EventKey::SockSend,
        EventKey::SockRecv,
    ]
    .into_iter()
    .map(|key| snapshot.event(key).total_ns)
    .sum();
    Ok(percent(busy_ns, snapshot.interval_s) < IDLE_PERCENT)
}

/// What the budget will do in this run, and what it cannot see.
fn budget_note(config: &LiveConfig, percent: f64) -> String {
    let tiers = match config.tier.lower() {
        Some(_) => format!(
            ", then the tier from {} down to sampled (estimates from stack samples at {ESTIMATE_HZ} Hz or more)",
            config.tier.name()
        ),
        None => String::new(),
    };
    let knob = match (config.sampling, config.attribution.is_some()) {
        (Some(s), false) => format!(
            "sampling steps down from {} Hz when over it{tiers}",
            s.frequency_hz
        ),
        (Some(s), true) => format!(
            "sampling steps down from {} Hz when over it, then attribution turns off{tiers}",
            s.frequency_hz
        ),
        (None, true) => "attribution turns off when over it".to_owned(),
        (None, false) => "nothing to turn down without sampling; said when over it".to_owned(),
    };
    let blind = if config.bpf_stats {
        ""
    } else {
        " (BPF statistics off: it sees netto's processes only)"
    };
    format!("budget {percent} % of one CPU: {knob}{blind}")
}

/// What `--calibrate-every` will do in this run: nothing in a run that
/// stays exact, or that cannot estimate.
fn calibration_note(config: &LiveConfig) -> Option<String> {
    let every = config.calibrate_every_s?;
    let may_estimate = config.tier != Tier::Exact || config.budget.is_some();
    (may_estimate && config.sampling.is_some()).then(|| {
        format!(
            "calibrating: in a tier that estimates, one interval measures every event exactly \
             whenever none has for {every} s (that interval costs the exact tier's)"
        )
    })
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Why [`Measure::intervals`] returned.
enum Next {
    Done,
    Frequency(u64),
}

/// What a wait ended with.
enum Wake {
    Due,
    Stop,
    Frequency(u64),
    Attribution(bool),
    Tier(Tier),
}

/// Start-up step 3 and the run: the interval loop, kept across sampler
/// replacements.
struct Measure<'c, 'a, 'obj> {
    collector: Collector<'a, 'obj>,
    accounting: &'a Accounting<'obj>,
    /// Attribution's delivery points (with `--by`).
    points: Option<Points<'a>>,
    symbolizer: Option<Symbolizer>,
    folder: Folder,
    control: &'c Receiver<Control>,
    out: &'c Sender<Snapshot>,
    intervals: Intervals,
    flush_on_stop: bool,
    /// Sampler counters when the interval began (zero for a sampler that
    /// replaced another during it).
    base: SamplerCounters,
    /// What samplers replaced during this interval counted in it.
    retired: SamplerCounters,
    sketch: Option<Host<'obj>>,
    /// BPF run-time statistics for a slice of each interval; `None`
    /// without them (`--no-bpf-stats`, or not allowed).
    duty: Option<DutyCycle>,
    budget: Option<Budget>,
    /// What turns when the interval in progress ends: the budget's step,
    /// or a front end's frequency in a tier that estimates (an interval's
    /// estimates are priced at one sampling frequency).
    next_knob: Option<Knob>,
    /// The tier asked for, put in force when the interval in progress
    /// ends, so that every interval is wholly in one tier.
    next_tier: Option<Tier>,
    /// Each event's agreement where measured, for its estimates.
    calibrator: Calibrator,
    /// When to measure one interval exactly (`--calibrate-every`).
    calibration_intervals: Option<CalibrationIntervals>,
    /// While a calibration interval runs: the tier to go back to.
    calibrating: Option<Tier>,
}

impl<'c, 'a, 'obj> Measure<'c, 'a, 'obj> {
    /// Starts the first interval now.
    fn start(
        config: &LiveConfig,
        accounting: &'a Accounting<'obj>,
        mut duty: Option<DutyCycle>,
        symbolizer: Option<Symbolizer>,
        sketch: Option<Host<'obj>>,
        control: &'c Receiver<Control>,
        out: &'c Sender<Snapshot>,
    ) -> Result<Self> {
        let collector = Collector::start(accounting, duty.is_some())?;
        if let Some(duty) = duty.as_mut() {
            duty.begin_interval();
        }
        Ok(Measure {
            collector,
            accounting,
            points: None,
            symbolizer,
            folder: Folder::new(),
            control,
            out,
            intervals: Intervals::new(Instant::now(), config.interval, config.duration),
            flush_on_stop: config.flush_on_stop,
            base: SamplerCounters::default(),
            retired: SamplerCounters::default(),
            sketch,
            duty,
            budget: config.budget.map(|percent| {
                let asked_hz = config.sampling.map(|s| s.frequency_hz);
                let sketch = config.xdp_sketch.as_ref().map(|(_, c)| c.probability);
                Budget::new(percent, asked_hz, config.attribution.is_some(), config.tier)
                    .with_sketch(sketch)
            }),
            next_knob: None,
            next_tier: (config.tier != Tier::Exact).then_some(config.tier),
            calibrator: Calibrator::default(),
            calibration_intervals: config.calibrate_every_s.map(CalibrationIntervals::new),
            calibrating: None,
        })
    }

    /// Delivers snapshots until the run ends, starting with `first` as the
    /// sampler and replacing it whenever the frequency changes (its buffer
    /// is sized for the frequency); the interval goes on meanwhile.
    fn run(
        &mut self,
        accounting: &Accounting<'_>,
        config: &LiveConfig,
        mut first: Option<Sampler<'_>>,
    ) -> Result<()> {
        if let Some(sampler) = first.as_mut() {
            self.sample_from_now(sampler)?;
        }
        let mut frequency = None;
        loop {
            let mut storage = MaybeUninit::uninit();
            let mut sampler = match frequency.take() {
                Some(hz) => Some(load_sampler(&mut storage, accounting, config, hz)?),
                None => first.take(),
            };
            match self.intervals(sampler.as_mut())? {
                Next::Done => return Ok(()),
                Next::Frequency(hz) => frequency = Some(hz),
            }
        }
    }

    /// Leaves out what the sampler took before the first interval began
    /// (while kernel symbols, the demo and the sketch were loading): those
    /// samples and drops fall in no interval, and counted in the first one
    /// they had it read up to 1.5 times its exact time.
    fn sample_from_now(&mut self, sampler: &mut Sampler<'_>) -> Result<()> {
        sampler.drain(|_| {})?;
        self.base = sampler.counters();
        Ok(())
    }

    /// Delivers snapshots until the run ends or the frequency changes.
    fn intervals(&mut self, mut sampler: Option<&mut Sampler<'_>>) -> Result<Next> {
        loop {
            let due = self.intervals.due();
            let wake_at = match sampler {
                Some(_) => due.min(Instant::now() + DRAIN_PERIOD),
                None => due,
            };
            let slice_end = self.duty.as_ref().and_then(DutyCycle::slice_end);
            let wake = self.wait(slice_end.map_or(wake_at, |end| wake_at.min(end)));
            if let Some(duty) = self.duty.as_mut() {
                duty.poll(Instant::now());
            }
            if let Some(sampler) = sampler.as_deref_mut() {
                let folder = &mut self.folder;
                sampler.follow_cpus()?;
                sampler.drain(|s| folder.add(s.cpu, s.context, s.group, s.frames))?;
            }
            let now = Instant::now();
            match wake {
                Wake::Frequency(hz)
                    if self.accounting.tier() != Tier::Exact || self.calibrating.is_some() =>
                {
                    self.next_knob = Some(Knob::Frequency(hz));
                }
                Wake::Frequency(hz) => {
                    if let Some(next) = self.replace_sampler(sampler.as_deref(), hz) {
                        return Ok(next);
                    }
                }
                Wake::Attribution(on) => self.switch_attribution(on)?,
                Wake::Tier(tier) => self.next_tier = Some(tier),
                Wake::Stop => {
                    if self.flush_on_stop {
                        self.deliver(sampler.as_deref(), true)?;
                    }
                    return Ok(Next::Done);
                }
                Wake::Due if now >= due => {
                    let last = self.intervals.ended(now);
                    if !self.deliver(sampler.as_deref(), last)? || last {
                        return Ok(Next::Done);
                    }
                    self.intervals.advance(now);
                    if let Some(back) = self.calibrating.take() {
                        // Unless a front end asked for a tier meanwhile.
                        self.next_tier.get_or_insert(back);
                    }
                    self.switch_tier(sampler.as_deref())?;
                    self.calibrate_if_due(sampler.as_deref())?;
                    match self.next_knob.take() {
                        Some(Knob::Frequency(hz)) => {
                            if let Some(next) = self.replace_sampler(sampler.as_deref(), hz) {
                                return Ok(next);
                            }
                        }
                        Some(Knob::Attribution(on)) => self.switch_attribution(on)?,
                        Some(Knob::Sketch(probability)) => {
                            if let Some(sketch) = self.sketch.as_mut() {
                                sketch.set_probability(probability)?;
                            }
                        }
                        Some(Knob::Tier(tier, hz)) => {
                            self.next_tier = Some(tier);
                            self.switch_tier(sampler.as_deref())?;
                            if let Some(next) = self.replace_sampler(sampler.as_deref(), hz) {
                                return Ok(next);
                            }
                        }
                        None => {}
                    }
                }
                Wake::Due => {}
            }
        }
    }

    /// Hands the sampler's counts to the interval and asks for one at `hz`,
    /// unless it samples at `hz` already.
    fn replace_sampler(&mut self, sampler: Option<&Sampler<'_>>, hz: u64) -> Option<Next> {
        let sampler = sampler.filter(|s| s.frequency_hz() != hz)?;
        let counters = sampler.counters();
        self.retired = self.retired + (counters - self.base);
        self.base = SamplerCounters::default();
        Some(Next::Frequency(hz))
    }

    /// Sleeps until `deadline` unless told something first. Blocks on the
    /// control channel rather than polling: one wake-up per wait keeps
    /// netto's own CPU time down.
    fn wait(&mut self, deadline: Instant) -> Wake {
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            return match self.control.recv_timeout(timeout) {
                Err(RecvTimeoutError::Timeout) => Wake::Due,
                Err(RecvTimeoutError::Disconnected) | Ok(Control::Stop) => Wake::Stop,
                Ok(Control::SetFrequency(hz)) => {
                    let hz = hz.clamp(MIN_FREQUENCY_HZ, MAX_FREQUENCY_HZ);
                    if let Some(budget) = self.budget.as_mut() {
                        budget.asked(hz);
                    }
                    Wake::Frequency(hz)
                }
                Ok(Control::SetAttribution(on)) => Wake::Attribution(on),
                Ok(Control::SetTier(tier)) => Wake::Tier(tier),
                Ok(Control::OwnProcess(pid)) => {
                    self.collector.own_process(pid);
                    continue;
                }
            };
        }
    }

    /// Attribution as `config` asks (nothing without `--by`): the points
    /// attached, the collector keeping the groups. Returns what the user
    /// should know.
    fn attribute(
        &mut self,
        config: &LiveConfig,
        points: Option<Points<'a>>,
    ) -> Result<Vec<String>> {
        let (Some(attribution), Some(points)) = (config.attribution, points) else {
            return Ok(Vec::new());
        };
        let notes = self.collector.attribute(attribution)?;
        self.points = Some(points);
        self.switch_attribution(true)?;
        Ok(notes)
    }

    /// Attaches or detaches attribution's programs (a request without
    /// `--by` changes nothing); the snapshots say which.
    fn switch_attribution(&mut self, on: bool) -> Result<()> {
        if let Some(points) = self.points.as_mut() {
            points.switch(self.accounting, on)?;
            self.collector.attribution_on(on);
        }
        Ok(())
    }

    /// Puts the tier asked for in force, between two intervals. Only a run
    /// that samples can estimate: without a sampler a lower tier is not
    /// taken. Attribution needs every event exact, so a lower tier turns
    /// it off first (the budget does the same in that order).
    fn switch_tier(&mut self, sampler: Option<&Sampler<'_>>) -> Result<()> {
        let Some(tier) = self.next_tier.take() else {
            return Ok(());
        };
        let Some(sampler) = sampler else {
            return Ok(());
        };
        if tier != Tier::Exact {
            self.switch_attribution(false)?;
        }
        // The sampler trusts only what stays attached: told before the
        // programs go, and after they come back.
        if tier > self.accounting.tier() {
            sampler.set_tier(tier);
            self.accounting.set_tier(tier)?;
        } else {
            self.accounting.set_tier(tier)?;
            sampler.set_tier(tier);
        }
        Ok(())
    }

    /// Makes the next interval a calibration interval if one is due, and
    /// nothing else is to change between these two intervals (a knob's
    /// step waits for the interval after it).
    fn calibrate_if_due(&mut self, sampler: Option<&Sampler<'_>>) -> Result<()> {
        let in_force = self.accounting.tier();
        let due = self
            .calibration_intervals
            .as_ref()
            .is_some_and(|c| c.due(in_force));
        if due && sampler.is_some() && self.next_knob.is_none() {
            self.calibrating = Some(in_force);
            self.next_tier = Some(Tier::Exact);
            self.switch_tier(sampler)?;
        }
        Ok(())
    }

    /// Ends the interval and sends its snapshot; false once nobody listens.
    /// The budget reports on the `last` interval of a run (nothing changes
    /// after it) and on a calibration interval without judging them.
    fn deliver(&mut self, sampler: Option<&Sampler<'_>>, last: bool) -> Result<bool> {
        let mut sketch = self.sketch.as_mut().map(Host::snapshot);
        let counters = sampler.map(Sampler::counters);
        let counted = counters.map(|c| self.retired + (c - self.base));
        let stats_held = self
            .duty
            .as_mut()
            .map_or(Duration::ZERO, |d| d.end_interval(Instant::now()));
        let mut snapshot = self.collector.collect(Beside {
            hooks: beside(counted.as_ref(), sketch.as_ref()),
            stats_held,
        })?;
        if let Some(duty) = self.duty.as_mut() {
            duty.begin_interval();
        }
        if let Some(sketch) = sketch.as_mut() {
            price_sketch(sketch, &snapshot.overhead.programs);
        }
        snapshot.sketch = sketch;
        if let (Some(sampler), Some(symbolizer), Some(counters), Some(counted)) =
            (sampler, self.symbolizer.as_mut(), counters, counted)
        {
            symbolizer.refresh().context("re-reading kernel symbols")?;
            // Named after the interval's attribution was made, as its groups.
            let collector = &self.collector;
            let mut stacks = self
                .folder
                .take(symbolizer, |key| collector.group_name(key));
            let softirq_loop = leave_out_softirq_loop(&mut stacks);
            estimate_unmeasured(&mut snapshot, &stacks, sampler.frequency_hz());
            snapshot.breakdown = breakdowns(&stacks, &snapshot.events, sampler.frequency_hz());
            snapshot.modules = stacks
                .iter()
                .flat_map(|stack| &stack.frames)
                .filter_map(|name| Some((name.clone(), symbolizer.module_of(name)?.to_owned())))
                .collect();
            snapshot.stacks = stacks;
            snapshot.sampling = Some(SamplingStats {
                frequency_hz: sampler.frequency_hz(),
                transport: sampler.transport().name().to_owned(),
                samples: counted.samples,
                dropped: counted.dropped,
                failed_stacks: counted.failed,
                softirq_loop,
                unplaced: self.folder.unplaced(),
                buffer_bytes: sampler.buffer_bytes(),
            });
            snapshot.losses.dropped_halves = counted.dropped_halves;
            snapshot.losses.recursion_misses += counted.recursion_misses;
            self.calibrator.observe(&snapshot);
            self.calibrator.apply(&mut snapshot);
            self.base = counters;
            self.retired = SamplerCounters::default();
        }
        snapshot.calibrating = self.calibrating;
        if let Some(intervals) = self.calibration_intervals.as_mut() {
            intervals.observe(&snapshot);
        }
        if let Some(budget) = self.budget.as_mut() {
            // A calibration interval costs the exact tier's by design.
            snapshot.budget = Some(if last || self.calibrating.is_some() {
                budget.unjudged(&snapshot.overhead)
            } else {
                let (status, knob) = budget.observe(&snapshot);
                // The budget judged a front end's request already (see
                // `Budget::asked`): its own step, if any, wins.
                self.next_knob = knob.or(self.next_knob.take());
                status
            });
        }
        Ok(self.out.send(snapshot).is_ok())
    }
}

/// The sketch program's name in netto's own cost.
const SKETCH_PROGRAM: &str = "netto_sketch";

/// The runs netto's own cost takes from outside the accounting: the
/// sampler's measured runs (its count is in the per-CPU records) and the
/// sketch's (one run per packet).
fn beside(sampler: Option<&SamplerCounters>, sketch: Option<&SketchSnapshot>) -> Vec<HookRuns> {
    let sampler = sampler.map(|counted| HookRuns {
        hook: "sample",
        runs: 0,
        programs: vec![(
            "netto_sample".to_owned(),
            RunStats {
                run_count: counted.measured_runs,
                run_time_ns: counted.measured_ns,
                recursion_misses: 0,
            },
        )],
    });
    let sketch = sketch.map(|sketch| HookRuns {
        hook: "xdp_sketch",
        runs: sketch.packets,
        programs: vec![(
            SKETCH_PROGRAM.to_owned(),
            RunStats {
                run_count: sketch.cost.run_count,
                run_time_ns: sketch.cost.run_time_ns,
                recursion_misses: 0,
            },
        )],
    });
    sampler.into_iter().chain(sketch).collect()
}

/// The sketch's cost as netto's own cost priced it: its statistics cover
/// only the slices they were on.
fn price_sketch(sketch: &mut SketchSnapshot, programs: &[ProgramCost]) {
    if let Some(priced) = programs.iter().find(|p| p.name == SKETCH_PROGRAM) {
        sketch.cost.run_count = priced.run_count;
        sketch.cost.run_time_ns = priced.run_time_ns;
        sketch.cost.cpu_percent = percent(priced.run_time_ns, sketch.interval_s);
    }
}
