//! Ending a run on SIGINT/SIGTERM/SIGHUP (a closed terminal): the run loop
//! returns normally, so links, the demo namespace and the statistics fd are
//! released by destructors, and `top` gives the terminal back.

use std::thread;

use anyhow::{Context, Result};

/// Calls `stop` once when SIGINT, SIGTERM or SIGHUP arrives.
pub fn on_signals(stop: impl FnOnce() + Send + 'static) -> Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])
    .context("installing signal handlers")?;
    thread::spawn(move || {
        if signals.forever().next().is_some() {
            stop();
        }
    });
    Ok(())
}
