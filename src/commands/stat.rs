//! `netto stat`.

use std::io;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use netto::cli::StatArgs;
use netto::frontends::stat as sink;
use netto::source::live::LiveConfig;

use super::startup;

pub fn run(args: &StatArgs) -> Result<ExitCode> {
    let source = startup::live(LiveConfig {
        backend: args.backend.into(),
        bpf_stats: !args.no_bpf_stats,
        interval: Duration::from_secs_f64(args.interval),
        duration: args.duration.map(Duration::from_secs_f64),
        sampling: None,
        demo: args.demo.into(),
        flush_on_stop: false,
        xdp_sketch: netto::cli::cohosted_sketch(&args.xdp_sketch),
    })?;
    let mut stdout = io::stdout().lock();
    for snapshot in source.snapshots.iter() {
        if args.json {
            sink::write_json(&mut stdout, &snapshot)
        } else {
            sink::write_table(&mut stdout, &snapshot)
        }
        .context("writing to standard output")?;
    }
    source.finish()?;
    Ok(ExitCode::SUCCESS)
}
