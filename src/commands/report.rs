//! `netto report`: render a recording again, or the difference of two. No
//! root and no BPF needed.

use std::process::ExitCode;

use std::path::Path;

use anyhow::{bail, Context, Result};
use netto::cli::ReportArgs;
use netto::frontends::flame::check_scope;
use netto::recording::{load_within, ValidRecording};

use super::write::{write_diff, write_recording, Output};

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let output = Output::check(&args.output, args.format, args.force)?;
    match (&args.diff, &args.recording) {
        (Some(pair), _) => {
            let before = load_for(&pair[0], args)?;
            let after = load_for(&pair[1], args)?;
            write_diff(&before, &after, &output, args.weight.into(), args.scope())?;
        }
        (None, Some(path)) => {
            let recording = load_for(path, args)?;
            write_recording(&recording, &output, args.weight.into(), args.scope())?;
        }
        (None, None) => bail!("give a recording, or --diff BEFORE AFTER"),
    }
    eprintln!("netto: wrote {}", output.destination());
    Ok(ExitCode::SUCCESS)
}

/// Loads a recording and checks that it can be drawn as `args` ask (has
/// the group asked for), before anything is written.
fn load_for(path: &Path, args: &ReportArgs) -> Result<ValidRecording> {
    let recording = load_within(path, args.reading.max_recording_size)?;
    check_scope(&recording.snapshots, args.scope()).with_context(|| path.display().to_string())?;
    Ok(recording)
}
