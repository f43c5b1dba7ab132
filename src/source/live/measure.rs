//! The interval loop of a live run: waits for the end of each interval
//! (or a request), drains the sampler, and delivers the interval's
//! snapshot; between two intervals it puts in force what
//! [`Changes`] decided, retuning the sampler when the frequency changes
//! (replacing it only above what its buffer holds).

use std::mem::MaybeUninit;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::changes::{sampler_first, Changes};
use super::own_cost::{beside, price_sketch};
use super::startup::load_sampler;
use super::{LiveConfig, DRAIN_PERIOD};
use crate::breakdown::fold::Folder;
use crate::breakdown::{breakdowns, leave_out_softirq_loop};
use crate::collect::calibrate::Calibrator;
use crate::collect::estimate::estimate_unmeasured;
use crate::collect::groups::conns::join_heavy_hitters;
use crate::collect::network_programs::share;
use crate::collect::{Beside, Collector};
use crate::kernel::accounting::Accounting;
use crate::kernel::attribution::Points;
use crate::kernel::dispatch::Dispatch;
use crate::kernel::sampler::{Sampler, SamplerCounters, MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ};
use crate::model::{SamplingStats, Snapshot, Tier};
use crate::sketch::Cohosted;
use crate::source::budget::{Budget, Knob};
use crate::source::calibration_intervals::CalibrationIntervals;
use crate::source::duty::DutyCycle;
use crate::source::intervals::Intervals;
use crate::source::notes::Note;
use crate::source::Control;
use crate::symbols::symbolizer::Symbolizer;

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
pub(super) struct Measure<'c, 'a, 'obj> {
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
    sketch: Option<Cohosted<'obj>>,
    /// BPF run-time statistics for a slice of each interval; `None`
    /// without them (`--no-bpf-stats`, or not allowed).
    duty: Option<DutyCycle>,
    budget: Option<Budget>,
    changes: Changes,
    /// The estimating tiers' calibrations, from calibration intervals.
    calibrator: Calibrator,
    /// When to measure one interval exactly (`--calibrate-every`).
    calibration_intervals: Option<CalibrationIntervals>,
}

impl<'c, 'a, 'obj> Measure<'c, 'a, 'obj> {
    /// Starts the first interval now; the CPU time spent so far counts in
    /// it.
    pub fn start(
        config: &LiveConfig,
        accounting: &'a Accounting<'obj>,
        mut duty: Option<DutyCycle>,
        symbolizer: Option<Symbolizer>,
        sketch: Option<Cohosted<'obj>>,
        control: &'c Receiver<Control>,
        out: &'c Sender<Snapshot>,
    ) -> Result<Self> {
        // The first reading of the host's programs (a walk of the cgroup
        // tree) is start-up, not the first interval's: it comes first.
        if let Some(duty) = duty.as_mut() {
            duty.watch_programs(sketch.as_ref().and_then(Cohosted::program_id));
            duty.begin_interval();
        }
        let mut collector = Collector::start(accounting, duty.is_some())?;
        collector.count_startup();
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
            changes: Changes::new(config.tier),
            calibrator: Calibrator::default(),
            calibration_intervals: config.calibrate_every_s.map(CalibrationIntervals::new),
        })
    }

    /// Prices every run of netto's tracepoint programs at `dispatch` more
    /// than their statistics say.
    pub fn price_dispatch(&mut self, dispatch: Dispatch) {
        self.collector.price_dispatch(dispatch);
    }

    /// Delivers snapshots until the run ends, starting with `first` as the
    /// sampler and replacing it whenever the frequency rises above what its
    /// buffer was sized for; the interval goes on meanwhile.
    pub fn run(
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
                // Once an interval, at its end: each call reads sysfs and
                // every CPU's clock (a cross-CPU call each), and a CPU
                // back online is sampled again from the next interval.
                if Instant::now() >= due {
                    sampler.follow_cpus()?;
                }
                sampler.drain(|s| folder.add(s.cpu, s.context, s.group, s.frames))?;
            }
            let now = Instant::now();
            match wake {
                Wake::Frequency(hz) => {
                    let now = self.changes.frequency_asked(hz, self.accounting.tier());
                    let replaced = match now {
                        Some(hz) => self.retune_or_replace(sampler.as_deref_mut(), hz)?,
                        None => None,
                    };
                    if let Some(next) = replaced {
                        return Ok(next);
                    }
                }
                Wake::Attribution(on) => self.switch_attribution(on)?,
                Wake::Tier(tier) => self.changes.next_tier = Some(tier),
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
                    self.changes.interval_ended();
                    self.switch_tier(sampler.as_deref())?;
                    self.calibrate_if_due(sampler.as_deref())?;
                    if let Some(next) = self.turn(sampler.as_deref_mut())? {
                        return Ok(next);
                    }
                }
                Wake::Due => {}
            }
        }
    }

    /// Turns the knobs [`Changes`] holds, between two intervals, all at
    /// once; the sampler's frequency last.
    fn turn(&mut self, sampler: Option<&mut Sampler<'_>>) -> Result<Option<Next>> {
        let mut hz = None;
        for knob in std::mem::take(&mut self.changes.next_knobs) {
            match knob {
                Knob::Frequency(to) => hz = Some(to),
                Knob::Attribution(on) => self.switch_attribution(on)?,
                Knob::Sketch(probability) => {
                    if let Some(sketch) = self.sketch.as_mut() {
                        sketch.set_probability(probability)?;
                    }
                }
                Knob::Tier(tier, to) => {
                    self.changes.next_tier = Some(tier);
                    self.switch_tier(sampler.as_deref())?;
                    hz = Some(to);
                }
            }
        }
        match hz {
            Some(hz) => self.retune_or_replace(sampler, hz),
            None => Ok(None),
        }
    }

    /// Samples at `hz` from now on: in place when the sampler's buffer
    /// holds that rate, else by handing its counts to the interval and
    /// asking for a sampler sized for `hz`.
    fn retune_or_replace(
        &mut self,
        sampler: Option<&mut Sampler<'_>>,
        hz: u64,
    ) -> Result<Option<Next>> {
        let Some(sampler) = sampler.filter(|s| s.frequency_hz() != hz) else {
            return Ok(None);
        };
        if sampler.retune(hz)? {
            return Ok(None);
        }
        let folder = &mut self.folder;
        sampler.retire(|s| folder.add(s.cpu, s.context, s.group, s.frames))?;
        let counters = sampler.counters();
        self.retired = self.retired + (counters - self.base);
        self.base = SamplerCounters::default();
        Ok(Some(Next::Frequency(hz)))
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
    pub fn attribute(
        &mut self,
        config: &LiveConfig,
        points: Option<Points<'a>>,
    ) -> Result<Vec<Note>> {
        let (Some(attribution), Some(points)) = (config.attribution.clone(), points) else {
            return Ok(Vec::new());
        };
        self.collector.attribute(attribution)?;
        self.points = Some(points);
        self.switch_attribution(true)?;
        let unnamed = self.collector.names_cgroups() == Some(false);
        let kubelet = self.collector.kubelet_unreadable();
        Ok(unnamed
            .then_some(Note::NoCgroupV2)
            .into_iter()
            .chain(kubelet.map(|(path, error)| Note::NoKubeletNames { path, error }))
            .collect())
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
    pub fn switch_tier(&mut self, sampler: Option<&Sampler<'_>>) -> Result<()> {
        let Some(tier) = self.changes.next_tier.take() else {
            return Ok(());
        };
        let Some(sampler) = sampler else {
            return Ok(());
        };
        if tier != Tier::Exact {
            self.switch_attribution(false)?;
        }
        // A calibration interval measures every event while the sampler
        // places its samples as the tier it calibrates does
        // (`collect::calibrate`); the sampler trusts no more programs than
        // are attached either way.
        let places_as = self.changes.calibrating.unwrap_or(tier);
        if sampler_first(self.accounting.tier(), tier) {
            sampler.set_tier(places_as);
            self.accounting.set_tier(tier)?;
        } else {
            self.accounting.set_tier(tier)?;
            sampler.set_tier(places_as);
        }
        Ok(())
    }

    /// Makes the next interval a calibration interval if one is due (see
    /// [`Changes::calibrate`]).
    fn calibrate_if_due(&mut self, sampler: Option<&Sampler<'_>>) -> Result<()> {
        let in_force = self.accounting.tier();
        let interval_s = self.intervals.interval().as_secs_f64();
        let due = self
            .calibration_intervals
            .as_ref()
            .is_some_and(|c| c.due(in_force))
            && self
                .budget
                .as_ref()
                .is_none_or(|b| b.affords_calibration(interval_s));
        if self.changes.calibrate(due, sampler.is_some(), in_force) {
            self.switch_tier(sampler)?;
        }
        Ok(())
    }

    /// Ends the interval and sends its snapshot; false once nobody listens.
    /// The budget reports on the `last` interval of a run (nothing changes
    /// after it) and on a calibration interval without judging them.
    fn deliver(&mut self, sampler: Option<&Sampler<'_>>, last: bool) -> Result<bool> {
        let mut sketch = self.sketch.as_mut().map(Cohosted::snapshot);
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
        snapshot.calibrating = self.changes.calibrating;
        if let Some(duty) = self.duty.as_mut() {
            let own = &snapshot.overhead;
            let held_throughout = own.bpf_stats && !own.estimated && own.bpf_run_time_ns > 0;
            snapshot.network_programs =
                duty.price_programs(snapshot.interval_s, &snapshot.events, held_throughout);
            duty.begin_interval();
        }
        if let Some(sketch) = sketch.as_mut() {
            price_sketch(sketch, &snapshot.overhead.programs);
        }
        snapshot.sketch = sketch;
        if let (Some(sketch), Some(attribution)) =
            (snapshot.sketch.as_mut(), snapshot.attribution.as_ref())
        {
            join_heavy_hitters(sketch, attribution);
        }
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
            // Calibrated before the breakdown shares out the estimates.
            self.calibrator.observe(&snapshot);
            self.calibrator.apply(&mut snapshot);
            snapshot.breakdown = breakdowns(
                &snapshot.stacks,
                &snapshot.events,
                &snapshot.modules,
                sampler.frequency_hz(),
            );
            snapshot.losses.dropped_halves = counted.dropped_halves;
            snapshot.losses.missed_samples = counted.missed;
            snapshot.losses.unsampled_cpus = sampler.unsampled_cpus();
            snapshot.losses.recursion_misses += counted.recursion_misses;
            self.base = counters;
            self.retired = SamplerCounters::default();
        }
        if let Some(programs) = snapshot.network_programs.as_mut() {
            share(programs, &snapshot.events);
        }
        if let Some(intervals) = self.calibration_intervals.as_mut() {
            intervals.observe(&snapshot);
        }
        if let Some(budget) = self.budget.as_mut() {
            snapshot.budget = Some(if self.changes.judged(last) {
                let (status, step) = budget.observe(&snapshot);
                self.changes.budget_stepped(step);
                status
            } else {
                budget.unjudged(&snapshot)
            });
        }
        Ok(self.out.send(snapshot).is_ok())
    }
}
