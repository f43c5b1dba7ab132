//! `netto record`: exact accounting plus stack sampling for a while, then
//! one file: a flame graph, folded stacks, or a replayable JSON recording.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use netto::cli::RecordArgs;
use netto::collect::clock::unix_now;
use netto::frontends::flame::Scope;
use netto::kernel::sampler::Transport;
use netto::model::{Recording, RecordingHeader, SchemaVersion};

use super::startup;
use super::write::{write_recording, Output};

pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    // Refuse before sampling for minutes, not after.
    let output = Output::check(&args.output, args.format, args.force)?;
    let transport = Transport::from(args.sampling.transport);
    let frequency = args.sampling.frequency;
    let config = args
        .measure
        .live_config(Some(&args.sampling), Some(args.duration), true);
    let source = startup::live(config, &args.measure)?;
    eprintln!(
        "netto: recording for {} s at {} Hz ({} transport)",
        args.duration,
        frequency,
        transport.name()
    );
    // The run's length on the monotonic clock, as every interval's.
    let (started, clock) = (unix_now(), Instant::now());
    let snapshots: Vec<_> = source
        .snapshots
        .iter()
        .inspect(startup::announce_budget)
        .collect();
    let duration_s = clock.elapsed().as_secs_f64();
    let info = source.info.clone();
    source.finish()?;

    let sampled = |f: fn(&netto::model::SamplingStats) -> u64| -> u64 {
        snapshots
            .iter()
            .filter_map(|s| s.sampling.as_ref())
            .map(f)
            .sum()
    };
    let dropped = sampled(|s| s.dropped);
    if dropped > 0 {
        eprintln!("netto: {dropped} samples were dropped (buffer full, or their half given up)");
    }
    let lost: netto::model::Losses = snapshots.iter().map(|s| s.losses).sum();
    for kind in netto::model::Losses::KINDS.iter() {
        let count = (kind.count)(&lost);
        if count > 0 {
            eprintln!("netto: lost {count} {}: {}", kind.short, kind.meaning);
        }
    }
    let samples = sampled(|s| s.samples);
    let recording = Recording {
        header: RecordingHeader {
            schema_version: SchemaVersion,
            netto_version: env!("CARGO_PKG_VERSION").to_owned(),
            host: info.host,
            kernel: info.kernel,
            started,
            duration_s,
            frequency_hz: frequency,
            backend: info.backend,
            transport: transport.name().to_owned(),
        },
        snapshots,
    };
    write_recording(&recording, &output, args.weight.into(), Scope::All)?;
    eprintln!("netto: wrote {} ({samples} samples)", output.destination());
    Ok(ExitCode::SUCCESS)
}
