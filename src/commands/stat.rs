//! `netto stat`.

use std::io;
use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use netto::cli::StatArgs;
use netto::collect::Collector;
use netto::sinks::stat as sink;

use super::signals::wait_until;
use super::startup::{self, Prepared};

pub fn run(args: &StatArgs) -> Result<ExitCode> {
    let Prepared {
        stop,
        backend,
        stats,
    } = startup::prepare(args.backend, args.no_bpf_stats)?;
    let mut storage = MaybeUninit::uninit();
    let accounting = startup::load_accounting(&mut storage, backend)?;
    let demo = startup::demo(args.demo)?;

    let mut collector = Collector::start(&accounting, stats.is_some())?;
    eprintln!(
        "netto: measuring ({} BPF programs attached)",
        accounting.attached().count()
    );
    let start = Instant::now();
    let end = args.duration.map(|d| start + Duration::from_secs_f64(d));
    let interval = Duration::from_secs_f64(args.interval);
    let mut stdout = io::stdout().lock();
    let mut tick = 1u32;
    loop {
        let due = start + interval * tick;
        let until = end.map_or(due, |end| due.min(end));
        if !wait_until(until, &stop) {
            break;
        }
        let snapshot = collector.collect()?;
        if args.json {
            sink::write_json(&mut stdout, &snapshot)
        } else {
            sink::write_table(&mut stdout, &snapshot)
        }
        .context("writing to standard output")?;
        if end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
        tick += 1;
    }
    drop(demo);
    Ok(ExitCode::SUCCESS)
}
