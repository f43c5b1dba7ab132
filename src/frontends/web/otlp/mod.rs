//! `serve --otlp-endpoint`: each window's profiles pushed to an
//! OpenTelemetry receiver (a Collector, Pyroscope...), from the serving
//! process, never from the one that measures.
//!
//! The exporter is one thread of the serving process with a runtime of
//! its own. Every `--otlp-interval` it takes the kept snapshots that
//! arrived since the last window ([`State::stacks_after`]), draws their
//! profiles ([`otlp::request`], the pprof profile said in OTLP) and puts
//! them in a queue of [`QUEUE_WINDOWS`]; the sender takes them one at a
//! time, each try bounded by [`SEND_TIMEOUT`], retried with backoff. A
//! window that finds the queue full, or that no try delivered, is counted
//! by reason (`netto_otlp_windows_dropped_total`) and gone: the exporter
//! only ever reads the state, so a dead or slow receiver costs measuring
//! nothing, and serving no more than a queue of windows.
//!
//! It may connect out, which no other thread of the serving process may
//! ([`super::sandbox`]): the receiver's addresses are resolved by `netto
//! serve` at start, and its TLS roots read before the process confines
//! itself ([`Exporter::prepare`]), for a confined process opens no file.

pub mod dropped;
mod headers;
mod transport;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::state::State;
use crate::frontends::flame::otlp::{self, Measured};
use crate::frontends::flame::{pprof, Labels, Scope, Weight};
pub use dropped::Dropped;
pub use headers::Headers;
pub use transport::{read_roots, Transport, TransportError};

/// How profiles travel, as `OTEL_EXPORTER_OTLP_PROTOCOL` names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
pub enum Protocol {
    /// OTLP/gRPC: `ProfilesService/Export` over HTTP/2.
    #[default]
    #[value(name = "grpc")]
    Grpc,
    /// OTLP/HTTP: a protobuf POST.
    #[value(name = "http/protobuf")]
    HttpProtobuf,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// The path OTLP/HTTP posts profiles to when the endpoint names none.
pub const HTTP_PROFILES_PATH: &str = "/v1development/profiles";

/// What the serving process is told about the receiver: on its command
/// line, all but the headers, which hold secrets and travel over the feed
/// (`Feed::Start`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportSettings {
    /// `--otlp-endpoint` as given.
    pub endpoint: String,
    pub protocol: Protocol,
    /// `--otlp-interval`: the window, in seconds.
    pub interval_s: f64,
    /// The endpoint's host's addresses, resolved at start.
    pub addresses: Vec<SocketAddr>,
    /// `--otlp-ca-file`; without it, an https endpoint is checked against
    /// the system's CAs.
    pub ca_file: Option<PathBuf>,
    pub measured: Measured,
    /// `--otlp-budget`: the most CPU the exporter may take over a
    /// window, in percent of one CPU.
    pub budget_percent: f64,
    #[serde(skip)]
    pub headers: Headers,
}

/// Windows waiting to be sent, at most: past it, a new window is dropped
/// (`queue_full`) rather than memory grown for a receiver that keeps up
/// with nothing.
pub const QUEUE_WINDOWS: usize = 4;

/// Longest one try at sending a window may take, connecting included.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Tries per window, the waits between them doubling from a second.
pub const TRIES: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

#[derive(Debug, Error)]
pub enum ExportError {
    #[error("the OTLP exporter's runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// The exporter, made before the serving process confines itself and run
/// in a thread of its own after.
pub struct Exporter {
    settings: ExportSettings,
    runtime: tokio::runtime::Runtime,
    transport: Transport,
}

impl Exporter {
    /// Reads what must be read while files can still be opened (the TLS
    /// roots) and makes the runtime and the connection's plan; connects to
    /// nothing yet.
    pub fn prepare(settings: ExportSettings) -> Result<Exporter, ExportError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(ExportError::Runtime)?;
        let transport = {
            let _inside = runtime.enter();
            Transport::new(&settings)?
        };
        Ok(Exporter {
            settings,
            runtime,
            transport,
        })
    }

    /// Sends `headers` with every push (the serving process has them from
    /// the feed, after it made the exporter).
    pub fn with_headers(mut self, headers: Headers) -> Exporter {
        self.settings.headers = headers;
        self
    }

    /// Sends a window every interval until the process ends.
    pub fn run(self, state: Arc<State>) {
        let Exporter {
            settings,
            runtime,
            transport,
        } = self;
        let every = Duration::from_secs_f64(settings.interval_s);
        runtime.block_on(async move {
            let (queue, mut windows) = tokio::sync::mpsc::channel(QUEUE_WINDOWS);
            let metrics = state.clone();
            let headers = settings.headers.clone();
            tokio::spawn(async move {
                while let Some(window) = windows.recv().await {
                    match send(&transport, &headers, window).await {
                        Ok(()) => metrics.metrics.otlp_sent(),
                        Err(reason) => metrics.metrics.otlp_dropped(reason),
                    }
                }
            });
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut after_ts = f64::NEG_INFINITY;
            // The runtime runs on this thread alone: its CPU time is
            // everything the exporter spends, sending included.
            let allowed =
                Duration::from_secs_f64(settings.interval_s * settings.budget_percent / 100.0);
            let mut spent_before = thread_cpu();
            loop {
                tick.tick().await;
                let spent = thread_cpu();
                let over = spent.saturating_sub(spent_before) > allowed;
                spent_before = spent;
                if over {
                    // Skipped, not put off: the next window starts here.
                    after_ts = state
                        .stacks_after(after_ts)
                        .last()
                        .map_or(after_ts, |s| s.ts);
                    state.metrics.otlp_dropped(Dropped::OverBudget);
                    continue;
                }
                let (window, newest) =
                    draw(&state, after_ts, settings.interval_s, &settings.measured);
                after_ts = newest.unwrap_or(after_ts);
                if queue.try_send(window).is_err() {
                    state.metrics.otlp_dropped(Dropped::QueueFull);
                }
            }
        });
    }
}

/// This thread's CPU time so far (zero where the clock cannot be read,
/// which leaves the exporter unbounded rather than stopped).
fn thread_cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map_or(Duration::ZERO, Duration::from)
}

/// The export of the kept snapshots newer than `after_ts`, and the newest
/// one's time (`None` when none arrived).
fn draw(
    state: &State,
    after_ts: f64,
    interval_s: f64,
    measured: &Measured,
) -> (
    opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest,
    Option<f64>,
) {
    let taken = state.stacks_after(after_ts);
    let newest = taken.last().map(|s| s.ts);
    let labels = Labels {
        title: String::new(),
        subtitle: String::new(),
        estimated: false,
    };
    let scope = if taken.iter().any(|s| s.attribution.is_some()) {
        Scope::EachGroup
    } else {
        Scope::All
    };
    let mut profile = pprof::profile(taken.iter().map(Arc::as_ref), &labels, Weight::Time, scope);
    if taken.is_empty() {
        // A quiet window still says when it was.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let span = Duration::from_secs_f64(interval_s).min(now);
        profile.time_nanos = i64::try_from((now - span).as_nanos()).unwrap_or(0);
        profile.duration_nanos = i64::try_from(span.as_nanos()).unwrap_or(0);
    }
    (otlp::request(&profile, measured), newest)
}

/// One window delivered, or why not after every try.
async fn send(
    transport: &Transport,
    headers: &Headers,
    window: opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest,
) -> Result<(), Dropped> {
    let mut wait = FIRST_BACKOFF;
    let mut last = Dropped::Unreachable;
    for attempt in 1..=TRIES {
        match tokio::time::timeout(SEND_TIMEOUT, transport.export(window.clone(), headers)).await {
            Ok(Ok(())) => return Ok(()),
            // A receiver that refused the window would refuse it again.
            Ok(Err(e)) if e.reason() == Dropped::Rejected => return Err(Dropped::Rejected),
            Ok(Err(e)) => last = e.reason(),
            Err(_) => last = Dropped::Timeout,
        }
        if attempt < TRIES {
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests;
