//! Reading a recording (`netto record -o run.json`) for `report`, `top
//! --replay`, `serve --replay` and the replay source, with one check of
//! everything those front ends rely on. A file that parses is not yet a
//! recording the front ends can draw: a missing event key, an array
//! shorter than `cpus` or an interval of 1e19 s would panic or hang them,
//! so [`load`] refuses such a file with one line naming what is wrong and
//! where (`snapshots[3].events: lacks net_timers`), and the replay source
//! only takes a [`ValidRecording`].

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::ops::Deref;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use thiserror::Error;

use crate::kernel::sampler::MAX_FREQUENCY_HZ;
use crate::model::{
    Attribution, BudgetChange, CpuTime, EventKey, Recording, RecordingHeader, Snapshot,
    SoftirqVector, StackCount, Tier, MAX_BUDGET_PERCENT,
};

/// Most CPUs a recording may have: the kernel's own ceiling (`NR_CPUS`
/// is at most 8192 on x86-64 with MAXSMP, and on arm64 and powerpc). A
/// larger count is a corrupt file, and `top`'s per-CPU grid is this big.
pub const MAX_CPUS: usize = 8192;

/// How far a measured time may exceed the time it was measured over. The
/// BPF side charges time at a CPU's next transition, so a window open at
/// an interval's end counts in the next one, and the CPUs are read one
/// after another; both move a little time across interval boundaries, and
/// timers fire late, so a measured interval overruns the one asked for.
/// Anything beyond 25 % plus 100 ms is not a measurement.
const OVERRUN_SHARE: f64 = 0.25;
const OVERRUN_S: f64 = 0.1;

/// The longest a recording can have measured, in one interval or in all of
/// them: intervals are timed on the monotonic clock, which counts from
/// boot, and no host stays up for a century. An interval may be far
/// longer than the one asked for: netto stopped (Ctrl-Z) or its host
/// paused, the interval in progress lasts until it runs again.
pub const MAX_MEASURED_S: f64 = 100.0 * 365.25 * 86400.0;

/// What `--max-recording-size` is unless given: recordings are read whole.
pub const DEFAULT_MAX_RECORDING_SIZE: u64 = 1 << 30;

/// The most a measured time (or interval) spanning `seconds` can be.
fn with_overrun(seconds: f64) -> f64 {
    seconds * (1.0 + OVERRUN_SHARE) + OVERRUN_S
}

/// Why a recording cannot be used.
#[derive(Debug, Error)]
pub enum RecordingError {
    /// The cause is part of the message (not a `source`), so the one line
    /// netto prints says it once.
    #[error("cannot read {path}: {cause}")]
    Read { path: String, cause: std::io::Error },
    /// A directory, a FIFO, a device, a socket: a recording is a file
    /// (reading a FIFO could block for ever, a device never end).
    #[error("{path} is {kind}, not a regular file: a recording is a file")]
    NotAFile { path: String, kind: &'static str },
    #[error("{path} is larger than --max-recording-size ({limit} bytes)")]
    TooLarge { path: String, limit: u64 },
    /// Not the JSON of a recording: a syntax error, a missing field, a
    /// value of the wrong type.
    #[error("{path} is not a netto recording: {problem}")]
    Malformed { path: String, problem: Invalid },
    /// Snapshots a line each, as `netto stat --json` writes them: the
    /// likeliest file to be taken for a recording.
    #[error(
        "{path} is `netto stat --json` output (a snapshot per line), not a recording; \
         `netto record --duration SECONDS -o FILE.json` records one"
    )]
    StatOutput { path: String },
    /// A recording in form, whose contents no run could have measured.
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: Invalid },
}

impl RecordingError {
    /// Bad input, as opposed to a file that could not be read.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, RecordingError::Read { .. })
    }
}

/// What is wrong, and where (a JSON path such as `snapshots[3].cpus`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{at}: {problem}")]
pub struct Invalid {
    pub at: String,
    pub problem: String,
}

fn invalid(at: impl Into<String>, problem: impl Into<String>) -> Invalid {
    Invalid {
        at: at.into(),
        problem: problem.into(),
    }
}

/// A recording that passed [`validate`]: the only kind the replay source
/// plays.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRecording(Recording);

impl ValidRecording {
    pub fn new(recording: Recording) -> Result<ValidRecording, Invalid> {
        validate(&recording)?;
        Ok(ValidRecording(recording))
    }

    pub fn into_inner(self) -> Recording {
        self.0
    }
}

impl Deref for ValidRecording {
    type Target = Recording;

    fn deref(&self) -> &Recording {
        &self.0
    }
}

/// Reads, parses and validates the recording at `path`, of at most
/// [`DEFAULT_MAX_RECORDING_SIZE`] bytes.
pub fn load(path: &Path) -> Result<ValidRecording, RecordingError> {
    load_within(path, DEFAULT_MAX_RECORDING_SIZE)
}

/// Reads, parses and validates the recording at `path`, a regular file of
/// at most `limit` bytes (`--max-recording-size`).
pub fn load_within(path: &Path, limit: u64) -> Result<ValidRecording, RecordingError> {
    let name = path.display().to_string();
    let bytes = read_within(path, limit)?;
    let recording = parse(&bytes).map_err(|problem| {
        if is_stat_output(&bytes) {
            RecordingError::StatOutput { path: name.clone() }
        } else {
            RecordingError::Malformed {
                path: name.clone(),
                problem,
            }
        }
    })?;
    ValidRecording::new(recording).map_err(|problem| RecordingError::Invalid {
        path: name,
        problem,
    })
}

/// The bytes of the regular file at `path`, if there are at most `limit`.
/// Its type is looked at before it is opened (opening a device can do
/// something) and again once open, without blocking (a FIFO put there
/// meanwhile is refused, not waited on); reading stops past `limit`, in
/// case the file grows.
fn read_within(path: &Path, limit: u64) -> Result<Vec<u8>, RecordingError> {
    let name = || path.display().to_string();
    let read_error = |cause| RecordingError::Read {
        path: name(),
        cause,
    };
    let regular = |file_type: fs::FileType| {
        if file_type.is_file() {
            return Ok(());
        }
        let kind = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_fifo() {
            "a FIFO"
        } else if file_type.is_char_device() {
            "a character device"
        } else if file_type.is_block_device() {
            "a block device"
        } else if file_type.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        Err(RecordingError::NotAFile { path: name(), kind })
    };
    regular(fs::metadata(path).map_err(read_error)?.file_type())?;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    regular(meta.file_type())?;
    let too_large = || RecordingError::TooLarge {
        path: name(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Whether `bytes` begin with a snapshot on a line of its own, as `netto
/// stat --json` writes them.
fn is_stat_output(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<Snapshot>(first).is_ok()
}

/// The recording in `bytes`, or where its JSON goes wrong.
pub fn parse(bytes: &[u8]) -> Result<Recording, Invalid> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let recording: Recording = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let at = e.path().to_string();
        invalid(
            if at == "." { "the file" } else { &at },
            e.inner().to_string(),
        )
    })?;
    json.end()
        .map_err(|e| invalid("the file", format!("{e} (after the recording)")))?;
    Ok(recording)
}

/// Everything the front ends rely on: the header in range; per snapshot
/// every event and softirq vector present with one value per CPU, totals
/// that are the sums of those values, times a CPU could have spent in the
/// interval, timestamps in order, breakdown shares in [0, 1], stack
/// frames that are names (no kernel address, nothing that would break
/// the folded format).
pub fn validate(recording: &Recording) -> Result<(), Invalid> {
    let mut checker = Checker::new(&recording.header)?;
    recording
        .snapshots
        .iter()
        .try_for_each(|snapshot| checker.next(snapshot))
}

/// [`validate`] one snapshot at a time, for a writer that makes a
/// recording as it goes (the agent's recording endpoint) rather than
/// holding all of it.
pub struct Checker<'h> {
    header: &'h RecordingHeader,
    /// Snapshots checked so far.
    count: usize,
    previous_ts: f64,
    /// What the intervals add up to: bounded, it bounds what the front
    /// ends add up over any range of snapshots (the stack samples of a
    /// century on MAX_CPUS at MAX_FREQUENCY_HZ fit 64 bits).
    measured_s: f64,
}

impl<'h> Checker<'h> {
    /// Checks the header.
    pub fn new(header: &'h RecordingHeader) -> Result<Checker<'h>, Invalid> {
        check_frequency("header.frequency_hz", header.frequency_hz)?;
        check_seconds("header.started", header.started, f64::MAX)?;
        check_seconds("header.duration_s", header.duration_s, MAX_MEASURED_S)?;
        Ok(Checker {
            header,
            count: 0,
            previous_ts: f64::NEG_INFINITY,
            measured_s: 0.0,
        })
    }

    /// Checks the recording's next snapshot.
    pub fn next(&mut self, snapshot: &Snapshot) -> Result<(), Invalid> {
        let header = self.header;
        let at = format!("snapshots[{}]", self.count);
        self.count += 1;
        let transport = snapshot.sampling.as_ref().map(|s| &s.transport);
        for (field, value, header_value) in [
            ("backend", Some(&snapshot.backend), &header.backend),
            ("sampling.transport", transport, &header.transport),
        ] {
            if let Some(value) = value.filter(|&v| v != header_value) {
                return Err(invalid(
                    format!("{at}.{field}"),
                    format!("{value:?} differs from the header's {header_value:?}"),
                ));
            }
        }
        check_snapshot(&at, snapshot)?;
        if snapshot.ts < self.previous_ts {
            return Err(invalid(
                format!("{at}.ts"),
                format!(
                    "{} is before the previous snapshot's {}",
                    snapshot.ts, self.previous_ts
                ),
            ));
        }
        self.previous_ts = snapshot.ts;
        self.measured_s += snapshot.interval_s;
        if self.measured_s > MAX_MEASURED_S {
            return Err(invalid(
                format!("{at}.interval_s"),
                "the intervals up to here add up to more than a century",
            ));
        }
        Ok(())
    }
}

fn check_snapshot(at: &str, s: &Snapshot) -> Result<(), Invalid> {
    check_seconds(&format!("{at}.ts"), s.ts, f64::MAX)?;
    check_seconds(&format!("{at}.interval_s"), s.interval_s, MAX_MEASURED_S)?;
    if !(1..=MAX_CPUS).contains(&s.cpus) {
        return Err(invalid(
            format!("{at}.cpus"),
            format!("{} is outside 1-{MAX_CPUS}", s.cpus),
        ));
    }
    if let Some(back) = s
        .calibrating
        .filter(|&back| s.tier != Tier::Exact || back == Tier::Exact)
    {
        return Err(invalid(
            format!("{at}.calibrating"),
            format!(
                "is {} in the {} tier: a calibration interval is exact, for a run in a tier \
                 that estimates",
                back.name(),
                s.tier.name()
            ),
        ));
    }
    // Nanoseconds one CPU can have spent in the interval.
    let cpu_ns = with_overrun(s.interval_s) * 1e9;
    for key in EventKey::ALL {
        let time = s
            .events
            .get(&key)
            .ok_or_else(|| invalid(format!("{at}.events"), format!("lacks {}", key.name())))?;
        check_time(&format!("{at}.events.{}", key.name()), time, s.cpus, cpu_ns)?;
        check_estimate(&format!("{at}.events.{}", key.name()), time, s, key)?;
    }
    // The sampled tier measures no vector and no hardirq time: it has none.
    let vectors = if s.tier.measures(EventKey::NetRxSoftirq) {
        &SoftirqVector::ALL[..]
    } else {
        &[]
    };
    for &vector in vectors {
        let time = s
            .softirq
            .get(&vector)
            .ok_or_else(|| invalid(format!("{at}.softirq"), format!("lacks {}", vector.name())))?;
        check_time(
            &format!("{at}.softirq.{}", vector.name()),
            time,
            s.cpus,
            cpu_ns,
        )?;
    }
    if !vectors.is_empty() {
        check_time(&format!("{at}.hardirq"), &s.hardirq, s.cpus, cpu_ns)?;
    }
    // The front ends add events up, and vectors.
    let events = checked_sum(0, s.events.values().map(|t| t.total_ns));
    let vectors = checked_sum(0, s.softirq.values().map(|t| t.total_ns));
    for (field, sum) in [("events", events), ("softirq", vectors)] {
        sum.ok_or_else(|| invalid(format!("{at}.{field}"), OVERFLOW))?;
    }
    // What all CPUs together can have spent.
    let host_ns = cpu_ns * s.cpus as f64;
    let callbacks = s.net_timer_callbacks.values().map(|&ns| ns as f64).sum();
    check_at_most(&format!("{at}.net_timer_callbacks"), callbacks, host_ns)?;
    check_at_most(
        &format!("{at}.overhead.process_cpu_ns"),
        s.overhead.process_cpu_ns as f64,
        host_ns,
    )?;
    check_at_most(
        &format!("{at}.overhead.serving_cpu_ns"),
        s.overhead.serving_cpu_ns as f64,
        s.overhead.process_cpu_ns as f64,
    )?;
    check_at_most(
        &format!("{at}.overhead.bpf_run_time_ns"),
        s.overhead.bpf_run_time_ns as f64,
        host_ns,
    )?;
    check_at_most(
        &format!("{at}.overhead.bpf_error_ns"),
        s.overhead.bpf_error_ns as f64,
        host_ns,
    )?;
    check_seconds(
        &format!("{at}.overhead.bpf_stats_held_s"),
        s.overhead.bpf_stats_held_s,
        with_overrun(s.interval_s),
    )?;
    // In percent of one CPU over the interval.
    let host_percent = if s.interval_s > 0.0 {
        host_ns / (s.interval_s * 1e9) * 100.0
    } else {
        0.0
    };
    for (field, value) in [
        ("cost_percent", s.overhead.cost_percent),
        ("measuring_percent", s.overhead.measuring_percent),
        ("serving_percent", s.overhead.serving_percent),
    ] {
        if let Some(value) = value {
            check_percent(&format!("{at}.overhead.{field}"), value, host_percent)?;
        }
    }
    check_percent(
        &format!("{at}.overhead.error_percent"),
        s.overhead.error_percent,
        host_percent,
    )?;
    if let Some(budget) = &s.budget {
        check_percent(
            &format!("{at}.budget.percent"),
            budget.percent,
            MAX_BUDGET_PERCENT,
        )?;
        if let Some(hz) = budget.asked_frequency_hz {
            check_frequency(&format!("{at}.budget.asked_frequency_hz"), hz)?;
        }
        if let Some(p) = budget.asked_sketch_probability {
            check_probability(&format!("{at}.budget.asked_sketch_probability"), p)?;
        }
        if let Some(BudgetChange::SketchDown { from, to } | BudgetChange::SketchUp { from, to }) =
            budget.change
        {
            check_probability(&format!("{at}.budget.change.from"), from)?;
            check_probability(&format!("{at}.budget.change.to"), to)?;
        }
    }
    if let Some(sampling) = &s.sampling {
        check_frequency(
            &format!("{at}.sampling.frequency_hz"),
            sampling.frequency_hz,
        )?;
        check_at_most(
            &format!("{at}.sampling.softirq_loop"),
            sampling.softirq_loop as f64,
            sampling.samples as f64,
        )?;
    }
    // The sampler takes at most one sample per period per CPU.
    let most_samples = host_ns / 1e9 * MAX_FREQUENCY_HZ as f64;
    check_breakdown(at, s, most_samples)?;
    check_stacks(at, s, most_samples)?;
    if let Some(attribution) = &s.attribution {
        check_attribution(&format!("{at}.attribution"), attribution, s)?;
    }
    if let Some(sketch) = &s.sketch {
        let at = format!("{at}.sketch");
        check_seconds(
            &format!("{at}.interval_s"),
            sketch.interval_s,
            MAX_MEASURED_S,
        )?;
        check_probability(&format!("{at}.probability"), sketch.probability)?;
        // A flow's share is an estimate over an exact total: netto keeps
        // the shares it writes within 1 together, but only the estimate's
        // own error bounds one, so any number >= 0 is one.
        for (j, flow) in sketch.top.iter().enumerate() {
            check_seconds(&format!("{at}.top[{j}].share"), flow.share, f64::MAX)?;
        }
        check_seconds(
            &format!("{at}.cost.ns_per_packet"),
            sketch.cost.ns_per_packet,
            f64::MAX,
        )?;
        check_seconds(
            &format!("{at}.cost.cpu_percent"),
            sketch.cost.cpu_percent,
            f64::MAX,
        )?;
    }
    Ok(())
}

/// Most groups an attribution can show: `--max-groups`' bound and `other`.
const MAX_SHOWN_GROUPS: usize = 1001;
/// Longest group name or label: a cgroup path is at most PATH_MAX.
const MAX_GROUP_NAME: usize = 4096;

/// Groups with every event, named in text a terminal shows as it is, and
/// with `unattributed` adding up to each event's total.
fn check_attribution(at: &str, a: &Attribution, s: &Snapshot) -> Result<(), Invalid> {
    if a.groups.len() > MAX_SHOWN_GROUPS {
        return Err(invalid(
            format!("{at}.groups"),
            format!("{} groups, more than {MAX_SHOWN_GROUPS}", a.groups.len()),
        ));
    }
    if !a.on && !a.groups.is_empty() {
        return Err(invalid(
            format!("{at}.groups"),
            "groups while attribution was off",
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for (j, group) in a.groups.iter().enumerate() {
        let at = format!("{at}.groups[{j}]");
        // Names and labels are the host's (a process names itself, anyone
        // with a delegated subtree names cgroups): any text, control
        // characters and blanks included, which the front ends print
        // escaped. A name identifies its group, so it is never empty.
        if group.name.is_empty() {
            return Err(invalid(format!("{at}.name"), "is empty"));
        }
        for (field, text) in [("name", &group.name), ("label", &group.label)] {
            if text.len() > MAX_GROUP_NAME {
                return Err(invalid(
                    format!("{at}.{field}"),
                    format!("is longer than {MAX_GROUP_NAME} bytes"),
                ));
            }
        }
        if !names.insert(group.name.as_str()) {
            return Err(invalid(
                format!("{at}.name"),
                format!("{:?} appears twice", group.name),
            ));
        }
        checked_sum(0, group.events.values().copied())
            .ok_or_else(|| invalid(format!("{at}.events"), OVERFLOW))?;
    }
    checked_sum(0, a.unattributed.values().copied())
        .ok_or_else(|| invalid(format!("{at}.unattributed"), OVERFLOW))?;
    for key in EventKey::ALL {
        let part = |events: &BTreeMap<EventKey, u64>, at: String| {
            events
                .get(&key)
                .map(|&ns| u128::from(ns))
                .ok_or_else(|| invalid(at, format!("lacks {}", key.name())))
        };
        let mut sum = part(&a.unattributed, format!("{at}.unattributed"))?;
        for (j, group) in a.groups.iter().enumerate() {
            sum += part(&group.events, format!("{at}.groups[{j}].events"))?;
        }
        let total = s.event(key).total_ns;
        if sum != u128::from(total) {
            return Err(invalid(
                format!("{at}.unattributed.{}", key.name()),
                format!("groups and unattributed add up to {sum} ns, not the event's {total} ns"),
            ));
        }
    }
    Ok(())
}

/// One value per CPU, each possible in the interval, adding up to the total.
/// An event is estimated exactly when its snapshot's tier does not
/// measure it, and then it has an error (of at most the interval on every
/// CPU): exact and estimated values are never mixed up on replay.
fn check_estimate(at: &str, time: &CpuTime, s: &Snapshot, key: EventKey) -> Result<(), Invalid> {
    let measured = s.tier.measures(key);
    if time.estimated == measured {
        return Err(invalid(
            format!("{at}.estimated"),
            format!(
                "is {} but the {} tier {} {}",
                time.estimated,
                s.tier.name(),
                if measured { "measures" } else { "estimates" },
                key.name()
            ),
        ));
    }
    match time.error_ns {
        None if time.estimated => Err(invalid(format!("{at}.error_ns"), "missing for an estimate")),
        Some(_) if !time.estimated => Err(invalid(
            format!("{at}.error_ns"),
            "present on an exact value",
        )),
        Some(error) => check_at_most(
            &format!("{at}.error_ns"),
            error as f64,
            with_overrun(s.interval_s) * 1e9 * s.cpus as f64,
        ),
        None => Ok(()),
    }?;
    match time.calibration {
        Some(_) if !time.estimated => Err(invalid(
            format!("{at}.calibration"),
            "present on an exact value",
        )),
        // Measured earlier in the run: not after this interval ended.
        Some(c) => check_seconds(
            &format!("{at}.calibration.agreement"),
            c.agreement,
            f64::MAX,
        )
        .and(check_seconds(&format!("{at}.calibration.ts"), c.ts, s.ts))
        .and(check_seconds(
            &format!("{at}.calibration.agreement_error"),
            c.agreement_error.unwrap_or(0.0),
            f64::MAX,
        ))
        .and(check_seconds(
            &format!("{at}.calibration.age_s"),
            c.age_s,
            f64::MAX,
        )),
        None => Ok(()),
    }?;
    // The estimate before its calibration: only where one was applied.
    let applied = time.calibration.is_some_and(|c| c.applied);
    match time.raw_ns {
        Some(_) if !applied => Err(invalid(
            format!("{at}.raw_ns"),
            "present on a value no calibration corrected",
        )),
        None if applied => Err(invalid(
            format!("{at}.raw_ns"),
            "missing for a calibrated estimate",
        )),
        _ => Ok(()),
    }
}

fn check_time(at: &str, time: &CpuTime, cpus: usize, cpu_ns: f64) -> Result<(), Invalid> {
    if time.per_cpu_ns.len() != cpus {
        return Err(invalid(
            format!("{at}.per_cpu_ns"),
            format!("has {} values for {cpus} CPUs", time.per_cpu_ns.len()),
        ));
    }
    for (cpu, &ns) in time.per_cpu_ns.iter().enumerate() {
        if ns as f64 > cpu_ns {
            return Err(invalid(
                format!("{at}.per_cpu_ns[{cpu}]"),
                format!(
                    "{ns} ns is more than one CPU can spend in the interval ({:.0} ns at most)",
                    cpu_ns
                ),
            ));
        }
    }
    let sum = checked_sum(0, time.per_cpu_ns.iter().copied())
        .ok_or_else(|| invalid(format!("{at}.per_cpu_ns"), OVERFLOW))?;
    if sum != time.total_ns {
        return Err(invalid(
            format!("{at}.total_ns"),
            format!("{} is not the sum of per_cpu_ns ({sum})", time.total_ns),
        ));
    }
    Ok(())
}

/// Each context's categories add up to it, and all contexts together to
/// no more samples than the sampler can take.
fn check_breakdown(at: &str, s: &Snapshot, most_samples: f64) -> Result<(), Invalid> {
    check_samples(
        &format!("{at}.breakdown"),
        s.breakdown.iter().map(|b| b.samples),
        most_samples,
        s.cpus,
    )?;
    let mut seen = Vec::new();
    for (j, breakdown) in s.breakdown.iter().enumerate() {
        let at = format!("{at}.breakdown[{j}]");
        if seen.contains(&breakdown.context) {
            return Err(invalid(
                format!("{at}.context"),
                format!("{} appears twice", breakdown.context.name()),
            ));
        }
        seen.push(breakdown.context);
        if let Some(agreement) = breakdown.agreement {
            check_seconds(&format!("{at}.agreement"), agreement, f64::MAX)?;
        }
        for (k, category) in breakdown.categories.iter().enumerate() {
            check_share(&format!("{at}.categories[{k}].share"), category.share)?;
        }
        let categories = &breakdown.categories;
        let overflow = || invalid(format!("{at}.categories"), OVERFLOW);
        let samples = checked_sum(0, categories.iter().map(|c| c.samples)).ok_or_else(overflow)?;
        let cpu_ns = checked_sum(0, categories.iter().map(|c| c.cpu_ns)).ok_or_else(overflow)?;
        if samples != breakdown.samples {
            return Err(invalid(
                format!("{at}.samples"),
                format!(
                    "{} is not the sum of its categories' samples ({samples})",
                    breakdown.samples
                ),
            ));
        }
        let event_ns = s.event(breakdown.context.event()).total_ns;
        if cpu_ns > event_ns {
            return Err(invalid(
                format!("{at}.categories"),
                format!(
                    "cpu_ns add up to {cpu_ns}, more than {}'s {event_ns}",
                    breakdown.context.event().name()
                ),
            ));
        }
    }
    Ok(())
}

fn check_stacks(at: &str, s: &Snapshot, most_samples: f64) -> Result<(), Invalid> {
    for (j, stack) in s.stacks.iter().enumerate() {
        for (k, frame) in stack.frames.iter().enumerate() {
            if let Some(problem) = frame_problem(frame) {
                return Err(invalid(format!("{at}.stacks[{j}].frames[{k}]"), problem));
            }
        }
        check_stack_cpus(&format!("{at}.stacks[{j}]"), stack, s.cpus)?;
        check_stack_group(&format!("{at}.stacks[{j}].group"), stack, s)?;
    }
    check_samples(
        &format!("{at}.stacks"),
        s.stacks.iter().map(|stack| stack.count),
        most_samples,
        s.cpus,
    )
}

/// Samples that add up to no more than the sampler can take in the
/// interval (`most`, on `cpus` CPUs).
fn check_samples(
    at: &str,
    counts: impl Iterator<Item = u64>,
    most: f64,
    cpus: usize,
) -> Result<(), Invalid> {
    let samples = checked_sum(0, counts).ok_or_else(|| invalid(at, OVERFLOW))?;
    if samples as f64 > most {
        return Err(invalid(
            at,
            format!("{samples} samples, more than {MAX_FREQUENCY_HZ} Hz on {cpus} CPUs can take"),
        ));
    }
    Ok(())
}

/// What a sum that does not fit 64 bits says: no measurement adds up to
/// that, and the front ends' sums would wrap.
const OVERFLOW: &str = "add up to more than 2^64, which nothing measured can";

/// `start` plus `values`, unless that overflows.
fn checked_sum(start: u64, mut values: impl Iterator<Item = u64>) -> Option<u64> {
    values.try_fold(start, u64::checked_add)
}

/// A stack's group, when it has one, is a group of the snapshot's
/// attribution: its time is what a group's flame graph shares out.
fn check_stack_group(at: &str, stack: &StackCount, s: &Snapshot) -> Result<(), Invalid> {
    let Some(name) = &stack.group else {
        return Ok(());
    };
    let groups = s.attribution.as_ref().map_or(&[][..], |a| &a.groups[..]);
    if groups.iter().any(|g| &g.name == name) {
        return Ok(());
    }
    Err(invalid(at, "names no group of the snapshot's attribution"))
}

/// A stack's samples by CPU, when kept: CPUs the snapshot has, adding up
/// to the stack's count (the pprof writer splits time by them).
fn check_stack_cpus(at: &str, stack: &StackCount, cpus: usize) -> Result<(), Invalid> {
    if stack.cpus.is_empty() {
        return Ok(());
    }
    if let Some(cpu) = stack.cpus.keys().find(|&&cpu| cpu as usize >= cpus) {
        return Err(invalid(
            format!("{at}.cpus"),
            format!("CPU {cpu}, but the snapshot has {cpus} CPUs"),
        ));
    }
    let sum = stack
        .cpus
        .values()
        .try_fold(0u64, |sum, &n| sum.checked_add(n));
    if sum != Some(stack.count) {
        return Err(invalid(
            format!("{at}.cpus"),
            format!("do not add up to the count {}", stack.count),
        ));
    }
    Ok(())
}

/// What is wrong with a frame, if anything. Frames are function names:
/// never empty, no blank or `;` (the folded format's separators), no
/// control character, and no kernel address (a hexadecimal word of 12 or
/// more digits starting `ffff`, the kernel half of a 64-bit address
/// space, with or without `0x`).
fn frame_problem(frame: &str) -> Option<String> {
    if frame.is_empty() {
        return Some("empty".into());
    }
    if frame
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == ';')
    {
        return Some(format!(
            "{:?} holds a blank, a control character or ';'",
            frame
        ));
    }
    let address = frame
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|word| {
            word.strip_prefix("0x")
                .or_else(|| word.strip_prefix("0X"))
                .unwrap_or(word)
        })
        .any(|word| {
            word.len() >= 12
                && word[..4].eq_ignore_ascii_case("ffff")
                && word.bytes().all(|b| b.is_ascii_hexdigit())
        });
    address.then(|| "is a kernel address, which netto never records".into())
}

fn check_frequency(at: &str, hz: u64) -> Result<(), Invalid> {
    if hz > MAX_FREQUENCY_HZ {
        return Err(invalid(
            at,
            format!("{hz} Hz is above netto's {MAX_FREQUENCY_HZ} Hz"),
        ));
    }
    Ok(())
}

/// A finite, non-negative number of seconds (or other quantity) up to `most`.
fn check_seconds(at: &str, value: f64, most: f64) -> Result<(), Invalid> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(invalid(at, format!("{value} is not a finite number >= 0")));
    }
    check_at_most(at, value, most)
}

fn check_percent(at: &str, value: f64, most: f64) -> Result<(), Invalid> {
    if !(value.is_finite() && (0.0..=most).contains(&value)) {
        return Err(invalid(
            at,
            format!("{value} is not a percentage in [0, {most:.0}]"),
        ));
    }
    Ok(())
}

fn check_at_most(at: &str, value: f64, most: f64) -> Result<(), Invalid> {
    if value > most {
        return Err(invalid(
            at,
            format!("{value} is above {most:.0}, the most possible"),
        ));
    }
    Ok(())
}

/// A sampling probability: the sketch samples at least now and then.
fn check_probability(at: &str, p: f64) -> Result<(), Invalid> {
    if !(p > 0.0 && p <= 1.0) {
        return Err(invalid(at, format!("{p} is outside (0, 1]")));
    }
    Ok(())
}

fn check_share(at: &str, share: f64) -> Result<(), Invalid> {
    if !(0.0..=1.0).contains(&share) {
        return Err(invalid(at, format!("{share} is outside [0, 1]")));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
