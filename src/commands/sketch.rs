//! `netto sketch`.

use std::io;
use std::mem::MaybeUninit;
use std::process::ExitCode;

use anyhow::Result;
use netto::cli::SketchArgs;
use netto::frontends::glossary::Legend;
use netto::frontends::{sketch, stat::write_json};
use netto::kernel::stats::Statistics;
use netto::kernel::{privileges, KernelError};
use netto::sketch::Cohosted;

use super::signals::{every_interval, stop_on_signals};
use super::stdout::still_read;

pub fn run(args: &SketchArgs) -> Result<ExitCode> {
    let config = args.config();
    config.geometry()?;
    if !privileges::sufficient() {
        return Err(KernelError::NotPrivileged.into());
    }
    let stop = stop_on_signals()?;
    let stats = Statistics::turn_on(!args.no_bpf_stats);
    if let Some(note) = stats.note() {
        eprintln!("netto: {note}");
    }
    let mut storage = MaybeUninit::uninit();
    let mut host = Cohosted::attach(&args.iface, &config, &mut storage)?;
    eprintln!(
        "netto: sketch attached to {} ({} XDP), p={}, {}x{}",
        args.iface,
        host.mode().name(),
        host.probability(),
        args.rows,
        args.columns
    );
    let mut stdout = io::stdout().lock();
    let mut legend = Legend::default();
    every_interval(args.interval, args.duration, &stop, || {
        let snapshot = host.snapshot();
        still_read(if args.json {
            write_json(&mut stdout, &snapshot)
        } else {
            sketch::write_table(&mut stdout, &snapshot, &mut legend)
        })
    })?;
    drop(host);
    drop(stats);
    Ok(ExitCode::SUCCESS)
}
