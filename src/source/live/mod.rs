//! The live source: loads netto's BPF programs, then turns every interval
//! into a [`Snapshot`] with its symbolized stacks and breakdown.
//!
//! Everything that touches BPF lives on one thread, because libbpf objects
//! are tied to the thread that loads them; the front end talks to it only
//! through channels. Start-up (`startup`) runs in three steps, the same
//! for every command, so each says the same things in the same order:
//! privileges, backend and statistics; what runs beside the accounting
//! (the sampler, kernel symbols, the command's companion traffic, the
//! co-hosted sketch); then the interval loop (`measure`), which retunes
//! the sampler when the frequency changes. What changes between intervals is
//! decided in `changes`, and what netto's own cost takes from beside the
//! accounting in `own_cost`, neither touching BPF.
//!
//! The live source makes no traffic: the self-check's calls and any
//! traffic to measure (the demo) come from the command ([`Traffic`]).

mod changes;
mod measure;
mod own_cost;
mod startup;

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result};

use super::notes::Note;
use super::{Control, Source, SourceInfo};
use crate::collect::attribution;
use crate::kernel::backend::BackendChoice;
use crate::kernel::sampler::Transport;
use crate::kernel::self_check::ProbeTraffic;
use crate::model::{Snapshot, Tier};
use crate::sketch::SketchConfig;
use measure::Measure;
pub use startup::NetworkWatch;
use startup::{Extras, Opened, Storage};

/// How often samples are moved out of the kernel buffer; the buffer is
/// sized for it.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
pub struct StackSampling {
    pub frequency_hz: u64,
    pub transport: Transport,
}

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
    /// On [`Control::Stop`], deliver the interval in progress too, so a
    /// recording keeps every sample taken before Ctrl-C.
    pub flush_on_stop: bool,
    /// Co-host the XDP sketch on this interface: its flows and its cost go
    /// into every snapshot, its frames into the breakdown.
    pub xdp_sketch: Option<(String, SketchConfig)>,
    /// Attribute every event's time to groups (`--by`); `None`: not loaded.
    pub attribution: Option<attribution::Config>,
    /// Keep measuring's cost under this percentage of one CPU by turning
    /// the sampling frequency down ([`super::budget`]); `None`: no budget.
    pub budget: Option<f64>,
    /// The tier to start in; any but `exact` needs `sampling`, whose
    /// samples its estimates come from.
    pub tier: Tier,
    /// In a tier that estimates, measure one interval exactly whenever
    /// none has for this many seconds
    /// ([`super::calibration_intervals::CalibrationIntervals`]); `None`:
    /// never.
    pub calibrate_every_s: Option<f64>,
}

/// The traffic a live run takes from its command.
pub struct Traffic {
    /// One socket call of each kind, for the backend's self-check.
    pub probe: &'static (dyn ProbeTraffic + Sync),
    /// Traffic to measure, started once netto's programs are loaded and
    /// before the first interval (the demo); `None`: the host's own only.
    pub companion: Option<StartCompanion>,
}

/// Starts a [`Companion`], or decides not to; it may watch the host's
/// network first.
pub type StartCompanion = Box<dyn FnOnce(&NetworkWatch<'_>) -> Result<Option<Companion>> + Send>;

/// Traffic running beside the measurement, and what to say about it.
pub struct Companion {
    pub note: Note,
    /// Held until the run ends, however it ends; dropping it stops the
    /// traffic and removes what it made.
    pub running: Box<dyn Send>,
}

/// Loads and attaches everything, then returns once the first interval has
/// begun; errors in start-up (privileges, missing kernel features) come
/// back here rather than on the stream.
pub fn start(config: LiveConfig, traffic: Traffic) -> Result<Source> {
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
        .spawn(move || run(&config, traffic, &ready_tx, &control_rx, &snapshot_tx))
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
    traffic: Traffic,
    ready: &SyncSender<Result<SourceInfo>>,
    control: &Receiver<Control>,
    out: &Sender<Snapshot>,
) -> Result<()> {
    let mut storage = Storage::default();
    let Storage {
        accounting: accounting_storage,
        sampler: sampler_storage,
        sketch: sketch_storage,
        points: points_storage,
    } = &mut storage;
    let opened = Opened::open(config, accounting_storage, traffic.probe);
    let Some(mut opened) = started(ready, opened) else {
        return Ok(());
    };
    let extras = Extras::start(
        config,
        &opened.accounting,
        traffic.companion,
        sampler_storage,
        sketch_storage,
        points_storage,
    );
    let Some(extras) = started(ready, extras) else {
        return Ok(());
    };
    let Extras {
        sampler,
        symbolizer,
        sketch,
        points,
        companion: _companion,
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
    if let Some(dispatch) = opened.dispatch {
        measure.price_dispatch(dispatch);
    }
    let Some(attribution_notes) = started(ready, measure.attribute(config, points)) else {
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
