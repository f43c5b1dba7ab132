//! Ending a run on SIGINT/SIGTERM/SIGHUP (a closed terminal): the run loop
//! returns normally, so links, the demo namespace and the statistics fd are
//! released by destructors, and `top` gives the terminal back. A second
//! SIGINT or SIGTERM, for a user who will not wait for that, ends the
//! process at once: the kernel releases the links and the statistics fd of
//! an exiting process, and the demo traffic's child removes its namespace
//! when its stdin closes (see `netto::workload::demo`).

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use netto::source::intervals::Intervals;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Calls `stop` once when SIGINT, SIGTERM or SIGHUP arrives; exits at
/// once on a SIGINT or SIGTERM after that.
pub fn on_signals(stop: impl FnOnce() + Send + 'static) -> Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("installing signal handlers")?;
    thread::spawn(move || {
        let mut arriving = signals.forever();
        if arriving.next().is_none() {
            return;
        }
        stop();
        // A hang-up can come again as the terminal goes away: only the
        // user's own second request forces the exit.
        if let Some(signal) = arriving.find(|&s| s != SIGHUP) {
            exit_now(signal);
        }
    });
    Ok(())
}

/// The terminal back (if `top` holds it), one line, and exit with the
/// shell's code for death by `signal`.
fn exit_now(signal: i32) -> ! {
    netto::frontends::tui::terminal::give_back();
    eprintln!("netto: interrupted again: exiting now");
    std::process::exit(128 + signal)
}

/// A channel that receives once when SIGINT or SIGTERM arrives, for
/// commands without a source to stop, and for taking signals over before
/// a source starts (see [`when_stopped`]).
pub fn stop_on_signals() -> Result<Receiver<()>> {
    let (tx, rx) = mpsc::channel();
    on_signals(move || {
        let _ = tx.send(());
    })?;
    Ok(rx)
}

/// Calls `then` once `stop` receives (at once if it already has): how a
/// signal taken before the source started reaches it.
pub fn when_stopped(stop: Receiver<()>, then: impl FnOnce() + Send + 'static) -> Result<()> {
    thread::Builder::new()
        .name("netto-stop".into())
        .spawn(move || {
            if stop.recv().is_ok() {
                then();
            }
        })
        .context("starting the stop thread")?;
    Ok(())
}

/// Calls `each` at the end of every interval (see [`Intervals`]) until
/// `duration` has passed (if given), a stop was requested or `each` says
/// there is no more to do (false). A stop ends the interval in progress
/// early, and `each` still gets it: what was counted up to the stop is not
/// lost. Blocks on the stop channel rather than polling: one wake-up per
/// interval.
pub fn every_interval(
    interval: f64,
    duration: Option<f64>,
    stop: &Receiver<()>,
    mut each: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let mut intervals = Intervals::new(
        Instant::now(),
        Duration::from_secs_f64(interval),
        duration.map(Duration::from_secs_f64),
    );
    loop {
        let timeout = intervals.due().saturating_duration_since(Instant::now());
        let stopped = !matches!(stop.recv_timeout(timeout), Err(RecvTimeoutError::Timeout));
        if !each()? || stopped {
            return Ok(());
        }
        let now = Instant::now();
        if intervals.ended(now) {
            return Ok(());
        }
        intervals.advance(now);
    }
}
