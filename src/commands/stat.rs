//! `netto stat`.

use std::io;
use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use netto::cli::StatArgs;
use netto::collect::Collector;
use netto::demo::DemoProcess;
use netto::kernel::accounting::Accounting;
use netto::kernel::features::Features;
use netto::kernel::stats::StatsGuard;
use netto::kernel::{backend, privileges, KernelError};
use netto::sinks::stat as sink;

use super::signals::{stop_on_signals, wait_until};

pub fn run(args: &StatArgs) -> Result<ExitCode> {
    if !privileges::sufficient() {
        return Err(KernelError::NotPrivileged.into());
    }
    let stop = stop_on_signals()?;
    let features = Features::detect();
    let (backend, why) = backend::select(args.backend.into(), &features)?;
    eprintln!("netto: backend {backend}: {why}");

    let stats = if args.no_bpf_stats {
        None
    } else {
        match StatsGuard::enable() {
            Ok(guard) => Some(guard),
            Err(e) => {
                eprintln!("netto: note: BPF run-time statistics unavailable ({e}); program costs not reported");
                None
            }
        }
    };

    let mut storage = MaybeUninit::uninit();
    let accounting = Accounting::load(&mut storage, backend)?;
    for group in accounting.skipped() {
        eprintln!(
            "netto: note: no {} tracepoints here: {}",
            group.tracepoints.join("/"),
            group.without
        );
    }
    if !accounting.callbacks_resolved() {
        eprintln!(
            "netto: note: kallsyms hides addresses (kernel.kptr_restrict): net_timers stays 0"
        );
    }
    let demo = if args.demo {
        let demo = DemoProcess::start().context("starting the demo load")?;
        eprintln!("netto: {}", demo.describe());
        Some(demo)
    } else {
        None
    };

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
