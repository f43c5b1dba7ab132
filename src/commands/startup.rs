//! The start of every measuring command: the live source (which does the
//! loading, in one sequence for all), its notes on stderr, and Ctrl-C /
//! SIGTERM turned into a clean stop of the source.

use anyhow::Result;
use netto::source::live::{self, LiveConfig};
use netto::source::{Control, Source};

use super::signals::on_signals;

/// Starts measuring and prints what the user should know about this run.
pub fn live(config: LiveConfig) -> Result<Source> {
    let source = live::start(config)?;
    for note in &source.info.notes {
        eprintln!("netto: {note}");
    }
    let control = source.controller();
    on_signals(move || {
        let _ = control.send(Control::Stop);
    })?;
    Ok(source)
}
