//! The start of every measuring command: the live source (which does the
//! loading, in one sequence for all) with the traffic it takes from here
//! (the self-check's calls, the demo), its notes on stderr, and Ctrl-C /
//! SIGTERM turned into a clean stop of the source; and the source of the
//! live views, which may be a recording instead.

use std::time::Duration;

use anyhow::{Context, Result};
use netto::cli::{DemoArg, MeasureArgs, SourceArgs};
use netto::frontends::notes;
use netto::model::Snapshot;
use netto::source::live::{self, Companion, LiveConfig, StartCompanion, Traffic};
use netto::source::notes::Note;
use netto::source::{replay, Control, Source};
use netto::workload::demo::DemoProcess;
use netto::workload::traffic::each_call::Loopback;

use super::signals::{stop_on_signals, when_stopped};

/// How long `--demo auto` watches the host's network before deciding, and
/// below what share of one CPU (percent) it counts as idle.
const IDLE_WATCH: Duration = Duration::from_millis(500);
const IDLE_PERCENT: f64 = 1.0;

/// The snapshot stream of `top` and `serve`: the recording asked for, or
/// measuring now. What the source
/// has to say is in its notes; each view shows them its own way.
pub fn view_source(args: &SourceArgs) -> Result<Source> {
    match &args.replay {
        Some(path) => {
            let recording = netto::recording::load_within(path, args.reading.max_recording_size)?;
            replay::start(recording, &path.display().to_string(), args.speed)
        }
        None => live::start(
            args.measure.live_config(Some(&args.sampling), None, false),
            traffic(&args.measure),
        ),
    }
}

/// The traffic a live run takes from the command: the self-check's calls
/// on loopback, and the demo as `--demo` asks: never, always, or only
/// when the host's network is idle (so a newcomer sees real numbers, and a
/// busy host is left alone).
fn traffic(measure: &MeasureArgs) -> Traffic {
    let rate = measure.demo_rate.0;
    let companion: Option<StartCompanion> = match measure.demo {
        DemoArg::Off => None,
        DemoArg::On => Some(Box::new(move |_| start_demo(rate).map(Some))),
        DemoArg::Auto => Some(Box::new(move |watch| {
            if watch.busy_percent(IDLE_WATCH)? < IDLE_PERCENT {
                start_demo(rate).map(Some)
            } else {
                Ok(None)
            }
        })),
    };
    Traffic {
        probe: &Loopback,
        companion,
    }
}

/// The demo traffic in its child process, at `rate` bits per second, which
/// the run holds until it ends.
fn start_demo(rate: Option<u64>) -> Result<Companion> {
    let demo = DemoProcess::start(rate).context("starting the demo traffic")?;
    Ok(Companion {
        note: Note::Demo {
            description: demo.describe().to_owned(),
        },
        running: Box::new(demo),
    })
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
pub fn live(config: LiveConfig, measure: &MeasureArgs) -> Result<Source> {
    let stop = stop_on_signals()?;
    let source = live::start(config, traffic(measure))?;
    print_notes(&source);
    let control = source.controller();
    when_stopped(stop, move || {
        let _ = control.send(Control::Stop);
    })?;
    Ok(source)
}

/// What the source has to say, one line each on stderr.
pub fn print_notes(source: &Source) {
    for note in &source.info.notes {
        eprintln!("netto: {}", notes::sentence(note));
    }
}

/// Raises this process's soft limit on open files to its hard limit: on a
/// large host, BPF objects (a map and a link each, per CPU for the
/// sampler's perf events), /proc reads and the server's connections need
/// more than the usual soft limit of 1024. Children inherit it.
pub fn raise_file_limit() -> Result<()> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).context("reading the open file limit")?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
            .with_context(|| format!("raising the open file limit from {soft} to {hard}"))?;
    }
    Ok(())
}
