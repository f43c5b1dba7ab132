//! What netto could not measure in an interval, counted by kind.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Measurements lost over the interval, each counted where it happened;
/// dropped stack samples are in `SamplingStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Losses {
    /// Tasks switched out inside a socket call for which no task storage
    /// could be had: the rest of that call is charged to no event.
    pub task_storage_failures: u64,
    /// Runs of netto's BPF programs the kernel skipped because the program
    /// was already running on that CPU (`recursion_misses` of each
    /// program): transitions, or samples, not seen.
    pub recursion_misses: u64,
    /// Halves of the mmap sample buffer given up because a writer was
    /// still inside at the reader's deadline; their samples count in
    /// `sampling.dropped`.
    pub dropped_halves: u64,
    /// Parts of an event's time attribution could not give to their group
    /// because its map was full (or busy on that CPU): they stay in
    /// `attribution.unattributed`. Absent from recordings before it existed.
    #[serde(default)]
    pub attribution_misses: u64,
    /// Stack samples the CPUs' clocks were due for while they worked (not
    /// in idle time, `kernel::idle`) that the sampler never ran for: perf
    /// throttled its events (`kernel.perf_event_max_sample_rate`
    /// under the asked frequency, or perf interrupts that took too long),
    /// the kernel skipped the program while another BPF program ran on
    /// that CPU, or a virtual CPU was not running when its timer was due.
    /// Estimates from samples read low by as much. Absent from recordings
    /// before it existed.
    #[serde(default)]
    pub missed_samples: u64,
    /// Online CPUs the sampler had no perf event on at the interval's end
    /// (perf answers ENODEV for a CPU still coming up); netto asks again
    /// at every drain. Absent from recordings before it existed.
    #[serde(default)]
    pub unsampled_cpus: u64,
}

/// The losses of several intervals together.
impl std::iter::Sum for Losses {
    fn sum<I: Iterator<Item = Losses>>(iter: I) -> Losses {
        iter.fold(Losses::default(), |a, b| Losses {
            task_storage_failures: a.task_storage_failures + b.task_storage_failures,
            recursion_misses: a.recursion_misses + b.recursion_misses,
            dropped_halves: a.dropped_halves + b.dropped_halves,
            attribution_misses: a.attribution_misses + b.attribution_misses,
            missed_samples: a.missed_samples + b.missed_samples,
            unsampled_cpus: a.unsampled_cpus + b.unsampled_cpus,
        })
    }
}

/// One kind of loss, as the front ends name it.
pub struct LossKind {
    /// The JSON field (and the metric's `kind` label).
    pub name: &'static str,
    /// A few words for a crowded header line.
    pub short: &'static str,
    /// What was lost, in one line for someone who has not read the docs
    /// (stat's legend, top's help, the web page's tooltip).
    pub meaning: &'static str,
    pub count: fn(&Losses) -> u64,
}

impl Losses {
    /// Every kind of loss: the table stat, top and serve show.
    pub const KINDS: [LossKind; 6] = [
        LossKind {
            name: "task_storage_failures",
            short: "task windows",
            meaning: "socket calls switched out midway for which no task storage could be had: \
                      the rest of each such call is charged to no event",
            count: |l| l.task_storage_failures,
        },
        LossKind {
            name: "recursion_misses",
            short: "BPF runs",
            meaning: "runs of netto's programs the kernel skipped because the program was \
                      already running on that CPU: transitions or samples not seen",
            count: |l| l.recursion_misses,
        },
        LossKind {
            name: "dropped_halves",
            short: "sample halves",
            meaning: "halves of the sample buffer given up because a writer was still inside \
                      when netto read it; their samples count as dropped",
            count: |l| l.dropped_halves,
        },
        LossKind {
            name: "attribution_misses",
            short: "attributions",
            meaning: "parts of an event's time that could not go to their group because its map \
                      was full or busy: they count as unattributed",
            count: |l| l.attribution_misses,
        },
        LossKind {
            name: "missed_samples",
            short: "samples missed",
            meaning: "stack samples the CPU clocks were due for while the CPUs worked (idle \
                      time owes none) that never ran: perf throttled sampling \
                      (kernel.perf_event_max_sample_rate), the kernel skipped it, or a virtual CPU \
                      was not running; estimates from samples read low by as much",
            count: |l| l.missed_samples,
        },
        LossKind {
            name: "unsampled_cpus",
            short: "CPUs unsampled",
            meaning: "online CPUs perf would not sample yet (a CPU coming up): netto asks again \
                      at every drain",
            count: |l| l.unsampled_cpus,
        },
    ];

    /// Whether anything was lost.
    pub fn any(&self) -> bool {
        *self != Losses::default()
    }

    /// The kinds with a non-zero count, as `count short` phrases.
    pub fn describe(&self, label: fn(&LossKind) -> &'static str) -> Vec<String> {
        Losses::KINDS
            .iter()
            .filter(|kind| (kind.count)(self) > 0)
            .map(|kind| format!("{} {}", (kind.count)(self), label(kind)))
            .collect()
    }
}
