//! Ending a run on SIGINT/SIGTERM/SIGHUP (a closed terminal): the run loop
//! returns normally, so links, the demo namespace and the statistics fd are
//! released by destructors, and `top` gives the terminal back.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

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

/// A channel that receives once when SIGINT or SIGTERM arrives, for
/// commands without a source to stop.
pub fn stop_on_signals() -> Result<Receiver<()>> {
    let (tx, rx) = mpsc::channel();
    on_signals(move || {
        let _ = tx.send(());
    })?;
    Ok(rx)
}

/// Calls `each` at the end of every interval until `duration` has passed
/// (if given) or a stop was requested. Blocks on the stop channel rather
/// than polling: one wake-up per interval.
pub fn every_interval(
    interval: f64,
    duration: Option<f64>,
    stop: &Receiver<()>,
    mut each: impl FnMut() -> Result<()>,
) -> Result<()> {
    let start = Instant::now();
    let end = duration.map(|d| start + Duration::from_secs_f64(d));
    let interval = Duration::from_secs_f64(interval);
    let mut tick = 1u32;
    loop {
        let due = start + interval * tick;
        let until = end.map_or(due, |end| due.min(end));
        let timeout = until.saturating_duration_since(Instant::now());
        if !matches!(stop.recv_timeout(timeout), Err(RecvTimeoutError::Timeout)) {
            return Ok(());
        }
        each()?;
        if end.is_some_and(|end| Instant::now() >= end) {
            return Ok(());
        }
        tick += 1;
    }
}
