//! The live source: loads netto's BPF programs, then turns every interval
//! into a [`Snapshot`] with its symbolized stacks and breakdown.
//!
//! Everything that touches BPF lives on one thread, because libbpf objects
//! are tied to the thread that loads them; the front end talks to it only
//! through channels. Start-up runs in three steps, the same for every
//! command, so each says the same things in the same order: [`Opened`]
//! (privileges, backend, statistics), [`Extras`] (the sampler, kernel
//! symbols, the demo load, the co-hosted sketch), then [`Measure`], the
//! interval loop, which replaces the sampler when the frequency changes.

use std::mem::MaybeUninit;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use libbpf_rs::OpenObject;

use super::{Control, Source, SourceInfo};
use crate::breakdown::breakdowns;
use crate::breakdown::fold::Folder;
use crate::collect::{attribution, Collector};
use crate::kernel::accounting::Accounting;
use crate::kernel::attribution::Points;
use crate::kernel::backend::BackendChoice;
use crate::kernel::features::Features;
use crate::kernel::sampler::{
    Sampler, SamplerConfig, SamplerCounters, Transport, MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ,
    WRITER_WAIT,
};
use crate::kernel::selection;
use crate::kernel::stats::Statistics;
use crate::model::{percent, EventKey, SamplingStats, Snapshot};
use crate::sketch::{Host, SketchConfig};
use crate::symbols::symbolizer::Symbolizer;
use crate::workload::demo::DemoProcess;

/// How often samples are moved out of the kernel buffer; the buffer is
/// sized for it.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    pub frequency_hz: u64,
    pub transport: Transport,
}

/// The built-in demo load: never, always, or only when the host's network
/// is idle (so a newcomer sees real numbers, and a busy host is left alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demo {
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
    /// Turn on BPF run-time statistics, which netto's cost figures need.
    pub bpf_stats: bool,
    pub interval: Duration,
    /// End by itself after this long, with a last, shorter snapshot.
    pub duration: Option<Duration>,
    /// Sample kernel stacks; `None` measures the exact events only.
    pub sampling: Option<Sampling>,
    /// Whether to run the built-in demo load (a child process).
    pub demo: Demo,
    /// On [`Control::Stop`], deliver the interval in progress too, so a
    /// recording keeps every sample taken before Ctrl-C.
    pub flush_on_stop: bool,
    /// Co-host the XDP sketch on this interface: its flows and its cost go
    /// into every snapshot, its frames into the breakdown.
    pub xdp_sketch: Option<(String, SketchConfig)>,
    /// Attribute every event's time to groups (`--by`); `None`: not loaded.
    pub attribution: Option<attribution::Config>,
}

/// Loads and attaches everything, then returns once the first interval has
/// begun; errors in start-up (privileges, missing kernel features) come
/// back here rather than on the stream.
pub fn start(config: LiveConfig) -> Result<Source> {
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
        live: true,
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
    let mut points_storage = MaybeUninit::uninit();
    let Some(opened) = started(ready, Opened::open(config, &mut accounting_storage)) else {
        return Ok(());
    };
    let extras = Extras::start(
        config,
        &opened.accounting,
        &mut sampler_storage,
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
        opened.stats.is_on(),
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
/// statistics as asked.
struct Opened<'obj> {
    accounting: Accounting<'obj>,
    stats: Statistics,
    notes: Vec<String>,
}

impl<'obj> Opened<'obj> {
    fn open(config: &LiveConfig, storage: &'obj mut selection::Storage) -> Result<Self> {
        let selection = selection::select(config.backend, &Features::detect(), storage)?;
        let stats = Statistics::turn_on(config.bpf_stats);
        let mut notes = selection.notes;
        notes.extend(stats.note());
        notes.extend(selection.accounting.limits());
        Ok(Opened {
            accounting: selection.accounting,
            stats,
            notes,
        })
    }

    /// What the front end shows about this run, with what the later steps
    /// have to say.
    fn info(&self, config: &LiveConfig, later_notes: Vec<String>) -> SourceInfo {
        let mut notes = self.notes.clone();
        notes.extend(later_notes);
        notes.push(format!(
            "measuring ({} BPF programs attached)",
            self.accounting.attached().count()
        ));
        SourceInfo {
            host: read_trimmed("/proc/sys/kernel/hostname"),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            backend: self.accounting.backend().name().to_owned(),
            frequency_hz: config.sampling.map(|s| s.frequency_hz),
            origin: "live".to_owned(),
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
    sketch: Option<Host>,
    /// Attribution's delivery points, loaded with `--by` (not attached yet).
    points: Option<Points<'obj>>,
    notes: Vec<String>,
}

impl<'obj> Extras<'obj> {
    fn start(
        config: &LiveConfig,
        accounting: &Accounting<'_>,
        sampler_storage: &'obj mut MaybeUninit<OpenObject>,
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
                let host = Host::attach(iface, sketch_config)?;
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
        },
    )?)
}

fn start_demo(demo: Demo, accounting: &Accounting<'_>) -> Result<Option<DemoProcess>> {
    let wanted = match demo {
        Demo::Off => false,
        Demo::On => true,
        Demo::IfIdle => network_idle(accounting)?,
    };
    if !wanted {
        return Ok(None);
    }
    DemoProcess::start()
        .context("starting the demo load")
        .map(Some)
}

/// Whether the host's network events stay under [`IDLE_PERCENT`] of one
/// CPU for [`IDLE_PROBE`].
fn network_idle(accounting: &Accounting<'_>) -> Result<bool> {
    let mut probe = Collector::start(accounting, false)?;
    thread::sleep(IDLE_PROBE);
    let snapshot = probe.collect()?;
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
    interval: Duration,
    start: Instant,
    tick: u32,
    end: Option<Instant>,
    flush_on_stop: bool,
    /// Sampler counters when the interval began (zero for a sampler that
    /// replaced another during it).
    base: SamplerCounters,
    /// What samplers replaced during this interval counted in it.
    retired: SamplerCounters,
    sketch: Option<Host>,
}

impl<'c, 'a, 'obj> Measure<'c, 'a, 'obj> {
    /// Starts the first interval now.
    fn start(
        config: &LiveConfig,
        accounting: &'a Accounting<'obj>,
        bpf_stats: bool,
        symbolizer: Option<Symbolizer>,
        sketch: Option<Host>,
        control: &'c Receiver<Control>,
        out: &'c Sender<Snapshot>,
    ) -> Result<Self> {
        let collector = Collector::start(accounting, bpf_stats)?;
        let start = Instant::now();
        Ok(Measure {
            collector,
            accounting,
            points: None,
            symbolizer,
            folder: Folder::new(),
            control,
            out,
            interval: config.interval,
            start,
            tick: 1,
            end: config.duration.map(|d| start + d),
            flush_on_stop: config.flush_on_stop,
            base: SamplerCounters::default(),
            retired: SamplerCounters::default(),
            sketch,
        })
    }

    /// Delivers snapshots until the run ends, starting with `first` as the
    /// sampler and replacing it whenever the frequency changes (its buffer
    /// is sized for the frequency); the interval goes on meanwhile.
    fn run(
        &mut self,
        accounting: &Accounting<'_>,
        config: &LiveConfig,
        first: Option<Sampler<'_>>,
    ) -> Result<()> {
        let mut first = first;
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

    /// Delivers snapshots until the run ends or the frequency changes.
    fn intervals(&mut self, mut sampler: Option<&mut Sampler<'_>>) -> Result<Next> {
        loop {
            let due = self.start + self.interval * self.tick;
            let due = self.end.map_or(due, |end| due.min(end));
            let wake_at = match sampler {
                Some(_) => due.min(Instant::now() + DRAIN_PERIOD),
                None => due,
            };
            let wake = self.wait(wake_at);
            if let Some(sampler) = sampler.as_deref_mut() {
                let folder = &mut self.folder;
                sampler.follow_cpus()?;
                sampler.drain(|s| folder.add(s.cpu, s.context, s.frames))?;
            }
            let now = Instant::now();
            let ended = self.end.is_some_and(|end| now >= end);
            match wake {
                Wake::Frequency(hz) => {
                    if let Some(sampler) = sampler.as_deref().filter(|s| s.frequency_hz() != hz) {
                        let counters = sampler.counters();
                        self.retired = self.retired + (counters - self.base);
                        self.base = SamplerCounters::default();
                        return Ok(Next::Frequency(hz));
                    }
                }
                Wake::Attribution(on) => self.switch_attribution(on)?,
                Wake::Stop => {
                    if self.flush_on_stop {
                        self.deliver(sampler.as_deref())?;
                    }
                    return Ok(Next::Done);
                }
                Wake::Due if now >= due => {
                    if !self.deliver(sampler.as_deref())? || ended {
                        return Ok(Next::Done);
                    }
                    // After a stall (a slow sampler swap, a suspended
                    // host) the next interval ends on the next tick still
                    // ahead, not in a burst of near-empty catch-up ones.
                    let elapsed = now.duration_since(self.start).as_secs_f64();
                    let behind = (elapsed / self.interval.as_secs_f64()).floor() as u32 + 1;
                    self.tick = (self.tick + 1).max(behind);
                }
                Wake::Due => {}
            }
        }
    }

    /// Sleeps until `deadline` unless told something first. Blocks on the
    /// control channel rather than polling: one wake-up per wait keeps
    /// netto's own CPU time down.
    fn wait(&self, deadline: Instant) -> Wake {
        let timeout = deadline.saturating_duration_since(Instant::now());
        match self.control.recv_timeout(timeout) {
            Err(RecvTimeoutError::Timeout) => Wake::Due,
            Err(RecvTimeoutError::Disconnected) | Ok(Control::Stop) => Wake::Stop,
            Ok(Control::SetFrequency(hz)) => {
                Wake::Frequency(hz.clamp(MIN_FREQUENCY_HZ, MAX_FREQUENCY_HZ))
            }
            Ok(Control::SetAttribution(on)) => Wake::Attribution(on),
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

    /// Ends the interval and sends its snapshot; false once nobody listens.
    fn deliver(&mut self, sampler: Option<&Sampler<'_>>) -> Result<bool> {
        let mut snapshot = self.collector.collect()?;
        snapshot.sketch = self.sketch.as_mut().map(Host::snapshot);
        if let (Some(sampler), Some(symbolizer)) = (sampler, self.symbolizer.as_mut()) {
            symbolizer.refresh().context("re-reading kernel symbols")?;
            let stacks = self.folder.take(symbolizer);
            let counters = sampler.counters();
            let counted = self.retired + (counters - self.base);
            snapshot.breakdown = breakdowns(&stacks, &snapshot.events);
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
                buffer_bytes: sampler.buffer_bytes(),
            });
            snapshot.losses.dropped_halves = counted.dropped_halves;
            snapshot.losses.recursion_misses += counted.recursion_misses;
            self.base = counters;
            self.retired = SamplerCounters::default();
        }
        Ok(self.out.send(snapshot).is_ok())
    }
}
