//! `/metrics` in the Prometheus text format. Every measured quantity is a
//! counter cumulative since netto started, so a scrape at any interval sees
//! every second through `rate()`; a gauge of the last interval (what the
//! original Netto exported) is mostly missed by a scrape every 15 s.
//!
//! The counters are kept by the `prometheus` crate, which also writes the
//! exposition format; [`families`] is the table of names, labels and help,
//! and this module decides what each series counts, in which unit.

pub mod families;

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use prometheus::core::Collector;
use prometheus::{
    Counter, CounterVec, Encoder, Gauge, GaugeVec, IntGauge, IntGaugeVec, Opts, Registry,
};
use thiserror::Error;

use super::otlp::dropped::Dropped;
use crate::breakdown::{Category, PROGRAM_PREFIX};
use crate::model::{
    percent, Attribution, BudgetChange, EventKey, GroupBy, Losses, OtlpPushed, Snapshot, Tier,
};
use crate::source::{Origin, SourceInfo};
use families::{Family, Kind};

/// Series of the host's network programs, at most: programs come and go
/// (a pod's veth each), and a scrape must stay bounded.
pub const MAX_PROGRAM_SERIES: usize = 64;

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Error)]
#[error("Prometheus metrics: {0}")]
pub struct MetricsError(#[from] prometheus::Error);

/// netto's metrics, updated once per snapshot by the hub and read by
/// scrapes; both sides only touch atomics, so a scrape never waits for the
/// collector.
pub struct Metrics {
    registry: Registry,
    event_seconds: CounterVec,
    event_runs: CounterVec,
    softirq_seconds: CounterVec,
    softirq_runs: CounterVec,
    hardirq_seconds: CounterVec,
    timer_callback_seconds: CounterVec,
    samples: CounterVec,
    category_seconds: CounterVec,
    samples_dropped: Counter,
    stack_failures: Counter,
    samples_softirq_loop: Counter,
    losses: CounterVec,
    netto_process_seconds: Counter,
    own_seconds: Counter,
    own_error_seconds: Counter,
    stats_held_seconds: Counter,
    bpf_run_seconds: CounterVec,
    bpf_runs: CounterVec,
    ebpf_seconds: CounterVec,
    ebpf_runs: CounterVec,
    /// The label sets of the host's network programs served so far: at
    /// most [`MAX_PROGRAM_SERIES`], the rest as `other`.
    ebpf_series: Mutex<BTreeSet<[String; 3]>>,
    intervals: Counter,
    measured_seconds: Counter,
    sampling_frequency: Gauge,
    /// The estimated part of `event_seconds`, which has all of it.
    estimated_seconds: CounterVec,
    estimated: IntGaugeVec,
    serving_seconds: Counter,
    export_seconds: Counter,
    estimated_variance: CounterVec,
    /// Only for events estimated in the last interval whose samples' agreement
    /// the run measured.
    estimate_agreement: GaugeVec,
    estimate_agreement_error: GaugeVec,
    /// A timestamp rather than an age: `time() - x` gives the age at query
    /// time, where an age gauge would be as old as the last scrape.
    estimate_calibration_timestamp: GaugeVec,
    estimate_calibration_applied: IntGaugeVec,
    tier: IntGaugeVec,
    last_snapshot: Gauge,
    overhead_percent: Gauge,
    budget_percent: Gauge,
    budget_exceeded: Gauge,
    budget_steps: CounterVec,
    /// A counter, not a 0/1 gauge: a scrape every 15 s would miss most
    /// one-second calibration intervals.
    calibration_intervals: Counter,
    stream_clients: IntGauge,
    stream_clients_dropped: Counter,
    otlp_sent: Counter,
    otlp_dropped: CounterVec,
    /// Who pays (`--by`), from the first snapshot with an attribution.
    groups: Mutex<Option<GroupSeries>>,
}

impl Metrics {
    pub fn new(info: &SourceInfo) -> Result<Metrics, MetricsError> {
        let registry = Registry::new();
        let r = Registrar(&registry);
        r.int_gauges(&families::INFO)?
            .with_label_values(&[
                info.host.as_str(),
                &info.kernel,
                &info.backend,
                source_name(&info.origin),
                env!("CARGO_PKG_VERSION"),
            ])
            .set(1);

        let otlp_dropped = r.counters(&families::OTLP_WINDOWS_DROPPED)?;
        // Every reason from the start, at 0: a rate() over a window that
        // saw the first drop then counts it.
        for reason in Dropped::ALL {
            otlp_dropped.with_label_values(&[reason.name()]);
        }
        Ok(Metrics {
            event_seconds: r.counters(&families::EVENT_SECONDS)?,
            event_runs: r.counters(&families::EVENT_RUNS)?,
            softirq_seconds: r.counters(&families::SOFTIRQ_SECONDS)?,
            softirq_runs: r.counters(&families::SOFTIRQ_RUNS)?,
            hardirq_seconds: r.counters(&families::HARDIRQ_SECONDS)?,
            timer_callback_seconds: r.counters(&families::TIMER_CALLBACK_SECONDS)?,
            samples: r.counters(&families::SAMPLES)?,
            category_seconds: r.counters(&families::CATEGORY_SECONDS)?,
            samples_dropped: r.counter(&families::SAMPLES_DROPPED)?,
            stack_failures: r.counter(&families::STACK_FAILURES)?,
            samples_softirq_loop: r.counter(&families::SAMPLES_SOFTIRQ_LOOP)?,
            losses: r.counters(&families::LOSSES)?,
            netto_process_seconds: r.counter(&families::NETTO_PROCESS_SECONDS)?,
            own_seconds: r.counter(&families::OWN_SECONDS)?,
            own_error_seconds: r.counter(&families::OWN_ERROR_SECONDS)?,
            stats_held_seconds: r.counter(&families::STATS_HELD_SECONDS)?,
            bpf_run_seconds: r.counters(&families::BPF_RUN_SECONDS)?,
            bpf_runs: r.counters(&families::BPF_RUNS)?,
            ebpf_seconds: r.counters(&families::EBPF_PROGRAM_SECONDS)?,
            ebpf_runs: r.counters(&families::EBPF_PROGRAM_RUNS)?,
            ebpf_series: Mutex::new(BTreeSet::new()),
            intervals: r.counter(&families::INTERVALS)?,
            measured_seconds: r.counter(&families::MEASURED_SECONDS)?,
            sampling_frequency: r.gauge(&families::SAMPLING_FREQUENCY)?,
            estimated_seconds: r.counters(&families::ESTIMATED_SECONDS)?,
            estimated: r.int_gauges(&families::ESTIMATED)?,
            serving_seconds: r.counter(&families::SERVING_SECONDS)?,
            export_seconds: r.counter(&families::EXPORT_SECONDS)?,
            estimated_variance: r.counters(&families::ESTIMATED_VARIANCE)?,
            estimate_agreement: r.gauges(&families::ESTIMATE_AGREEMENT)?,
            estimate_agreement_error: r.gauges(&families::ESTIMATE_AGREEMENT_ERROR)?,
            estimate_calibration_timestamp: r.gauges(&families::ESTIMATE_CALIBRATION_TIMESTAMP)?,
            estimate_calibration_applied: r.int_gauges(&families::ESTIMATE_CALIBRATION_APPLIED)?,
            tier: r.int_gauges(&families::TIERS)?,
            last_snapshot: r.gauge(&families::LAST_SNAPSHOT)?,
            overhead_percent: r.gauge(&families::OVERHEAD_PERCENT)?,
            budget_percent: r.gauge(&families::BUDGET_PERCENT)?,
            budget_exceeded: r.gauge(&families::BUDGET_EXCEEDED)?,
            budget_steps: r.counters(&families::BUDGET_STEPS)?,
            calibration_intervals: r.counter(&families::CALIBRATION_INTERVALS)?,
            stream_clients: r.int_gauge(&families::STREAM_CLIENTS)?,
            stream_clients_dropped: r.counter(&families::STREAM_CLIENTS_DROPPED)?,
            otlp_sent: r.counter(&families::OTLP_WINDOWS_SENT)?,
            otlp_dropped,
            groups: Mutex::new(None),
            registry,
        })
    }

    /// One more OTLP window delivered.
    pub fn otlp_sent(&self) {
        self.otlp_sent.inc();
    }

    /// One more OTLP window lost, and why.
    pub fn otlp_dropped(&self, reason: Dropped) {
        self.otlp_dropped.with_label_values(&[reason.name()]).inc();
    }

    /// OTLP windows sent and lost so far, every reason together: what
    /// each snapshot tells the page.
    pub fn otlp_pushed(&self) -> OtlpPushed {
        OtlpPushed {
            sent_windows: self.otlp_sent.get() as u64,
            dropped_windows: Dropped::ALL
                .iter()
                .map(|r| self.otlp_dropped.with_label_values(&[r.name()]).get() as u64)
                .sum(),
        }
    }

    /// Adds one interval to the counters.
    pub fn add(&self, snapshot: &Snapshot) {
        for tier in Tier::ALL {
            self.tier
                .with_label_values(&[tier.name()])
                .set(i64::from(tier == snapshot.tier));
        }
        if snapshot.calibrating.is_some() {
            self.calibration_intervals.inc();
        }
        for (event, time) in &snapshot.events {
            let labels = [event.name()];
            match time.calibration {
                Some(c) => {
                    self.estimate_agreement
                        .with_label_values(&labels)
                        .set(c.agreement);
                    self.estimate_agreement_error
                        .with_label_values(&labels)
                        .set(c.error());
                    self.estimate_calibration_timestamp
                        .with_label_values(&labels)
                        .set(c.ts);
                    self.estimate_calibration_applied
                        .with_label_values(&labels)
                        .set(i64::from(c.applied));
                }
                // Absent rather than stale.
                None => {
                    let _ = self.estimate_agreement.remove_label_values(&labels);
                    let _ = self.estimate_agreement_error.remove_label_values(&labels);
                    let _ = self
                        .estimate_calibration_timestamp
                        .remove_label_values(&labels);
                    let _ = self
                        .estimate_calibration_applied
                        .remove_label_values(&labels);
                }
            }
            // One series per event and CPU whatever the tier: a label
            // that changed with it would start a new series at each change
            // and break rate() across it.
            self.estimated
                .with_label_values(&labels)
                .set(i64::from(time.estimated));
            if time.estimated {
                let error_s = seconds(time.error_ns.unwrap_or(0));
                self.estimated_variance
                    .with_label_values(&labels)
                    .inc_by(error_s * error_s);
            }
            for (cpu, ns) in time.per_cpu_ns.iter().enumerate() {
                let labels = [event.name(), &cpu.to_string()];
                self.event_seconds
                    .with_label_values(&labels)
                    .inc_by(seconds(*ns));
                if time.estimated {
                    self.estimated_seconds
                        .with_label_values(&labels)
                        .inc_by(seconds(*ns));
                }
            }
            self.event_runs
                .with_label_values(&[event.name()])
                .inc_by(time.count as f64);
        }
        for (vector, time) in &snapshot.softirq {
            let labels = [vector.name()];
            self.softirq_seconds
                .with_label_values(&labels)
                .inc_by(seconds(time.total_ns));
            self.softirq_runs
                .with_label_values(&labels)
                .inc_by(time.count as f64);
        }
        for (cpu, ns) in snapshot.hardirq.per_cpu_ns.iter().enumerate() {
            self.hardirq_seconds
                .with_label_values(&[cpu.to_string()])
                .inc_by(seconds(*ns));
        }
        for (callback, ns) in &snapshot.net_timer_callbacks {
            self.timer_callback_seconds
                .with_label_values(&[callback])
                .inc_by(seconds(*ns));
        }
        for breakdown in &snapshot.breakdown {
            for share in &breakdown.categories {
                // Each program's stage is one series of its family: the
                // label stays a closed set, and `netto_ebpf_program_*`
                // names the programs.
                let category = if share.category.starts_with(PROGRAM_PREFIX) {
                    Category::BpfProgram.name()
                } else {
                    share.category.as_str()
                };
                let labels = [breakdown.context.name(), category];
                self.samples
                    .with_label_values(&labels)
                    .inc_by(share.samples as f64);
                self.category_seconds
                    .with_label_values(&labels)
                    .inc_by(seconds(share.cpu_ns));
            }
        }
        let sampling = snapshot.sampling.clone().unwrap_or_default();
        self.samples_dropped.inc_by(sampling.dropped as f64);
        self.stack_failures.inc_by(sampling.failed_stacks as f64);
        self.samples_softirq_loop
            .inc_by(sampling.softirq_loop as f64);
        self.sampling_frequency.set(sampling.frequency_hz as f64);
        // Every kind from the first snapshot on, at zero until one happens.
        for kind in &Losses::KINDS {
            self.losses
                .with_label_values(&[kind.name])
                .inc_by((kind.count)(&snapshot.losses) as f64);
        }

        let overhead = &snapshot.overhead;
        self.netto_process_seconds
            .inc_by(seconds(overhead.process_cpu_ns));
        self.serving_seconds
            .inc_by(seconds(overhead.serving_cpu_ns));
        self.export_seconds.inc_by(seconds(overhead.export_cpu_ns));
        for program in &overhead.programs {
            let labels = [program.name.as_str()];
            self.bpf_run_seconds
                .with_label_values(&labels)
                .inc_by(seconds(program.run_time_ns));
            self.bpf_runs
                .with_label_values(&labels)
                .inc_by(program.run_count as f64);
        }
        self.add_network_programs(snapshot);
        let own_ns = overhead.process_cpu_ns + overhead.bpf_run_time_ns;
        self.own_seconds.inc_by(seconds(own_ns));
        self.own_error_seconds
            .inc_by(seconds(overhead.bpf_error_ns));
        self.stats_held_seconds
            .inc_by(overhead.bpf_stats_held_s.max(0.0));
        self.overhead_percent.set(
            overhead
                .cost_percent
                .unwrap_or_else(|| percent(own_ns, snapshot.interval_s)),
        );
        self.add_budget(snapshot);
        self.intervals.inc();
        self.measured_seconds.inc_by(snapshot.interval_s.max(0.0));
        self.last_snapshot.set(snapshot.ts);
        if let Some(attribution) = &snapshot.attribution {
            // A failure to register leaves the rest of the metrics intact.
            let _ = self.add_groups(attribution);
        }
    }

    /// Each shown group's time per event, in the series of its `--by`.
    fn add_groups(&self, attribution: &Attribution) -> Result<(), MetricsError> {
        let mut guard = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        let series = match guard.as_mut() {
            Some(series) => series,
            None => guard.insert(GroupSeries::register(&self.registry, attribution.by)?),
        };
        series.add(attribution);
        Ok(())
    }

    /// The host's network programs, one series per program name, hook and
    /// interface, up to [`MAX_PROGRAM_SERIES`]; `other` after that.
    fn add_network_programs(&self, snapshot: &Snapshot) {
        let Some(programs) = &snapshot.network_programs else {
            return;
        };
        let mut series = self
            .ebpf_series
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for program in &programs.programs {
            let mut labels = [
                program.name.clone(),
                program.hook.clone(),
                program.iface().unwrap_or_default().to_owned(),
            ];
            if !series.contains(&labels) {
                if series.len() < MAX_PROGRAM_SERIES {
                    series.insert(labels.clone());
                } else {
                    labels = ["other".into(), "other".into(), String::new()];
                }
            }
            let labels = labels.each_ref().map(String::as_str);
            self.ebpf_seconds
                .with_label_values(&labels)
                .inc_by(seconds(program.run_time_ns));
            self.ebpf_runs
                .with_label_values(&labels)
                .inc_by(program.runs as f64);
        }
    }

    fn add_budget(&self, snapshot: &Snapshot) {
        let budget = snapshot.budget.as_ref();
        self.budget_percent.set(budget.map_or(0.0, |b| b.percent));
        // A calibration interval leaves it as the last judged one left it.
        if snapshot.calibrating.is_none() {
            self.budget_exceeded
                .set(if snapshot.budget_exceeded() { 1.0 } else { 0.0 });
        }
        if budget.is_some() {
            // Both series from the first interval on, at 0 until a step.
            for direction in [families::DOWN, families::UP] {
                self.budget_steps.with_label_values(&[direction]);
            }
        }
        let direction = match budget.and_then(|b| b.change) {
            Some(
                BudgetChange::Down { .. }
                | BudgetChange::AttributionOff
                | BudgetChange::SketchDown { .. }
                | BudgetChange::TierDown { .. },
            ) => families::DOWN,
            Some(
                BudgetChange::Up { .. }
                | BudgetChange::AttributionOn
                | BudgetChange::SketchUp { .. }
                | BudgetChange::TierUp { .. },
            ) => families::UP,
            Some(BudgetChange::Exceeded | BudgetChange::Kept) | None => return,
        };
        self.budget_steps.with_label_values(&[direction]).inc();
    }

    pub fn set_stream_clients(&self, clients: usize, newly_dropped: usize) {
        self.stream_clients
            .set(i64::try_from(clients).unwrap_or(i64::MAX));
        self.stream_clients_dropped.inc_by(newly_dropped as f64);
    }

    /// The exposition text of every metric.
    pub fn encode(&self) -> Result<Vec<u8>, MetricsError> {
        let mut out = Vec::new();
        prometheus::TextEncoder::new().encode(&self.registry.gather(), &mut out)?;
        Ok(out)
    }
}

/// The series of attribution's groups. Their number stays bounded: a
/// group's series exist while it is among the groups shown (the heaviest
/// `--max-groups`, chosen by a weight that changes slowly) and are removed
/// when it leaves, so at most `--max-groups` groups, `other` and
/// `unattributed` have series at a time. A group shown again starts at 0,
/// which `rate()` takes as a counter reset.
struct GroupSeries {
    by: GroupBy,
    seconds: CounterVec,
    enabled: IntGauge,
    /// (group, label) of the series that exist.
    present: BTreeSet<(String, String)>,
}

/// The label values of the time no group claimed.
const UNATTRIBUTED: &str = "unattributed";

impl GroupSeries {
    fn register(registry: &Registry, by: GroupBy) -> Result<GroupSeries, MetricsError> {
        let r = Registrar(registry);
        Ok(GroupSeries {
            by,
            seconds: r.counters(families::group_seconds(by))?,
            enabled: r.int_gauge(&families::ATTRIBUTION_ON)?,
            present: BTreeSet::new(),
        })
    }

    fn add(&mut self, attribution: &Attribution) {
        // A recording made with another --by does not mix into these series.
        if attribution.by != self.by {
            return;
        }
        self.enabled.set(i64::from(attribution.on));
        let shown: BTreeSet<(String, String)> = attribution
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.label.clone()))
            .chain(std::iter::once((
                UNATTRIBUTED.to_owned(),
                UNATTRIBUTED.to_owned(),
            )))
            .collect();
        for (name, label) in self.present.difference(&shown) {
            for event in EventKey::ALL {
                let _ = self
                    .seconds
                    .remove_label_values(&[name.as_str(), label, event.name()]);
            }
        }
        let rows = attribution
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.label.as_str(), &g.events))
            .chain(std::iter::once((
                UNATTRIBUTED,
                UNATTRIBUTED,
                &attribution.unattributed,
            )));
        for (name, label, events) in rows {
            for event in EventKey::ALL {
                let ns = events.get(&event).copied().unwrap_or(0);
                self.seconds
                    .with_label_values(&[name, label, event.name()])
                    .inc_by(seconds(ns));
            }
        }
        self.present = shown;
    }
}

/// Makes each collector from its row of the table and registers it.
struct Registrar<'r>(&'r Registry);

impl Registrar<'_> {
    /// `new` makes the collector of `family` (of `kind`) from its name,
    /// help and label names.
    fn make<C: Collector + Clone + 'static>(
        &self,
        family: &Family,
        kind: Kind,
        new: impl FnOnce(Opts, &[&str]) -> prometheus::Result<C>,
    ) -> Result<C, MetricsError> {
        debug_assert_eq!(family.kind, kind, "{}", family.name);
        let collector = new(Opts::new(family.name, family.help), &family.label_names())?;
        self.0.register(Box::new(collector.clone()))?;
        Ok(collector)
    }

    fn counters(&self, family: &Family) -> Result<CounterVec, MetricsError> {
        self.make(family, Kind::Counter, |o, labels| {
            CounterVec::new(o, labels)
        })
    }

    fn counter(&self, family: &Family) -> Result<Counter, MetricsError> {
        self.make(family, Kind::Counter, |o, labels| {
            debug_assert!(labels.is_empty(), "{}", family.name);
            Counter::with_opts(o)
        })
    }

    fn gauges(&self, family: &Family) -> Result<GaugeVec, MetricsError> {
        self.make(family, Kind::Gauge, GaugeVec::new)
    }

    fn gauge(&self, family: &Family) -> Result<Gauge, MetricsError> {
        self.make(family, Kind::Gauge, |o, labels| {
            debug_assert!(labels.is_empty(), "{}", family.name);
            Gauge::with_opts(o)
        })
    }

    fn int_gauges(&self, family: &Family) -> Result<IntGaugeVec, MetricsError> {
        self.make(family, Kind::Gauge, IntGaugeVec::new)
    }

    fn int_gauge(&self, family: &Family) -> Result<IntGauge, MetricsError> {
        self.make(family, Kind::Gauge, |o, labels| {
            debug_assert!(labels.is_empty(), "{}", family.name);
            IntGauge::with_opts(o)
        })
    }
}

/// The `source` label of `netto_info`.
fn source_name(origin: &Origin) -> &'static str {
    match origin {
        Origin::Live => "live",
        Origin::Replay(_) => "replay",
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests;
