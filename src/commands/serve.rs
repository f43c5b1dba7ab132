//! `netto serve`: the source (live or replayed) runs here, in the process
//! that may hold BPF objects; the HTTP server runs in a confined child
//! process (`netto serve-http`) fed every snapshot over a pipe. Ctrl-C,
//! SIGTERM or SIGHUP, to netto or to its whole group, stops the source and
//! closes the pipe, which stops the child (it ignores those signals); the
//! child ending for any other reason stops the source too.

use std::io::{self, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use netto::cli::{ServeArgs, ServeHttpArgs};
use netto::frontends::flame::otlp::Measured;
use netto::frontends::web;
use netto::frontends::web::feed::{self, Feed, ServeStart};
use netto::frontends::web::host_header::HostCheck;
use netto::frontends::web::otlp::Exporter;
use netto::frontends::web::sandbox::{self, Identity, Outbound};
use netto::frontends::web::server_process::{self, PidFd, ServerProcess};
use netto::frontends::web::state::{FlameWindow, ServeSettings, State};
use netto::source::{Control, Source};
use nix::sys::signal::Signal;

use super::signals::{stop_on_signals, when_stopped};
use super::startup;

/// How long the HTTP server process may take to stop once its pipe has
/// closed (it gives responses in progress 2 s) before it is killed.
const SERVER_STOP_GRACE: Duration = Duration::from_secs(10);

pub fn run(args: &ServeArgs) -> Result<ExitCode> {
    // Refuse before loading anything.
    let listener = listen(args.listen, args.allow_remote)?;
    let address = listener
        .local_addr()
        .context("reading the listening address")?;
    let identity = sandbox::identity(args.user.as_deref())?;
    // Signals first: one that arrives while a live source loads stops
    // everything as soon as the server runs, instead of killing netto.
    let signalled = stop_on_signals()?;
    let source = startup::view_source(&args.source)?;
    startup::print_notes(&source);
    let measured = Measured {
        host: source.info.host.clone(),
        kernel: source.info.kernel.clone(),
    };
    let otlp = args.otlp.settings(args.history, measured)?;
    let start = Feed::Start(Box::new(ServeStart {
        info: source.info.clone(),
        settings: ServeSettings {
            history_s: args.history,
            flame_s: FlameWindow::DEFAULT.seconds(),
            serve_budget_percent: args.serve_budget,
            otlp: otlp.is_some(),
        },
        hosts: HostCheck::new(args.allow_remote, &args.allow_host),
        otlp_headers: otlp.as_ref().map(|o| o.headers.clone()).unwrap_or_default(),
    }));
    let server = server_process::spawn(listener, identity, otlp.as_ref(), &start)?;
    eprintln!("netto: serving on http://{address}/ (Ctrl-C to stop)");
    if let Some(otlp) = &otlp {
        eprintln!(
            "netto: pushing profiles every {} s to {} ({})",
            otlp.interval_s,
            otlp.endpoint,
            otlp.protocol.name()
        );
    }
    supervise(source, server, signalled, args.duration)
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

/// What ends the serving.
enum Event {
    /// SIGINT, SIGTERM or SIGHUP, or `--duration` has passed.
    Stop,
    /// The HTTP server process has exited.
    ServerExited(io::Result<ExitStatus>),
}

/// Feeds the server until the source ends, then stops both: a replay that
/// played out stays served until a signal or the end of `duration`; a live
/// source that ended (an error, a signal, `duration`, the server gone)
/// ends the serving too.
fn supervise(
    source: Source,
    server: ServerProcess,
    signalled: Receiver<()>,
    duration: Option<f64>,
) -> Result<ExitCode> {
    let ServerProcess {
        mut child,
        feed: mut pipe,
        pidfd,
    } = server;
    let pid = child.id();
    // The HTTP server is part of what netto costs.
    let _ = source.controller().send(Control::OwnProcess(pid));
    let (events, next) = mpsc::channel();
    let stopped = Arc::new(AtomicBool::new(false));
    {
        let (events, control, stopped) = (events.clone(), source.controller(), stopped.clone());
        when_stopped(signalled, move || {
            stopped.store(true, Ordering::SeqCst);
            let _ = control.send(Control::Stop);
            let _ = events.send(Event::Stop);
        })?;
    }
    if let Some(seconds) = duration {
        let (events, control) = (events.clone(), source.controller());
        thread::Builder::new()
            .name("netto-duration".into())
            .spawn(move || {
                thread::sleep(Duration::from_secs_f64(seconds));
                let _ = control.send(Control::Stop);
                let _ = events.send(Event::Stop);
            })
            .context("starting the duration timer")?;
    }
    let control = source.controller();
    thread::Builder::new()
        .name("netto-server-watch".into())
        .spawn(move || {
            let status = child.wait();
            let _ = control.send(Control::Stop);
            let _ = events.send(Event::ServerExited(status));
        })
        .context("starting the server watch thread")?;

    for snapshot in source.snapshots.iter() {
        startup::announce_budget(&snapshot);
        if feed::send(&mut pipe, &Feed::Snapshot(Box::new(snapshot))).is_err() {
            break; // The server is gone; its exit status says why.
        }
    }
    let live = source.is_live();
    let measured = source.finish();
    let told = feed::send(&mut pipe, &Feed::End);
    let mut exited = None;
    if !live && measured.is_ok() && told.is_ok() {
        if let Ok(Event::ServerExited(status)) = next.recv() {
            exited = Some(status);
        }
    }
    drop(pipe);
    let status = match exited {
        Some(status) => status,
        None => server_exit(&next, &pidfd),
    };
    measured?;
    match status.context("waiting for the HTTP server process")? {
        status if status.success() => Ok(ExitCode::SUCCESS),
        status if stopped.load(Ordering::SeqCst) && died_of_a_stop_signal(status) => {
            Ok(ExitCode::SUCCESS)
        }
        status => bail!("the HTTP server process ended: {status}"),
    }
}

/// Whether the HTTP server process died of a signal that stops netto: it
/// ignores them, but one sent to the whole group (Ctrl-C, `systemctl
/// stop`) can reach it before it has started ignoring them. When netto got
/// the same stop, that is the stop asked for, not a failure.
fn died_of_a_stop_signal(status: ExitStatus) -> bool {
    status
        .signal()
        .and_then(|n| Signal::try_from(n).ok())
        .is_some_and(|s| server_process::STOP_SIGNALS.contains(&s))
}

/// The server's exit status once its pipe has closed; killed if it takes
/// longer than [`SERVER_STOP_GRACE`].
fn server_exit(next: &Receiver<Event>, server: &PidFd) -> io::Result<ExitStatus> {
    let deadline = Instant::now() + SERVER_STOP_GRACE;
    let mut killed = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match next.recv_timeout(left) {
            Ok(Event::ServerExited(status)) => return status,
            Ok(Event::Stop) => {}
            Err(RecvTimeoutError::Timeout) if !killed => {
                eprintln!("netto: the HTTP server process did not stop; killing it");
                // The watch thread may have reaped it this very moment:
                // then nothing is sent, and its exit status is on its way.
                server.kill()?;
                killed = true;
            }
            Err(RecvTimeoutError::Timeout) => thread::sleep(Duration::from_millis(100)),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("the server watch thread ended"))
            }
        }
    }
}

/// `netto serve-http`: the HTTP server process. It confines itself before
/// it reads anything, then serves what the pipe on stdin brings until the
/// pipe closes.
pub fn run_http(args: &ServeHttpArgs) -> Result<ExitCode> {
    // Before any thread starts (threads take the name they start with).
    nix::sys::prctl::set_name(server_process::HTTP_PROCESS_NAME)
        .context("naming the HTTP server process")?;
    server_process::close_inherited()?;
    let listener = server_process::listener()?;
    let cap = web::connections::Cap::of_this_process(web::WORKERS)
        .context("reading the open file limit")?;
    let identity = args
        .uid
        .zip(args.gid)
        .map(|(uid, gid)| Identity { uid, gid });
    // Whatever the exporter reads from files, it reads now.
    let exporter = match &args.otlp {
        Some(json) => Some(Exporter::prepare(
            serde_json::from_str(json).context("the OTLP settings")?,
        )?),
        None => None,
    };
    let outbound = match exporter {
        Some(_) => Outbound::Tcp,
        None => Outbound::Refused,
    };
    sandbox::confine(identity, outbound).context("confining the HTTP server process")?;
    let mut input = BufReader::new(io::stdin());
    let start = feed::start(&mut input)?;
    let hosts = start.hosts;
    let state = actix_web::web::Data::new(State::new(start.info, start.settings)?);
    if let Some(exporter) = exporter.map(|e| e.with_headers(start.otlp_headers)) {
        let exported = state.clone().into_inner();
        thread::Builder::new()
            .name(netto::collect::cpu_time::EXPORTER_THREAD.into())
            .spawn(move || exporter.run(exported))
            .context("starting the OTLP exporter")?;
        // The exporter's thread alone may connect out.
        sandbox::close_outbound().context("confining the HTTP server process")?;
    }
    actix_web::rt::System::new().block_on(async move {
        let server =
            web::server(listener, state.clone(), hosts, cap).context("starting the server")?;
        let handle = server.handle();
        let feeder = thread::Builder::new()
            .name("netto-feed".into())
            .spawn(move || {
                let fed = feed::pump(&mut input, &state);
                state.streams.close_all();
                drop(handle.stop(true));
                fed
            })
            .context("starting the feed thread")?;
        server_process::ready().context("telling netto the server is ready")?;
        server.await.context("running the web server")?;
        feeder
            .join()
            .map_err(|_| anyhow::anyhow!("the feed thread panicked"))?
            .context("the feed from netto")
    })?;
    Ok(ExitCode::SUCCESS)
}
