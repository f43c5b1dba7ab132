//! The start of every measuring command: the live source (which does the
//! loading, in one sequence for all), its notes on stderr, and Ctrl-C /
//! SIGTERM turned into a clean stop of the source.

use anyhow::Result;
use netto::kernel::stats::StatsGuard;
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

/// BPF run-time statistics, unless turned off or unavailable (said so):
/// for commands that load no accounting (`sketch`).
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
