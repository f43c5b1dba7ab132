//! `netto report`: render a recording again, or the difference of two. No
//! root and no BPF needed.

use std::process::ExitCode;

use anyhow::{bail, Result};
use netto::cli::{Format, ReportArgs};
use netto::recording::load;

use super::write::{write_diff, write_recording};

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let format = args
        .format
        .unwrap_or_else(|| Format::for_path(&args.output));
    match (&args.diff, &args.recording) {
        (Some(pair), _) => {
            let before = load(&pair[0])?;
            let after = load(&pair[1])?;
            write_diff(
                &before,
                &after,
                format,
                args.weight.into(),
                &args.output,
                args.force,
            )?;
        }
        (None, Some(path)) => {
            let recording = load(path)?;
            write_recording(
                &recording,
                format,
                args.weight.into(),
                &args.output,
                args.force,
            )?;
        }
        (None, None) => bail!("give a recording, or --diff BEFORE AFTER"),
    }
    eprintln!("netto: wrote {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
