//! `netto report`: render a recording again, or the difference of two. No
//! root and no BPF needed.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use netto::cli::{Format, ReportArgs};
use netto::model::Recording;

use super::render::{write_diff, write_recording};

pub fn read_recording(path: &Path) -> Result<Recording> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_reader(BufReader::new(file))
        .with_context(|| format!("{} is not a netto recording", path.display()))
}

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let format = args
        .format
        .unwrap_or_else(|| Format::for_path(&args.output));
    match (&args.diff, &args.recording) {
        (Some(pair), _) => {
            let before = read_recording(&pair[0])?;
            let after = read_recording(&pair[1])?;
            write_diff(&before, &after, format, &args.output, args.force)?;
        }
        (None, Some(path)) => {
            let recording = read_recording(path)?;
            write_recording(&recording, format, &args.output, args.force)?;
        }
        (None, None) => bail!("give a recording, or --diff BEFORE AFTER"),
    }
    eprintln!("netto: wrote {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
