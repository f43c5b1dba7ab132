//! Ending a run on SIGINT/SIGTERM: the run loop returns normally, so links,
//! the demo namespace and the statistics fd are released by destructors.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Instant;

use anyhow::{Context, Result};

/// A channel that receives once when SIGINT or SIGTERM arrives.
pub fn stop_on_signals() -> Result<Receiver<()>> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = tx.send(());
        }
    });
    Ok(rx)
}

/// Sleeps until `deadline`; false if a stop was requested first. Blocks on
/// the signal channel rather than polling a flag: one wake-up per wait
/// keeps netto's own CPU time down (each wake-up is costly in a VM).
pub fn wait_until(deadline: Instant, stop: &Receiver<()>) -> bool {
    let timeout = deadline.saturating_duration_since(Instant::now());
    matches!(stop.recv_timeout(timeout), Err(RecvTimeoutError::Timeout))
}
