//! `netto top`: the terminal UI on a live or a replayed snapshot stream.
//! Snapshots, keys and signals arrive as messages on one channel, so the
//! loop sleeps until something happens and draws once per wake-up.

use std::io::{self, IsTerminal};
use std::iter;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use netto::cli::TopArgs;
use netto::frontends::flame::Labels;
use netto::frontends::tui::app::{App, Effect, TopSettings};
use netto::frontends::tui::terminal::Screen;
use netto::frontends::tui::{draw, input};
use netto::model::Snapshot;
use netto::source::{Control, Source};
use ratatui::crossterm::event::{self, Event, KeyEvent};

use super::signals::on_signals;
use super::startup;
use super::write::write_flame_graph;

enum Message {
    /// Boxed: the other messages are a few bytes.
    Snapshot(Box<Snapshot>),
    Key(KeyEvent),
    /// The terminal changed size.
    Redraw,
    /// SIGINT, SIGTERM or SIGHUP.
    Signal,
    /// The source delivered everything and stopped, and how.
    Ended(Result<()>),
    KeysFailed(io::Error),
}

pub fn run(args: &TopArgs) -> Result<ExitCode> {
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        bail!("netto top needs a terminal; `netto stat --json` and `netto record` write to files and pipes");
    }
    // Signals first: one that arrives while a live source loads ends the
    // run as soon as the screen is up, instead of killing netto.
    let (tx, messages) = mpsc::channel();
    let signals = tx.clone();
    on_signals(move || {
        let _ = signals.send(Message::Signal);
    })?;
    let source = startup::view_source(&args.source)?;
    let settings = TopSettings {
        history_s: args.history,
        flame_s: args.flame_seconds,
        flame_weight: args.weight.into(),
        speed: if args.source.replay.is_some() {
            args.source.speed
        } else {
            1.0
        },
    };
    let mut app = App::new(source.info.clone(), settings);
    let control = source.controller();
    feed(source, tx.clone())?;

    let shown = show(&mut app, &messages, &control, tx);
    // The terminal is back by now; the source may take a moment to detach.
    let _ = control.send(Control::Stop);
    let ended = if app.ended {
        Ok(())
    } else {
        wait_for_end(&messages)
    };
    shown?;
    ended?;
    Ok(ExitCode::SUCCESS)
}

/// Hands the source's snapshots to the UI, then how it ended.
fn feed(source: Source, tx: Sender<Message>) -> Result<()> {
    thread::Builder::new()
        .name("netto-top-feed".into())
        .spawn(move || {
            for snapshot in source.snapshots.iter() {
                if tx.send(Message::Snapshot(Box::new(snapshot))).is_err() {
                    break;
                }
            }
            let _ = tx.send(Message::Ended(source.finish()));
        })
        .context("starting the snapshot thread")?;
    Ok(())
}

/// Blocks on the terminal; runs until the process exits.
fn read_keys(tx: Sender<Message>) -> Result<()> {
    thread::Builder::new()
        .name("netto-top-keys".into())
        .spawn(move || loop {
            let message = match event::read() {
                Ok(Event::Key(key)) => Message::Key(key),
                Ok(Event::Resize(..)) => Message::Redraw,
                Ok(_) => continue,
                Err(e) => {
                    let _ = tx.send(Message::KeysFailed(e));
                    break;
                }
            };
            if tx.send(message).is_err() {
                break;
            }
        })
        .context("starting the keyboard thread")?;
    Ok(())
}

/// The UI proper: the screen is restored when this returns, however.
fn show(
    app: &mut App,
    messages: &Receiver<Message>,
    control: &Sender<Control>,
    tx: Sender<Message>,
) -> Result<()> {
    let mut screen = Screen::enter().context("taking over the terminal")?;
    read_keys(tx)?;
    loop {
        screen
            .draw(|frame| draw::draw(app, frame))
            .context("drawing")?;
        let Ok(first) = messages.recv() else {
            return Ok(());
        };
        // Everything already waiting, then one frame: a fast replay or a
        // held key costs one redraw, not one per message.
        for message in iter::once(first).chain(messages.try_iter()) {
            if !handle(app, message, control)? {
                return Ok(());
            }
        }
    }
}

/// Applies one message; false to quit.
fn handle(app: &mut App, message: Message, control: &Sender<Control>) -> Result<bool> {
    match message {
        Message::Snapshot(snapshot) => app.push(*snapshot),
        Message::Key(key) => match input::handle_key(app, &key) {
            Some(Effect::Quit) => return Ok(false),
            Some(Effect::SetFrequency(hz)) if control.send(Control::SetFrequency(hz)).is_err() => {
                app.status = Some("the source has stopped".to_owned());
            }
            Some(Effect::WriteFlameGraph) => app.status = Some(flame_graph(app)),
            Some(Effect::SetFrequency(_)) | None => {}
        },
        Message::Redraw => {}
        Message::Signal => return Ok(false),
        Message::Ended(result) => {
            app.source_ended();
            result?;
        }
        Message::KeysFailed(e) => return Err(anyhow::Error::new(e).context("reading keys")),
    }
    Ok(true)
}

fn wait_for_end(messages: &Receiver<Message>) -> Result<()> {
    for message in messages {
        if let Message::Ended(result) = message {
            return result;
        }
    }
    Ok(())
}

/// Writes a flame graph of the last seconds on screen next to where netto
/// was started; returns what to tell the user.
fn flame_graph(app: &App) -> String {
    let seconds = app.settings.flame_s;
    let stacks = app.flame_stacks(seconds);
    if stacks.is_empty() {
        return format!("no stack samples in the last {seconds:.0} s: no flame graph written");
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = format!("netto-top-{now}.svg");
    let path =
        std::env::current_dir().map_or_else(|_| Path::new(&name).to_owned(), |d| d.join(&name));
    let info = &app.info;
    let run = if app.live() {
        "netto top".to_owned()
    } else {
        format!("a {}", info.origin)
    };
    let labels = Labels {
        title: format!("Kernel network stack CPU on {}", info.host),
        subtitle: format!(
            "kernel {}, the last {seconds:.0} s of {run}, {} backend",
            info.kernel, info.backend
        ),
        estimated: app.estimated_in(seconds),
    };
    let programs = app.flame_programs(seconds);
    match write_flame_graph(
        &stacks,
        &labels,
        app.settings.flame_weight,
        &programs,
        &path,
    ) {
        Ok(()) => format!(
            "flame graph of the last {seconds:.0} s written to {}",
            path.display()
        ),
        Err(e) => format!("no flame graph: {e:#}"),
    }
}
