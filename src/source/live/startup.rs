//! Start-up of a live run, before its first interval: the accounting
//! loaded, self-checked and attached ([`Opened`]), then what runs beside it
//! ([`Extras`]), and what the run has to say ([`Opened::info`]).

use std::mem::MaybeUninit;
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::OpenObject;

use super::{LiveConfig, StartCompanion, DRAIN_PERIOD};
use crate::collect::estimate::ESTIMATE_HZ;
use crate::collect::{Beside, Collector};
use crate::kernel::accounting::Accounting;
use crate::kernel::attribution::Points;
use crate::kernel::dispatch::{self, Dispatch};
use crate::kernel::features::Features;
use crate::kernel::sampler::{Sampler, SamplerConfig, Transport, WRITER_WAIT};
use crate::kernel::selection;
use crate::kernel::self_check::ProbeTraffic;
use crate::model::{percent, EventKey, Tier};
use crate::sketch::Cohosted;
use crate::source::duty::DutyCycle;
use crate::source::notes::{self, BudgetPlan, Note};
use crate::source::{Origin, SourceInfo};
use crate::symbols::symbolizer::Symbolizer;

/// Where the BPF objects of a run live while it runs.
pub(super) struct Storage {
    pub accounting: selection::Storage,
    pub sampler: MaybeUninit<OpenObject>,
    pub sketch: MaybeUninit<OpenObject>,
    pub points: MaybeUninit<OpenObject>,
}

impl Default for Storage {
    fn default() -> Self {
        Storage {
            accounting: selection::Storage::default(),
            sampler: MaybeUninit::uninit(),
            sketch: MaybeUninit::uninit(),
            points: MaybeUninit::uninit(),
        }
    }
}

/// Start-up step 1: the accounting, loaded, self-checked and attached
/// (privileges and backend, see [`selection::select`]), and BPF run-time
/// statistics as asked, held a slice of each interval ([`DutyCycle`]).
pub(super) struct Opened<'obj> {
    pub accounting: Accounting<'obj>,
    pub duty: Option<DutyCycle>,
    /// What entering a program costs, timed before netto's attach;
    /// `None` when it could not be (start-up fails a step later then).
    pub dispatch: Option<Dispatch>,
    notes: Vec<Note>,
}

impl<'obj> Opened<'obj> {
    pub fn open(
        config: &LiveConfig,
        storage: &'obj mut selection::Storage,
        probe: &dyn ProbeTraffic,
    ) -> Result<Self> {
        let dispatch = dispatch::measure().ok();
        let selection = selection::select(config.backend, &Features::detect(), storage, probe)?;
        let mut notes = notes::of_selection(&selection);
        let duty = match config.bpf_stats.then(|| DutyCycle::new(config.interval)) {
            Some(Ok(duty)) => Some(duty),
            Some(Err(e)) => {
                notes.push(Note::NoBpfStats {
                    error: e.to_string(),
                });
                None
            }
            None => None,
        };
        let accounting = selection.accounting;
        notes.extend(accounting.skipped().iter().map(|&group| Note::from(group)));
        if !accounting.callbacks_resolved() {
            notes.push(Note::CallbacksHidden);
        }
        Ok(Opened {
            accounting,
            duty,
            dispatch,
            notes,
        })
    }

    /// What the front end shows about this run, with what the later steps
    /// have to say.
    pub fn info(&self, config: &LiveConfig, later_notes: Vec<Note>) -> SourceInfo {
        let mut notes = self.notes.clone();
        notes.extend(later_notes);
        notes.extend(config.budget.map(|percent| budget_note(config, percent)));
        notes.extend(calibration_note(config));
        notes.push(Note::Measuring {
            attached: self.accounting.attached().len(),
            tier: self.accounting.tier(),
            sampling_hz: config.sampling.map(|s| s.frequency_hz),
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
pub(super) struct Extras<'obj> {
    /// The first sampler: a later one replaces it only when the frequency
    /// rises above what its buffer holds.
    pub sampler: Option<Sampler<'obj>>,
    pub symbolizer: Option<Symbolizer>,
    /// The command's companion traffic, running until the run ends.
    pub companion: Option<Box<dyn Send>>,
    pub sketch: Option<Cohosted<'obj>>,
    /// Attribution's delivery points, loaded with `--by` (not attached yet).
    pub points: Option<Points<'obj>>,
    pub notes: Vec<Note>,
}

impl<'obj> Extras<'obj> {
    pub fn start(
        config: &LiveConfig,
        accounting: &Accounting<'_>,
        companion: Option<StartCompanion>,
        sampler_storage: &'obj mut MaybeUninit<OpenObject>,
        sketch_storage: &'obj mut MaybeUninit<OpenObject>,
        points_storage: &'obj mut MaybeUninit<OpenObject>,
    ) -> Result<Self> {
        let sampler = config
            .sampling
            .map(|s| load_sampler(sampler_storage, accounting, config, s.frequency_hz))
            .transpose()?;
        let mut notes = Vec::new();
        let companion = match companion {
            Some(start) => start(&NetworkWatch { accounting })?,
            None => None,
        };
        let companion = companion.map(|companion| {
            notes.push(companion.note);
            companion.running
        });
        let sketch = match &config.xdp_sketch {
            Some((iface, sketch_config)) => {
                let host = Cohosted::attach(iface, sketch_config, sketch_storage)?;
                notes.push(Note::Sketch {
                    interface: iface.clone(),
                    mode: host.mode().name().to_owned(),
                    probability: host.probability(),
                    rows: sketch_config.rows,
                    columns: sketch_config.columns,
                });
                Some(host)
            }
            None => None,
        };
        let points = config
            .attribution
            .as_ref()
            .map(|a| Points::load(points_storage, accounting, a.by.keys_conns()))
            .transpose()?;
        let missing = points.iter().flat_map(|points| points.missing());
        notes.extend(missing.map(|&point| Note::from(point)));
        // After all of netto's own programs are loaded, so their JIT-ed
        // symbols are in the table and do not force a reload.
        let symbolizer = sampler
            .is_some()
            .then(Symbolizer::load)
            .transpose()
            .context("reading kernel symbols")?;
        Ok(Extras {
            sampler,
            symbolizer,
            companion,
            sketch,
            points,
            notes,
        })
    }
}

/// A sampler at `frequency_hz` in `storage`, as `config` samples.
pub(super) fn load_sampler<'obj>(
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

/// A look at the host's network before the first interval, for a command
/// deciding whether to start traffic of its own.
pub struct NetworkWatch<'a> {
    accounting: &'a Accounting<'a>,
}

impl NetworkWatch<'_> {
    /// The share of one CPU, in percent, that the host's network events
    /// (both softirqs and socket calls) took while watched for `span`.
    pub fn busy_percent(&self, span: Duration) -> Result<f64> {
        let mut probe = Collector::start(self.accounting, false)?;
        thread::sleep(span);
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
        Ok(percent(busy_ns, snapshot.interval_s))
    }
}

/// What the budget will do in this run, and what it cannot see.
fn budget_note(config: &LiveConfig, percent: f64) -> Note {
    Note::Budget(BudgetPlan {
        percent,
        sampling_hz: config.sampling.map(|s| s.frequency_hz),
        attribution: config.attribution.is_some(),
        tier: config.tier,
        estimate_hz: ESTIMATE_HZ,
        bpf_stats: config.bpf_stats,
    })
}

/// What `--calibrate-every` will do in this run: nothing in a run that
/// stays exact, or that cannot estimate.
fn calibration_note(config: &LiveConfig) -> Option<Note> {
    let every_s = config.calibrate_every_s?;
    let may_estimate = config.tier != Tier::Exact || config.budget.is_some();
    (may_estimate && config.sampling.is_some()).then_some(Note::Calibrating { every_s })
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::backend::BackendChoice;
    use crate::source::live::StackSampling;

    fn config() -> LiveConfig {
        LiveConfig {
            backend: BackendChoice::Auto,
            bpf_stats: true,
            interval: Duration::from_secs(1),
            duration: None,
            sampling: None,
            flush_on_stop: false,
            xdp_sketch: None,
            attribution: None,
            budget: None,
            tier: Tier::Exact,
            calibrate_every_s: Some(30.0),
        }
    }

    const SAMPLING: Option<StackSampling> = Some(StackSampling {
        frequency_hz: 99,
        transport: Transport::Mmap,
    });

    #[test]
    fn calibration_is_said_only_where_a_tier_may_estimate() {
        let calibrating = Some(Note::Calibrating { every_s: 30.0 });
        let exact = LiveConfig {
            sampling: SAMPLING,
            ..config()
        };
        assert_eq!(calibration_note(&exact), None, "stays exact");
        let softirq = LiveConfig {
            tier: Tier::Softirq,
            ..exact.clone()
        };
        assert_eq!(calibration_note(&softirq), calibrating);
        let budgeted = LiveConfig {
            budget: Some(2.0),
            ..exact.clone()
        };
        assert_eq!(calibration_note(&budgeted), calibrating, "may step down");
        let unsampled = LiveConfig {
            budget: Some(2.0),
            ..config()
        };
        assert_eq!(calibration_note(&unsampled), None, "cannot estimate");
        let never = LiveConfig {
            calibrate_every_s: None,
            ..softirq
        };
        assert_eq!(calibration_note(&never), None);
    }

    #[test]
    fn the_budget_note_says_what_it_can_turn_down_and_see() {
        let config = LiveConfig {
            sampling: SAMPLING,
            tier: Tier::Softirq,
            bpf_stats: false,
            ..config()
        };
        assert_eq!(
            budget_note(&config, 2.5),
            Note::Budget(BudgetPlan {
                percent: 2.5,
                sampling_hz: Some(99),
                attribution: false,
                tier: Tier::Softirq,
                estimate_hz: ESTIMATE_HZ,
                bpf_stats: false,
            })
        );
    }
}
