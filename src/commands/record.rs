//! `netto record`: exact accounting plus stack sampling for a while, then
//! one file: a flame graph, folded stacks, or a replayable JSON recording.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use netto::breakdown::breakdowns;
use netto::breakdown::fold::Folder;
use netto::cli::{Format, RecordArgs, TransportArg};
use netto::collect::Collector;
use netto::kernel::sampler::{Sampler, SamplerConfig, SamplerCounters, Transport};
use netto::model::{Recording, RecordingHeader, SampleContext, SamplingStats, StackCount};
use netto::symbols::symbolizer::Symbolizer;

use super::render::write_recording;
use super::signals::wait_until;
use super::startup::{self, Prepared};

/// How often samples are moved out of the kernel buffer; the buffer is
/// sized for it.
const DRAIN_PERIOD: Duration = Duration::from_millis(100);

pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    let format = args
        .format
        .unwrap_or_else(|| Format::for_path(&args.output));
    // Refuse before sampling for minutes, not after.
    if args.output.exists() && !args.force {
        bail!(
            "{} exists; pass --force to overwrite it",
            args.output.display()
        );
    }
    let Prepared {
        stop,
        backend,
        stats,
    } = startup::prepare(args.backend, args.no_bpf_stats)?;
    let mut acct_storage = MaybeUninit::uninit();
    let accounting = startup::load_accounting(&mut acct_storage, backend)?;
    let transport = match args.transport {
        TransportArg::Mmap => Transport::Mmap,
        TransportArg::Ringbuf => Transport::Ringbuf,
    };
    let mut sampler_storage = MaybeUninit::uninit();
    let mut sampler = Sampler::load(
        &mut sampler_storage,
        &accounting,
        SamplerConfig {
            frequency_hz: args.frequency,
            transport,
            drain_period: DRAIN_PERIOD,
            slots_per_half: None,
        },
    )?;
    // After netto's own programs are loaded, so their JIT-ed symbols are
    // in the table and their appearance does not force a reload.
    let mut symbolizer = Symbolizer::load().context("reading kernel symbols")?;
    let _demo = startup::demo(args.demo)?;

    let mut collector = Collector::start(&accounting, stats.is_some())?;
    eprintln!(
        "netto: recording for {} s at {} Hz ({} transport, {} KiB buffer)",
        args.duration,
        args.frequency,
        transport.name(),
        sampler.buffer_bytes() / 1024
    );
    let started_wall = SystemTime::now();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(args.duration);
    let interval = Duration::from_secs_f64(args.interval);
    let mut next_snapshot = start + interval;
    let mut folder = Folder::new();
    let mut snapshots = Vec::new();
    let mut stacks = Vec::new();
    let mut last_counters = sampler.counters();
    loop {
        let wake = (Instant::now() + DRAIN_PERIOD).min(next_snapshot).min(end);
        let stopped = !wait_until(wake, &stop);
        sampler.drain(|s| folder.add(s.context, s.frames))?;
        let now = Instant::now();
        if stopped || now >= next_snapshot || now >= end {
            symbolizer.refresh().context("re-reading kernel symbols")?;
            let mut snapshot = collector.collect()?;
            let interval_stacks = folder.take(&mut symbolizer);
            let counters = sampler.counters();
            snapshot.breakdown = breakdowns(&interval_stacks, &snapshot.events);
            snapshot.sampling = Some(sampling_stats(&sampler, last_counters, counters));
            last_counters = counters;
            snapshots.push(snapshot);
            stacks.extend(interval_stacks);
            next_snapshot += interval;
        }
        if stopped || now >= end {
            break;
        }
    }
    let total = sampler.counters();
    if total.dropped > 0 {
        eprintln!(
            "netto: {} samples did not fit the buffer and were dropped",
            total.dropped
        );
    }

    let recording = Recording {
        header: RecordingHeader {
            netto_version: env!("CARGO_PKG_VERSION").to_owned(),
            host: read_trimmed("/proc/sys/kernel/hostname"),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            started: started_wall
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            duration_s: start.elapsed().as_secs_f64(),
            frequency_hz: args.frequency,
            backend: backend.name().to_owned(),
            transport: transport.name().to_owned(),
        },
        snapshots,
        stacks: merge(stacks),
    };
    write_recording(&recording, format, &args.output, args.force)?;
    eprintln!(
        "netto: wrote {} ({} samples)",
        args.output.display(),
        total.samples
    );
    Ok(ExitCode::SUCCESS)
}

fn sampling_stats(
    sampler: &Sampler<'_>,
    before: SamplerCounters,
    after: SamplerCounters,
) -> SamplingStats {
    SamplingStats {
        frequency_hz: sampler.frequency_hz(),
        transport: sampler.transport().name().to_owned(),
        samples: after.samples - before.samples,
        dropped: after.dropped - before.dropped,
        failed_stacks: after.failed - before.failed,
        buffer_bytes: sampler.buffer_bytes(),
    }
}

/// One entry per (context, frames) over the whole recording, most samples
/// first.
fn merge(stacks: Vec<StackCount>) -> Vec<StackCount> {
    let mut counts: HashMap<(SampleContext, Vec<String>), u64> = HashMap::new();
    for stack in stacks {
        *counts.entry((stack.context, stack.frames)).or_default() += stack.count;
    }
    let mut merged: Vec<StackCount> = counts
        .into_iter()
        .map(|((context, frames), count)| StackCount {
            context,
            frames,
            count,
        })
        .collect();
    merged.sort_by(|a, b| {
        (a.context, std::cmp::Reverse(a.count), &a.frames).cmp(&(
            b.context,
            std::cmp::Reverse(b.count),
            &b.frames,
        ))
    });
    merged
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}
