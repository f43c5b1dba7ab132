//! `netto serve`: a source (live or replayed) on its own thread, the hub
//! that feeds the web state on another, and the HTTP server; Ctrl-C or
//! SIGTERM stops all three.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::thread;

use anyhow::{bail, Context, Result};
use netto::cli::ServeArgs;
use netto::sinks::web::{self, state::Settings, state::State};
use netto::source::{Control, Source};

use super::signals::{stop_on_signals, when_stopped};
use super::startup;

/// The flame graph's window unless the page asks for another.
const FLAME_WINDOW_S: f64 = 30.0;

pub fn run(args: &ServeArgs) -> Result<ExitCode> {
    // Refuse before loading anything.
    let listener = listen(args.listen, args.allow_remote)?;
    // Signals first: one that arrives while a live source loads stops
    // everything as soon as the server runs, instead of killing netto.
    let signalled = stop_on_signals()?;
    let source = startup::view_source(&args.source, args.frequency)?;
    for note in &source.info.notes {
        eprintln!("netto: {note}");
    }
    let settings = Settings {
        history_s: args.history,
        flame_s: FLAME_WINDOW_S.min(args.history),
    };
    let state = actix_web::web::Data::new(State::new(source.info.clone(), settings)?);
    let address = listener
        .local_addr()
        .context("reading the listening address")?;
    actix_web::rt::System::new().block_on(async move {
        let server = web::server(listener, state.clone())
            .with_context(|| format!("serving on {address}"))?;
        let handle = server.handle();
        let control = source.controller();
        let stop = {
            let (state, handle) = (state.clone(), handle.clone());
            move || {
                let _ = control.send(Control::Stop);
                state.streams.close_all();
                drop(handle.stop(true));
            }
        };
        when_stopped(signalled, stop.clone())?;
        let hub = hub(source, state, stop)?;
        eprintln!("netto: serving on http://{address}/ (Ctrl-C to stop)");
        server.await.context("running the web server")?;
        hub.join()
            .map_err(|_| anyhow::anyhow!("the hub thread panicked"))?
    })?;
    Ok(ExitCode::SUCCESS)
}

fn listen(address: SocketAddr, allow_remote: bool) -> Result<TcpListener> {
    let loopback = address.ip().is_loopback();
    if !loopback && !allow_remote {
        bail!(
            "{address} is reachable from other hosts; pass --allow-remote to serve on it \
             (no authentication, no TLS)"
        );
    }
    let listener =
        TcpListener::bind(address).with_context(|| format!("cannot listen on {address}"))?;
    if !loopback {
        eprintln!(
            "netto: warning: serving on {address} to other hosts, without authentication or \
             TLS; every endpoint is read-only"
        );
    }
    Ok(listener)
}

/// The hub thread: snapshots into the web state until the source ends. A
/// replay that played out leaves the server up to browse the result; a
/// live source that ended (an error, or Ctrl-C) takes the server down too.
fn hub(
    source: Source,
    state: actix_web::web::Data<State>,
    stop_server: impl FnOnce() + Send + 'static,
) -> Result<thread::JoinHandle<Result<()>>> {
    thread::Builder::new()
        .name("netto-hub".into())
        .spawn(move || {
            web::pump(&source.snapshots, &state);
            let live = source.is_live();
            let result = source.finish();
            if live || result.is_err() {
                stop_server();
            }
            result
        })
        .context("starting the hub thread")
}
