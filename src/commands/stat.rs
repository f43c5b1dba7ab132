//! `netto stat`.

use std::io;
use std::process::ExitCode;

use anyhow::{Context, Result};
use netto::cli::StatArgs;
use netto::frontends::stat;

use super::startup;

pub fn run(args: &StatArgs) -> Result<ExitCode> {
    let source = startup::live(args.measure.live_config(None, args.duration, false))?;
    let mut stdout = io::stdout().lock();
    for snapshot in source.snapshots.iter() {
        startup::announce_budget(&snapshot);
        if args.json {
            stat::write_json(&mut stdout, &snapshot)
        } else {
            stat::write_table(&mut stdout, &snapshot)
        }
        .context("writing to standard output")?;
    }
    source.finish()?;
    Ok(ExitCode::SUCCESS)
}
