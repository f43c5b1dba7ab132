//! The live source: loads netto's BPF programs, then turns every interval
//! into a [`Snapshot`] with its symbolized stacks and breakdown.
//!
//! Everything that touches BPF lives on one thread, because libbpf objects
//! are tied to the thread that loads them; the front end talks to it only
//! through channels. The start-up sequence is the same for every command,
//! so each says the same things in the same order.

use std::mem::MaybeUninit;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::duty::DutyCycle;
use super::{Control, Source, SourceInfo};
use crate::breakdown::breakdowns;
use crate::breakdown::fold::Folder;
use crate::collect::cost::HookRuns;
use crate::collect::{Beside, Collector};
use crate::kernel::accounting::Accounting;
use crate::kernel::backend::{self, BackendChoice};
use crate::kernel::features::Features;
use crate::kernel::sampler::{
    Sampler, SamplerConfig, SamplerCounters, Transport, MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ,
    WRITER_WAIT,
};
use crate::kernel::stats::RunStats;
use crate::kernel::{privileges, KernelError};
use crate::model::{percent, EventKey, ProgramCost, SamplingStats, SketchSnapshot, Snapshot};
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
    /// Turn on BPF run-time statistics for a slice of every interval,
    /// which the BPF part of netto's cost figures needs.
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

fn run(
    config: &LiveConfig,
    ready: &SyncSender<Result<SourceInfo>>,
    control: &Receiver<Control>,
    out: &Sender<Snapshot>,
) -> Result<()> {
    // Start-up errors go to `start()`, which is waiting for them.
    let refuse = |e: anyhow::Error| {
        let _ = ready.send(Err(e));
        Ok(())
    };
    if !privileges::sufficient() {
        return refuse(KernelError::NotPrivileged.into());
    }
    let mut notes = Vec::new();
    let backend = match backend::choose(config.backend, &Features::detect()) {
        Ok(chosen) => {
            notes.extend(chosen.notes);
            chosen.backend
        }
        Err(e) => return refuse(e.into()),
    };
    let duty = if config.bpf_stats {
        match DutyCycle::new(config.interval) {
            Ok(duty) => Some(duty),
            Err(e) => {
                notes.push(format!(
                    "note: BPF run-time statistics unavailable ({e}); program costs not reported"
                ));
                None
            }
        }
    } else {
        None
    };
    let mut duty = Some(duty);
    let mut storage = MaybeUninit::uninit();
    let accounting = match Accounting::load(&mut storage, backend) {
        Ok(accounting) => accounting,
        Err(e) => return refuse(e.into()),
    };
    for group in accounting.skipped() {
        notes.push(format!(
            "note: no {} tracepoints here: {}",
            group.tracepoints.join("/"),
            group.without
        ));
    }
    if !accounting.callbacks_resolved() {
        notes.push(
            "note: kallsyms hides addresses (kernel.kptr_restrict): net_timers stays 0".into(),
        );
    }

    let mut frequency = config.sampling.map(|s| s.frequency_hz);
    let mut measure_slot: Option<Measure<'_, '_, '_>> = None;
    let mut _demo = None;
    let mut sketch = None;
    // One pass per sampler: a frequency change replaces the sampler (its
    // buffer is sized for the frequency) and the interval goes on.
    loop {
        let mut sampler_storage = MaybeUninit::uninit();
        let sampler = frequency
            .map(|hz| load_sampler(&mut sampler_storage, &accounting, config, hz))
            .transpose();
        let mut sampler = match sampler {
            Ok(sampler) => sampler,
            Err(e) if measure_slot.is_some() => return Err(e),
            Err(e) => return refuse(e),
        };
        let measure = match measure_slot {
            Some(ref mut measure) => measure,
            None => {
                // After netto's own programs are loaded, so their JIT-ed
                // symbols are in the table and do not force a reload.
                let symbolizer = match sampler.is_some().then(Symbolizer::load).transpose() {
                    Ok(symbolizer) => symbolizer,
                    Err(e) => {
                        return refuse(anyhow::Error::new(e).context("reading kernel symbols"))
                    }
                };
                match start_demo(config.demo, &accounting) {
                    Ok(Some(demo)) => {
                        notes.push(demo.describe().to_owned());
                        _demo = Some(demo);
                    }
                    Ok(None) => {}
                    Err(e) => return refuse(e),
                }
                if let Some((iface, sketch_config)) = &config.xdp_sketch {
                    match Host::attach(iface, sketch_config) {
                        Ok(host) => {
                            notes.push(format!(
                                "XDP sketch on {iface} ({} XDP), p={}, {}x{}",
                                host.mode().name(),
                                host.probability(),
                                sketch_config.rows,
                                sketch_config.columns
                            ));
                            sketch = Some(host);
                        }
                        Err(e) => return refuse(e.into()),
                    }
                }
                let duty = duty.take().flatten();
                let collector = match Collector::start(&accounting, duty.is_some()) {
                    Ok(collector) => collector,
                    Err(e) => return refuse(e.into()),
                };
                notes.push(format!(
                    "measuring ({} BPF programs attached)",
                    accounting.attached().count()
                ));
                let info = SourceInfo {
                    host: read_trimmed("/proc/sys/kernel/hostname"),
                    kernel: read_trimmed("/proc/sys/kernel/osrelease"),
                    backend: backend.name().to_owned(),
                    frequency_hz: frequency,
                    origin: "live".to_owned(),
                    notes: std::mem::take(&mut notes),
                };
                if ready.send(Ok(info)).is_err() {
                    return Ok(());
                }
                let mut measure = Measure::new(config, collector, symbolizer, control, out);
                measure.sketch = sketch.take();
                measure.duty = duty;
                if let Some(duty) = measure.duty.as_mut() {
                    duty.begin_interval();
                }
                measure_slot.insert(measure)
            }
        };
        match measure.run(sampler.as_mut())? {
            Next::Done => return Ok(()),
            Next::Frequency(hz) => frequency = Some(hz),
        }
    }
}

fn load_sampler<'obj>(
    storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
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

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Why [`Measure::run`] returned.
enum Next {
    Done,
    Frequency(u64),
}

/// What a wait ended with.
enum Wake {
    Due,
    Stop,
    Frequency(u64),
}

/// The interval loop, kept across sampler replacements.
struct Measure<'c, 'a, 'obj> {
    collector: Collector<'a, 'obj>,
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
    /// BPF run-time statistics for a slice of each interval; `None`
    /// without them (`--no-bpf-stats`, or not allowed).
    duty: Option<DutyCycle>,
}

impl<'c, 'a, 'obj> Measure<'c, 'a, 'obj> {
    fn new(
        config: &LiveConfig,
        collector: Collector<'a, 'obj>,
        symbolizer: Option<Symbolizer>,
        control: &'c Receiver<Control>,
        out: &'c Sender<Snapshot>,
    ) -> Self {
        let start = Instant::now();
        Measure {
            collector,
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
            sketch: None,
            duty: None,
        }
    }

    /// Delivers snapshots until the run ends or the frequency changes.
    fn run(&mut self, mut sampler: Option<&mut Sampler<'_>>) -> Result<Next> {
        loop {
            let due = self.start + self.interval * self.tick;
            let due = self.end.map_or(due, |end| due.min(end));
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
    fn wait(&mut self, deadline: Instant) -> Wake {
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            return match self.control.recv_timeout(timeout) {
                Err(RecvTimeoutError::Timeout) => Wake::Due,
                Err(RecvTimeoutError::Disconnected) | Ok(Control::Stop) => Wake::Stop,
                Ok(Control::SetFrequency(hz)) => {
                    Wake::Frequency(hz.clamp(MIN_FREQUENCY_HZ, MAX_FREQUENCY_HZ))
                }
                Ok(Control::OwnProcess(pid)) => {
                    self.collector.own_process(pid);
                    continue;
                }
            };
        }
    }

    /// Ends the interval and sends its snapshot; false once nobody listens.
    fn deliver(&mut self, sampler: Option<&Sampler<'_>>) -> Result<bool> {
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
            let stacks = self.folder.take(symbolizer);
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
