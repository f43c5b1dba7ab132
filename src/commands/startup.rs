//! The start of every measuring command (`stat`, `record`; `sketch` shares
//! the statistics step): privileges,
//! signal handling, backend choice, BPF statistics, loading the accounting,
//! the optional demo load. One sequence, so every command says the same
//! things in the same order.

use std::mem::MaybeUninit;
use std::sync::mpsc::Receiver;

use anyhow::{Context, Result};
use libbpf_rs::OpenObject;
use netto::cli::BackendArg;
use netto::demo::DemoProcess;
use netto::kernel::accounting::Accounting;
use netto::kernel::backend::{self, Backend};
use netto::kernel::features::Features;
use netto::kernel::stats::StatsGuard;
use netto::kernel::{privileges, KernelError};

use super::signals::stop_on_signals;

/// What the checks before loading decided.
pub struct Prepared {
    /// Receives once on SIGINT/SIGTERM.
    pub stop: Receiver<()>,
    pub backend: Backend,
    /// Holds BPF run-time statistics on while alive.
    pub stats: Option<StatsGuard>,
}

pub fn prepare(backend_arg: BackendArg, no_bpf_stats: bool) -> Result<Prepared> {
    if !privileges::sufficient() {
        return Err(KernelError::NotPrivileged.into());
    }
    let stop = stop_on_signals()?;
    let features = Features::detect();
    let (backend, why) = backend::select(backend_arg.into(), &features)?;
    eprintln!("netto: backend {backend}: {why}");
    Ok(Prepared {
        stop,
        backend,
        stats: bpf_stats(no_bpf_stats),
    })
}

/// BPF run-time statistics, unless turned off or unavailable (said so).
pub fn bpf_stats(no_bpf_stats: bool) -> Option<StatsGuard> {
    if no_bpf_stats {
        return None;
    }
    match StatsGuard::enable() {
        Ok(guard) => Some(guard),
        Err(e) => {
            eprintln!("netto: note: BPF run-time statistics unavailable ({e}); program costs not reported");
            None
        }
    }
}

/// Loads and attaches the accounting, saying what this kernel leaves out.
pub fn load_accounting<'obj>(
    storage: &'obj mut MaybeUninit<OpenObject>,
    backend: Backend,
) -> Result<Accounting<'obj>> {
    let accounting = Accounting::load(storage, backend)?;
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
    Ok(accounting)
}

/// The built-in demo load, if asked for.
pub fn demo(enabled: bool) -> Result<Option<DemoProcess>> {
    if !enabled {
        return Ok(None);
    }
    let demo = DemoProcess::start().context("starting the demo load")?;
    eprintln!("netto: {}", demo.describe());
    Ok(Some(demo))
}
