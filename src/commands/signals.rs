//! Ending a run on SIGINT/SIGTERM: the run loop returns normally, so links,
//! the demo namespace and the statistics fd are released by destructors.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

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

/// Calls `each` at the end of every interval until `duration` has passed
/// (if given) or a stop was requested: the loop of every live command.
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
        if !wait_until(until, stop) {
            return Ok(());
        }
        each()?;
        if end.is_some_and(|end| Instant::now() >= end) {
            return Ok(());
        }
        tick += 1;
    }
}
