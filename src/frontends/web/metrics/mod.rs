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

use crate::model::{percent, Attribution, BudgetChange, EventKey, GroupBy, Losses, Snapshot, Tier};
use crate::source::{Origin, SourceInfo};
use families::{Family, Kind};

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
    process_seconds: Counter,
    own_seconds: Counter,
    own_error_seconds: Counter,
    stats_held_seconds: Counter,
    bpf_run_seconds: CounterVec,
    bpf_runs: CounterVec,
    intervals: Counter,
    measured_seconds: Counter,
    sampling_frequency: Gauge,
    /// The estimated part of `event_seconds`, which has all of it.
    estimated_seconds: CounterVec,
    estimated: IntGaugeVec,
    serving_seconds: Counter,
    estimated_variance: CounterVec,
    /// Only for events estimated in the last interval whose samples' agreement
    /// the run measured.
    estimate_agreement: GaugeVec,
    estimate_agreement_error: GaugeVec,
    /// A timestamp rather than an age: `time() - x` gives the age at query
    /// time, where an age gauge would be as old as the last scrape.
    estimate_calibration_timestamp: GaugeVec,
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
            process_seconds: r.counter(&families::PROCESS_CPU_SECONDS)?,
            own_seconds: r.counter(&families::OWN_SECONDS)?,
            own_error_seconds: r.counter(&families::OWN_ERROR_SECONDS)?,
            stats_held_seconds: r.counter(&families::STATS_HELD_SECONDS)?,
            bpf_run_seconds: r.counters(&families::BPF_RUN_SECONDS)?,
            bpf_runs: r.counters(&families::BPF_RUNS)?,
            intervals: r.counter(&families::INTERVALS)?,
            measured_seconds: r.counter(&families::MEASURED_SECONDS)?,
            sampling_frequency: r.gauge(&families::SAMPLING_FREQUENCY)?,
            estimated_seconds: r.counters(&families::ESTIMATED_SECONDS)?,
            estimated: r.int_gauges(&families::ESTIMATED)?,
            serving_seconds: r.counter(&families::SERVING_SECONDS)?,
            estimated_variance: r.counters(&families::ESTIMATED_VARIANCE)?,
            estimate_agreement: r.gauges(&families::ESTIMATE_AGREEMENT)?,
            estimate_agreement_error: r.gauges(&families::ESTIMATE_AGREEMENT_ERROR)?,
            estimate_calibration_timestamp: r.gauges(&families::ESTIMATE_CALIBRATION_TIMESTAMP)?,
            tier: r.int_gauges(&families::TIERS)?,
            last_snapshot: r.gauge(&families::LAST_SNAPSHOT)?,
            overhead_percent: r.gauge(&families::OVERHEAD_PERCENT)?,
            budget_percent: r.gauge(&families::BUDGET_PERCENT)?,
            budget_exceeded: r.gauge(&families::BUDGET_EXCEEDED)?,
            budget_steps: r.counters(&families::BUDGET_STEPS)?,
            calibration_intervals: r.counter(&families::CALIBRATION_INTERVALS)?,
            stream_clients: r.int_gauge(&families::STREAM_CLIENTS)?,
            stream_clients_dropped: r.counter(&families::STREAM_CLIENTS_DROPPED)?,
            groups: Mutex::new(None),
            registry,
        })
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
                }
                // Absent rather than stale.
                None => {
                    let _ = self.estimate_agreement.remove_label_values(&labels);
                    let _ = self.estimate_agreement_error.remove_label_values(&labels);
                    let _ = self
                        .estimate_calibration_timestamp
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
                let labels = [breakdown.context.name(), share.category.as_str()];
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
        self.process_seconds
            .inc_by(seconds(overhead.process_cpu_ns));
        self.serving_seconds
            .inc_by(seconds(overhead.serving_cpu_ns));
        for program in &overhead.programs {
            let labels = [program.name.as_str()];
            self.bpf_run_seconds
                .with_label_values(&labels)
                .inc_by(seconds(program.run_time_ns));
            self.bpf_runs
                .with_label_values(&labels)
                .inc_by(program.run_count as f64);
        }
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
mod tests {
    use super::*;
    use crate::model::{
        Breakdown, BudgetStatus, Calibration, CategoryShare, EventKey, SampleContext, SoftirqVector,
    };

    fn info() -> SourceInfo {
        SourceInfo {
            host: "box \"1\"".into(),
            kernel: "6.8".into(),
            backend: "tracepoint".into(),
            frequency_hz: Some(99),
            origin: Origin::Live,
            notes: vec![],
        }
    }

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.ts = 100.0;
        s.interval_s = 1.0;
        let rx = s.events.get_mut(&EventKey::NetRxSoftirq).unwrap();
        rx.per_cpu_ns = vec![250_000_000, 500_000_000];
        rx.total_ns = 750_000_000;
        rx.count = 3;
        s.softirq.get_mut(&SoftirqVector::NetRx).unwrap().total_ns = 750_000_000;
        s.losses.recursion_misses = 1;
        s.overhead.process_cpu_ns = 2_000_000;
        s.overhead.bpf_stats = true;
        s.overhead.bpf_stats_held_s = 0.1;
        s.overhead.bpf_run_time_ns = 3_000_000;
        s.overhead.bpf_error_ns = 500_000;
        s.overhead.cost_percent = Some(0.5);
        s.overhead.estimated = true;
        s.breakdown = vec![Breakdown {
            context: SampleContext::NetRx,
            samples: 10,
            agreement: Some(1.0),
            categories: vec![CategoryShare {
                category: "local_tcp".into(),
                samples: 10,
                share: 1.0,
                cpu_ns: 750_000_000,
            }],
        }];
        s
    }

    /// The value of the sample line that starts with `series`.
    fn value(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn the_budget_and_its_steps_are_exposed() {
        let metrics = Metrics::new(&info()).unwrap();
        metrics.add(&snapshot());
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert_eq!(value(&text, "netto_budget_percent"), 0.0);
        assert!(!text.contains("netto_budget_steps_total{"));
        let mut s = snapshot();
        let mut status = BudgetStatus {
            percent: 1.0,
            over: true,
            at_floor: false,
            asked_frequency_hz: Some(99),
            asked_sketch_probability: None,
            change: Some(BudgetChange::Down {
                from_hz: 99,
                to_hz: 49,
            }),
            steps_down: 1,
            steps_up: 0,
            knobs: Vec::new(),
        };
        s.budget = Some(status.clone());
        metrics.add(&s);
        status.change = Some(BudgetChange::AttributionOff);
        s.budget = Some(status.clone());
        metrics.add(&s);
        status.change = Some(BudgetChange::Exceeded);
        status.at_floor = true;
        s.budget = Some(status);
        metrics.add(&s);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert_eq!(value(&text, "netto_budget_percent"), 1.0);
        assert_eq!(value(&text, "netto_budget_exceeded"), 1.0);
        let steps = |d: &str| {
            value(
                &text,
                &format!("netto_budget_steps_total{{direction=\"{d}\"}}"),
            )
        };
        assert_eq!((steps("down"), steps("up")), (2.0, 0.0));

        // A calibration interval, over by design and not judged, changes
        // neither way what the last judged interval said.
        let mut calibrating = s.clone();
        calibrating.calibrating = Some(Tier::Sampled);
        calibrating.budget.as_mut().unwrap().change = None;
        metrics.add(&calibrating);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert_eq!(value(&text, "netto_budget_exceeded"), 1.0);
        let mut kept = s.clone();
        kept.budget.as_mut().unwrap().over = false;
        kept.budget.as_mut().unwrap().change = Some(BudgetChange::Kept);
        metrics.add(&kept);
        metrics.add(&calibrating);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert_eq!(value(&text, "netto_budget_exceeded"), 0.0);
    }

    #[test]
    fn estimates_count_in_the_event_series_and_are_marked_with_their_variance() {
        let metrics = Metrics::new(&info()).unwrap();
        metrics.add(&snapshot());
        let mut s = snapshot();
        s.tier = Tier::Softirq;
        let send = s.events.get_mut(&EventKey::SockSend).unwrap();
        send.per_cpu_ns = vec![0, 200_000_000];
        send.total_ns = 200_000_000;
        send.estimated = true;
        send.error_ns = Some(30_000_000);
        metrics.add(&s);
        metrics.add(&s);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        let estimated = r#"netto_estimated_cpu_seconds_total{cpu="1",event="sock_send"}"#;
        assert!((value(&text, estimated) - 0.4).abs() < 1e-9);
        let variance = r#"netto_estimated_cpu_seconds_variance_total{event="sock_send"}"#;
        assert!((value(&text, variance) - 2.0 * 0.03 * 0.03).abs() < 1e-12);
        // The event's series has its time however measured: the exact
        // first interval's (none on CPU 1) and both estimates.
        let all = r#"netto_cpu_seconds_total{cpu="1",event="sock_send"}"#;
        assert!((value(&text, all) - 0.4).abs() < 1e-9);
        assert_eq!(value(&text, r#"netto_estimated{event="sock_send"}"#), 1.0);
        assert_eq!(value(&text, r#"netto_estimated{event="sock_recv"}"#), 0.0);
        assert!(!text.contains(r#"netto_estimated_cpu_seconds_total{cpu="1",event="net_rx"#));
        assert_eq!(value(&text, r#"netto_tier{tier="softirq"}"#), 1.0);
        assert_eq!(value(&text, r#"netto_tier{tier="exact"}"#), 0.0);
        assert!(!text.contains("netto_estimate_agreement{"), "{text}");

        // The samples' agreement where the run measured the event: its
        // gauge, until an interval comes without it.
        s.events.get_mut(&EventKey::SockSend).unwrap().calibration = Some(Calibration {
            agreement: 0.85,
            samples: 200,
            ts: s.ts - 1.0,
        });
        metrics.add(&s);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        let agreement = r#"netto_estimate_agreement{event="sock_send"}"#;
        assert_eq!(value(&text, agreement), 0.85);
        let error = r#"netto_estimate_agreement_error{event="sock_send"}"#;
        assert!((value(&text, error) - 0.85 / 200f64.sqrt()).abs() < 1e-9);
        let at = r#"netto_estimate_calibration_timestamp_seconds{event="sock_send"}"#;
        assert_eq!(value(&text, at), s.ts - 1.0);
        assert!(!text.contains(r#"netto_estimate_agreement{event="sock_recv"}"#));
        metrics.add(&snapshot());
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert!(!text.contains("netto_estimate_agreement{"), "{text}");
        assert!(!text.contains("netto_estimate_agreement_error{"), "{text}");
        assert!(
            !text.contains("netto_estimate_calibration_timestamp_seconds{"),
            "{text}"
        );
        assert_eq!(value(&text, "netto_calibration_intervals_total"), 0.0);

        // A calibration interval is exact, and counted.
        let mut calibrating = snapshot();
        calibrating.calibrating = Some(Tier::Softirq);
        metrics.add(&calibrating);
        metrics.add(&s);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert_eq!(value(&text, "netto_calibration_intervals_total"), 1.0);
    }

    #[test]
    fn counters_accumulate_in_seconds_with_labels() {
        let metrics = Metrics::new(&info()).unwrap();
        metrics.add(&snapshot());
        metrics.add(&snapshot());
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        let rx = r#"netto_cpu_seconds_total{cpu="1",event="net_rx_softirq"}"#;
        assert_eq!(value(&text, rx), 1.0);
        assert_eq!(
            value(&text, r#"netto_event_runs_total{event="net_rx_softirq"}"#),
            6.0
        );
        assert_eq!(
            value(&text, r#"netto_softirq_cpu_seconds_total{vector="NET_RX"}"#),
            1.5
        );
        assert_eq!(
            value(
                &text,
                r#"netto_samples_total{category="local_tcp",context="net_rx"}"#
            ),
            20.0
        );
        assert_eq!(value(&text, "netto_intervals_total"), 2.0);
        assert!((value(&text, "netto_own_cpu_seconds_total") - 0.010).abs() < 1e-12);
        assert!((value(&text, "netto_own_cpu_error_seconds_total") - 0.001).abs() < 1e-12);
        assert!((value(&text, "netto_bpf_stats_held_seconds_total") - 0.2).abs() < 1e-12);
        assert_eq!(value(&text, "netto_overhead_cpu_percent"), 0.5);
        assert_eq!(
            value(&text, r#"netto_losses_total{kind="recursion_misses"}"#),
            2.0
        );
        assert_eq!(
            value(&text, r#"netto_losses_total{kind="task_storage_failures"}"#),
            0.0
        );
        assert!(text.contains("# TYPE netto_cpu_seconds_total counter"));
        assert!(text.contains("# HELP netto_cpu_seconds_total CPU time"));
        // Label values are escaped, not cut.
        assert!(text.contains(r#"host="box \"1\"""#), "{text}");
    }

    #[test]
    fn groups_have_series_while_shown_and_add_up_to_the_events() {
        use crate::model::Group;
        let metrics = Metrics::new(&info()).unwrap();
        let group = |name: &str, label: &str, rx: u64| {
            let mut events = Attribution::zero_events();
            events.insert(EventKey::NetRxSoftirq, rx);
            Group {
                name: name.into(),
                label: label.into(),
                events,
            }
        };
        let attributed = |groups: Vec<Group>| {
            let mut s = snapshot();
            let claimed: u64 = groups
                .iter()
                .map(|g| g.events[&EventKey::NetRxSoftirq])
                .sum();
            let mut unattributed = Attribution::zero_events();
            unattributed.insert(EventKey::NetRxSoftirq, 750_000_000 - claimed);
            s.attribution = Some(Attribution {
                by: GroupBy::Cgroup,
                on: true,
                groups,
                unattributed,
            });
            s
        };
        metrics.add(&attributed(vec![
            group("/a.service", "a.service", 500_000_000),
            group("/b", "b", 100_000_000),
        ]));
        metrics.add(&attributed(vec![group(
            "/a.service",
            "a.service",
            250_000_000,
        )]));
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        let series = |cgroup: &str, label: &str| {
            format!(
                r#"netto_cgroup_cpu_seconds_total{{cgroup="{cgroup}",event="net_rx_softirq",label="{label}"}}"#
            )
        };
        assert_eq!(value(&text, &series("/a.service", "a.service")), 0.75);
        assert_eq!(value(&text, &series("unattributed", "unattributed")), 0.65);
        assert!(
            !text.contains(r#"cgroup="/b""#),
            "a group no longer shown has no series:\n{text}"
        );
        assert_eq!(value(&text, "netto_attribution_on"), 1.0);
        assert!(text.contains("# TYPE netto_cgroup_cpu_seconds_total counter"));
    }

    #[test]
    fn stream_clients_gauge_and_dropped_counter() {
        let metrics = Metrics::new(&info()).unwrap();
        metrics.set_stream_clients(5, 0);
        metrics.set_stream_clients(3, 2);
        let text = String::from_utf8(metrics.encode().unwrap()).unwrap();
        assert_eq!(value(&text, "netto_stream_clients"), 3.0);
        assert_eq!(value(&text, "netto_stream_clients_dropped_total"), 2.0);
    }
}
