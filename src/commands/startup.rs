//! The start of every measuring command: the live source (which does the
//! loading, in one sequence for all), its notes on stderr, and Ctrl-C /
//! SIGTERM turned into a clean stop of the source; and the source of the
//! live views, which may be a recording instead.

use anyhow::Result;
use netto::cli::SourceArgs;
use netto::model::Snapshot;
use netto::source::live::{self, LiveConfig};
use netto::source::{replay, Control, Source};

use super::signals::{stop_on_signals, when_stopped};

/// The snapshot stream of `top` and `serve`: the recording asked for, or
/// measuring now. What the source
/// has to say is in its notes; each view shows them its own way.
pub fn view_source(args: &SourceArgs) -> Result<Source> {
    match &args.replay {
        Some(path) => {
            let recording = netto::recording::load_within(path, args.reading.max_recording_size)?;
            replay::start(recording, &path.display().to_string(), args.speed)
        }
        None => live::start(args.measure.live_config(Some(&args.sampling), None, false)),
    }
}

/// One line on stderr for each change the budget makes (`--budget`).
pub fn announce_budget(snapshot: &Snapshot) {
    if let Some(line) = snapshot.budget.as_ref().and_then(|b| b.change_line()) {
        eprintln!("netto: {line}");
    }
}

/// Starts measuring and prints what the user should know about this run.
/// Signals are taken over first: one that arrives while the programs load
/// stops the source as soon as it runs, instead of killing netto.
pub fn live(config: LiveConfig) -> Result<Source> {
    let stop = stop_on_signals()?;
    let source = live::start(config)?;
    for note in &source.info.notes {
        eprintln!("netto: {note}");
    }
    let control = source.controller();
    when_stopped(stop, move || {
        let _ = control.send(Control::Stop);
    })?;
    Ok(source)
}
