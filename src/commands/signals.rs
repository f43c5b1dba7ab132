//! Ending a run on SIGINT/SIGTERM: the run loop returns normally, so links,
//! the demo namespace and the statistics fd are released by destructors.

use std::thread;

use anyhow::{Context, Result};

/// Calls `stop` once when SIGINT or SIGTERM arrives.
pub fn on_signals(stop: impl FnOnce() + Send + 'static) -> Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    thread::spawn(move || {
        if signals.forever().next().is_some() {
            stop();
        }
    });
    Ok(())
}
