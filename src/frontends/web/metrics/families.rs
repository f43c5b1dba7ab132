//! Every metric family `/metrics` can serve, declared once: its name as
//! served (counters end in `_total`), type, labels and help. [`super::Metrics`]
//! registers its collectors from these rows, and the metrics reference page
//! (docs/src/reference/metrics.md) is rendered from them, so neither can
//! name a family, a label or a help text the other does not.
//! `declaration.rs` says what a row holds, `labels.rs` the labels the rows
//! share; this file is the table.

mod declaration;
mod labels;

use super::super::otlp::dropped::Dropped;

use crate::model::GroupBy;
pub use declaration::{Concern, Family, Kind, Label};
use labels::*;
pub use labels::{DOWN, UP};

pub const INFO: Family = Family {
    name: "netto_info",
    kind: Kind::Gauge,
    concern: Concern::Run,
    labels: &[HOST, KERNEL, BACKEND, SOURCE, VERSION],
    help: "Where the numbers come from; always 1 (join on its labels).",
};

pub const EVENT_SECONDS: Family = Family {
    name: "netto_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::Events,
    labels: &[EVENT, CPU],
    help: "CPU time in a network event (softirq, socket call, network timers), per CPU, \
           however it was measured: one series per event and CPU whatever the tier, so \
           rate() holds across tier changes (netto_estimated says whether the last interval's \
           figure was an estimate; netto_estimated_cpu_seconds_total is the estimated part).",
};

pub const EVENT_RUNS: Family = Family {
    name: "netto_event_runs_total",
    kind: Kind::Counter,
    concern: Concern::Events,
    labels: &[EVENT],
    help: "How many times a network event ran (softirq runs, socket calls, timer callbacks).",
};

pub const SOFTIRQ_SECONDS: Family = Family {
    name: "netto_softirq_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::Events,
    labels: &[VECTOR],
    help: "CPU time in each softirq vector, network or not.",
};

pub const SOFTIRQ_RUNS: Family = Family {
    name: "netto_softirq_runs_total",
    kind: Kind::Counter,
    concern: Concern::Events,
    labels: &[VECTOR],
    help: "Runs of each softirq vector.",
};

pub const HARDIRQ_SECONDS: Family = Family {
    name: "netto_hardirq_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::Events,
    labels: &[CPU],
    help: "CPU time in hardware interrupt handlers, per CPU.",
};

pub const TIMER_CALLBACK_SECONDS: Family = Family {
    name: "netto_net_timer_callback_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::Events,
    labels: &[CALLBACK],
    help: "CPU time of network timer callbacks by kernel function (they sum to event net_timers).",
};

/// The time of one `--by`'s groups: three families alike but for the group
/// label and the words for a group.
macro_rules! group_seconds {
    ($name:literal, $group:expr, $what:literal, $by:literal) => {
        Family {
            name: $name,
            kind: Kind::Counter,
            concern: Concern::WhoPays,
            labels: &[$group, GROUP_LABEL, EVENT],
            help: concat!(
                "Network CPU time attributed to each ",
                $what,
                " (--by ",
                $by,
                "), per event: the heaviest --max-groups, `other` for the rest, `unattributed` \
                 for time no group claimed; they add up to netto_cpu_seconds_total."
            ),
        }
    };
}

pub const PID_SECONDS: Family =
    group_seconds!("netto_pid_cpu_seconds_total", PID, "process", "process");

pub const CGROUP_SECONDS: Family = group_seconds!(
    "netto_cgroup_cpu_seconds_total",
    CGROUP,
    "cgroup (v2 path)",
    "cgroup"
);

pub const NETNS_SECONDS: Family = group_seconds!(
    "netto_netns_cpu_seconds_total",
    NETNS,
    "network namespace (inode)",
    "netns"
);

pub const FLOW_SECONDS: Family =
    group_seconds!("netto_flow_cpu_seconds_total", FLOW, "connection", "flow");

pub const PORT_SECONDS: Family = group_seconds!(
    "netto_port_cpu_seconds_total",
    PORT,
    "service port and direction",
    "port"
);

/// The family of `by`'s groups.
pub fn group_seconds(by: GroupBy) -> &'static Family {
    match by {
        GroupBy::Process => &PID_SECONDS,
        GroupBy::Cgroup => &CGROUP_SECONDS,
        GroupBy::Netns => &NETNS_SECONDS,
        GroupBy::Flow => &FLOW_SECONDS,
        GroupBy::Port => &PORT_SECONDS,
    }
}

pub const ATTRIBUTION_ON: Family = Family {
    name: "netto_attribution_on",
    kind: Kind::Gauge,
    concern: Concern::WhoPays,
    labels: &[],
    help: "1 while attribution (--by) runs, 0 while it is turned off (all time unattributed).",
};

pub const SAMPLES: Family = Family {
    name: "netto_samples_total",
    kind: Kind::Counter,
    concern: Concern::Breakdown,
    labels: &[CONTEXT, CATEGORY],
    help: "Kernel stack samples by network context and category.",
};

pub const CATEGORY_SECONDS: Family = Family {
    name: "netto_category_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::Breakdown,
    labels: &[CONTEXT, CATEGORY],
    help: "Exact event CPU time divided between categories by their share of samples.",
};

pub const SAMPLING_FREQUENCY: Family = Family {
    name: "netto_sampling_frequency_hertz",
    kind: Kind::Gauge,
    concern: Concern::Breakdown,
    labels: &[],
    help: "Stack samples per second per CPU in the last interval; 0 when not sampling.",
};

pub const SAMPLES_SOFTIRQ_LOOP: Family = Family {
    name: "netto_samples_softirq_loop_total",
    kind: Kind::Counter,
    concern: Concern::Breakdown,
    labels: &[],
    help: "Stack samples taken in the softirq loop while a socket call was open: interrupt time, \
           left out of every context.",
};

pub const NETTO_PROCESS_SECONDS: Family = Family {
    name: "netto_process_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[],
    help: "CPU time of netto's own processes (user + system): netto, and serve's HTTP server.",
};

pub const SERVING_SECONDS: Family = Family {
    name: "netto_serving_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[],
    help: "The part of netto_process_cpu_seconds_total that serve's HTTP server process took \
           (exited threads included) but for its OTLP exporter: serving, which --serve-budget \
           bounds, not measuring, which --budget bounds.",
};

pub const EXPORT_SECONDS: Family = Family {
    name: "netto_export_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[],
    help: "The part of netto_process_cpu_seconds_total that serve's OTLP exporter took \
           (--otlp-endpoint): exporting, which --otlp-budget bounds.",
};

pub const OWN_SECONDS: Family = Family {
    name: "netto_own_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[],
    help: "netto's whole cost: its processes' CPU time plus its BPF programs' run time \
           (estimated while BPF statistics are on a duty cycle, see \
           netto_own_cpu_error_seconds_total).",
};

pub const OWN_ERROR_SECONDS: Family = Family {
    name: "netto_own_cpu_error_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[],
    help: "The errors of the intervals' estimates in netto_own_cpu_seconds_total, added up \
           (a bound: they are independent).",
};

pub const STATS_HELD_SECONDS: Family = Family {
    name: "netto_bpf_stats_held_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[],
    help: "Time netto held BPF run-time statistics on (every BPF program on the host runs \
           slower then).",
};

pub const BPF_RUN_SECONDS: Family = Family {
    name: "netto_bpf_program_run_seconds_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[PROGRAM],
    help: "Run time of netto's BPF programs (estimated while BPF statistics are on a duty cycle).",
};

pub const BPF_RUNS: Family = Family {
    name: "netto_bpf_program_runs_total",
    kind: Kind::Counter,
    concern: Concern::OwnCost,
    labels: &[PROGRAM],
    help: "Runs of netto's BPF programs (estimated for a program of a hook with several).",
};

pub const EBPF_PROGRAM_SECONDS: Family = Family {
    name: "netto_ebpf_program_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::NetworkPrograms,
    labels: &[PROGRAM, ATTACH, IFACE],
    help: "Run time of the host's BPF programs on the network path, without entering them \
           (dispatch); estimated from netto's slice of BPF statistics unless something else \
           held them on.",
};

pub const EBPF_PROGRAM_RUNS: Family = Family {
    name: "netto_ebpf_program_runs_total",
    kind: Kind::Counter,
    concern: Concern::NetworkPrograms,
    labels: &[PROGRAM, ATTACH, IFACE],
    help: "Runs of the host's BPF programs on the network path (estimated as their run time).",
};

pub const OVERHEAD_PERCENT: Family = Family {
    name: "netto_overhead_cpu_percent",
    kind: Kind::Gauge,
    concern: Concern::OwnCost,
    labels: &[],
    help: "netto's whole cost in the last interval, percent of one CPU \
           (rate(netto_own_cpu_seconds_total) * 100 over any window).",
};

pub const TIERS: Family = Family {
    name: "netto_tier",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[TIER],
    help: "1 for the tier of the last interval (exact, softirq, sampled), 0 for the others.",
};

pub const ESTIMATED_SECONDS: Family = Family {
    name: "netto_estimated_cpu_seconds_total",
    kind: Kind::Counter,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT, CPU],
    help: "The part of netto_cpu_seconds_total estimated from stack samples, per CPU: what \
           the tier in force does not measure.",
};

pub const ESTIMATED: Family = Family {
    name: "netto_estimated",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT],
    help: "1 when the event's time in the last interval is an estimate from stack samples \
           (the tier in force does not measure it), 0 when it was measured exactly.",
};

pub const ESTIMATED_VARIANCE: Family = Family {
    name: "netto_estimated_cpu_seconds_variance_total",
    kind: Kind::Counter,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT],
    help: "Sum of the squared standard errors of netto_estimated_cpu_seconds_total, in s^2: \
           the error of an increase over a range is the square root of this one's increase.",
};

pub const ESTIMATE_AGREEMENT: Family = Family {
    name: "netto_estimate_agreement",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT],
    help: "For an event estimated in the last interval: its tier's calibration, the \
           estimate over the exact time in the run's newest calibration intervals \
           (--calibrate-every); absent before the first.",
};

pub const ESTIMATE_CALIBRATION_APPLIED: Family = Family {
    name: "netto_estimate_calibration_applied",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT],
    help: "1 when the event's estimate (netto_cpu_seconds_total and its variance) is \
           divided by netto_estimate_agreement, 0 when that rests on too few samples; \
           absent with it.",
};

pub const ESTIMATE_AGREEMENT_ERROR: Family = Family {
    name: "netto_estimate_agreement_error",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT],
    help: "One standard error of netto_estimate_agreement (its samples' count or, where \
           larger, how its intervals scatter); absent with it.",
};

pub const ESTIMATE_CALIBRATION_TIMESTAMP: Family = Family {
    name: "netto_estimate_calibration_timestamp_seconds",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[EVENT],
    help: "Unix time of the end of the newest interval netto_estimate_agreement rests \
           on; absent with it.",
};

pub const CALIBRATION_INTERVALS: Family = Family {
    name: "netto_calibration_intervals_total",
    kind: Kind::Counter,
    concern: Concern::TiersAndBudget,
    labels: &[],
    help: "Intervals a run in a tier that estimates measured exactly, to calibrate its \
           estimates (--calibrate-every).",
};

pub const BUDGET_PERCENT: Family = Family {
    name: "netto_budget_percent",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[],
    help: "The budget netto keeps measuring's cost under (--budget), percent of one CPU; \
           0 without one.",
};

pub const BUDGET_EXCEEDED: Family = Family {
    name: "netto_budget_exceeded",
    kind: Kind::Gauge,
    concern: Concern::TiersAndBudget,
    labels: &[],
    help: "1 while netto costs more than its budget with every knob at its floor, else 0.",
};

pub const BUDGET_STEPS: Family = Family {
    name: "netto_budget_steps_total",
    kind: Kind::Counter,
    concern: Concern::TiersAndBudget,
    labels: &[DIRECTION],
    help: "Steps the budget took (sampling frequency, attribution, tier), by direction (down, up).",
};

pub const LOSSES: Family = Family {
    name: "netto_losses_total",
    kind: Kind::Counter,
    concern: Concern::Losses,
    labels: &[LOSS_KIND],
    help: "Measurements lost, by kind: task_storage_failures (socket windows of switched-out tasks), \
           recursion_misses (BPF program runs the kernel skipped), dropped_halves (sample buffer halves \
           given up, their samples in netto_samples_dropped_total), attribution_misses (time the \
           attribution's group map had no room for, left unattributed), missed_samples (stack \
           samples perf throttled or the kernel skipped), unsampled_cpus (online CPUs perf would not \
           sample yet, once per interval).",
};

pub const SAMPLES_DROPPED: Family = Family {
    name: "netto_samples_dropped_total",
    kind: Kind::Counter,
    concern: Concern::Losses,
    labels: &[],
    help: "Stack samples lost because the sample buffer was full.",
};

pub const STACK_FAILURES: Family = Family {
    name: "netto_stack_failures_total",
    kind: Kind::Counter,
    concern: Concern::Losses,
    labels: &[],
    help: "Stack samples whose kernel stack could not be read.",
};

pub const INTERVALS: Family = Family {
    name: "netto_intervals_total",
    kind: Kind::Counter,
    concern: Concern::Run,
    labels: &[],
    help: "Snapshots (measuring intervals) received.",
};

pub const MEASURED_SECONDS: Family = Family {
    name: "netto_measured_seconds_total",
    kind: Kind::Counter,
    concern: Concern::Run,
    labels: &[],
    help: "Wall-clock time covered by the snapshots received.",
};

pub const LAST_SNAPSHOT: Family = Family {
    name: "netto_last_snapshot_timestamp_seconds",
    kind: Kind::Gauge,
    concern: Concern::Run,
    labels: &[],
    help: "End of the last interval received, unix time.",
};

pub const STREAM_CLIENTS: Family = Family {
    name: "netto_stream_clients",
    kind: Kind::Gauge,
    concern: Concern::Run,
    labels: &[],
    help: "Web clients connected to the snapshot stream.",
};

pub const STREAM_CLIENTS_DROPPED: Family = Family {
    name: "netto_stream_clients_dropped_total",
    kind: Kind::Counter,
    concern: Concern::Run,
    labels: &[],
    help: "Stream clients disconnected because they fell too far behind.",
};

const DROP_REASON: Label = Label {
    name: "reason",
    meaning: "Why an OTLP window was not delivered: queue_full (the receiver fell behind), \
              unreachable, timeout, rejected (an error answer, or profiles it refused).",
    values: Some(|| Dropped::ALL.map(Dropped::name).to_vec()),
};

pub const OTLP_WINDOWS_SENT: Family = Family {
    name: "netto_otlp_windows_sent_total",
    kind: Kind::Counter,
    concern: Concern::Run,
    labels: &[],
    help: "Windows of profiles serve --otlp-endpoint delivered to the receiver.",
};

pub const OTLP_WINDOWS_DROPPED: Family = Family {
    name: "netto_otlp_windows_dropped_total",
    kind: Kind::Counter,
    concern: Concern::Run,
    labels: &[DROP_REASON],
    help: "Windows of profiles serve --otlp-endpoint did not deliver, by reason (queue_full, \
           unreachable, timeout, rejected); measuring goes on regardless.",
};

/// Every family, in the order the reference page lists them within each
/// concern.
pub const FAMILIES: &[&Family] = &[
    &EVENT_SECONDS,
    &EVENT_RUNS,
    &SOFTIRQ_SECONDS,
    &SOFTIRQ_RUNS,
    &HARDIRQ_SECONDS,
    &TIMER_CALLBACK_SECONDS,
    &PID_SECONDS,
    &CGROUP_SECONDS,
    &NETNS_SECONDS,
    &FLOW_SECONDS,
    &PORT_SECONDS,
    &ATTRIBUTION_ON,
    &SAMPLES,
    &CATEGORY_SECONDS,
    &SAMPLING_FREQUENCY,
    &SAMPLES_SOFTIRQ_LOOP,
    &EBPF_PROGRAM_SECONDS,
    &EBPF_PROGRAM_RUNS,
    &NETTO_PROCESS_SECONDS,
    &SERVING_SECONDS,
    &EXPORT_SECONDS,
    &OWN_SECONDS,
    &OWN_ERROR_SECONDS,
    &STATS_HELD_SECONDS,
    &BPF_RUN_SECONDS,
    &BPF_RUNS,
    &OVERHEAD_PERCENT,
    &TIERS,
    &ESTIMATED,
    &ESTIMATED_SECONDS,
    &ESTIMATED_VARIANCE,
    &ESTIMATE_AGREEMENT,
    &ESTIMATE_AGREEMENT_ERROR,
    &ESTIMATE_CALIBRATION_TIMESTAMP,
    &ESTIMATE_CALIBRATION_APPLIED,
    &CALIBRATION_INTERVALS,
    &BUDGET_PERCENT,
    &BUDGET_EXCEEDED,
    &BUDGET_STEPS,
    &LOSSES,
    &SAMPLES_DROPPED,
    &STACK_FAILURES,
    &INFO,
    &INTERVALS,
    &MEASURED_SECONDS,
    &LAST_SNAPSHOT,
    &STREAM_CLIENTS,
    &STREAM_CLIENTS_DROPPED,
    &OTLP_WINDOWS_SENT,
    &OTLP_WINDOWS_DROPPED,
];

#[cfg(test)]
mod tests;
