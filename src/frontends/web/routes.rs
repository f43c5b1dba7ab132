//! The HTTP surface: the page, the JSON API under `/api/v1/`, the stream
//! and `/metrics`. Every endpoint is read-only: each resource has only a GET
//! route, so any other method gets 405. A request must name this server in
//! its Host header (see [`super::host_header`]). Query values are checked here and
//! answered with a JSON error, never a panic.

use std::convert::Infallible;
use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody, SizedStream};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse, HttpResponseBuilder};
use serde::Deserialize;
use serde_json::json;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

use super::assets::{Asset, ASSETS};
use super::host_header::{HostCheck, HostError};
use super::limit::Governor;
use super::metrics;
use super::state::{FlameFailure, FlameWindow, ProfileWindow, State, FLAME_WINDOWS_S};
use crate::frontends::flame::Weight;
use crate::frontends::notes;
use crate::source::SourceInfo;

/// The page may load only its own files: no inline script, nothing from
/// another origin, and no framing by another site.
const PAGE_POLICY: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'";

pub fn configure(state: web::Data<State>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |config| {
        config
            .app_data(state)
            .app_data(web::QueryConfig::default().error_handler(|err, _| {
                actix_web::error::InternalError::from_response(
                    err.to_string(),
                    error(StatusCode::BAD_REQUEST, &err.to_string()),
                )
                .into()
            }));
        for asset in &ASSETS {
            config.service(
                web::resource(asset.path).route(web::get().to(move || async move { page(asset) })),
            );
        }
        config
            .service(web::resource("/api").route(web::get().to(api)))
            .service(web::resource("/api/v1/source").route(web::get().to(source)))
            .service(web::resource("/api/v1/snapshot").route(web::get().to(snapshot)))
            .service(web::resource("/api/v1/history").route(web::get().to(history)))
            .service(web::resource("/api/v1/recording").route(web::get().to(recording)))
            .service(web::resource("/api/v1/flame/folded").route(web::get().to(folded)))
            .service(web::resource("/api/v1/flame/svg").route(web::get().to(flame_svg)))
            .service(web::resource("/api/v1/flame/pprof").route(web::get().to(flame_pprof)))
            // Where Parca's and Pyroscope's scrapers look for a CPU profile.
            .service(web::resource("/debug/pprof/profile").route(web::get().to(flame_pprof)))
            .service(web::resource("/api/v1/stream").route(web::get().to(stream)))
            .service(web::resource("/metrics").route(web::get().to(prometheus)))
            .service(web::resource("/healthz").route(web::get().to(health)))
            .default_service(web::to(not_found));
    }
}

/// One endpoint of the API, as `GET /api` lists it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Endpoint {
    pub path: &'static str,
    /// Its query parameters, as `name=...`.
    pub query: &'static str,
    pub about: &'static str,
    /// Whether it draws something per request (and so is held to
    /// `--serve-budget`).
    #[serde(skip)]
    pub draws: bool,
}

/// Every endpoint but the page's own files.
pub const ENDPOINTS: &[Endpoint] = &[
    Endpoint {
        path: "/api",
        query: "",
        about: "this list",
        draws: false,
    },
    Endpoint {
        path: "/api/v1/source",
        query: "",
        about: "what is measured or replayed, with its notes, and the server's settings",
        draws: false,
    },
    Endpoint {
        path: "/api/v1/snapshot",
        query: "",
        about: "the latest snapshot in full, stacks included (JSON)",
        draws: true,
    },
    Endpoint {
        path: "/api/v1/history",
        query: "seconds=N",
        about: "the kept snapshots without stacks, oldest first (JSON array)",
        draws: true,
    },
    Endpoint {
        path: "/api/v1/stream",
        query: "since=TS",
        about: "every new snapshot as it comes (server-sent events)",
        draws: false,
    },
    Endpoint {
        path: "/api/v1/flame/folded",
        query: "seconds=10|30|60|300&weight=time|samples",
        about: "folded stacks of a flame window",
        draws: true,
    },
    Endpoint {
        path: "/api/v1/flame/svg",
        query: "seconds=10|30|60|300&weight=time|samples",
        about: "the flame graph of a flame window (SVG)",
        draws: true,
    },
    Endpoint {
        path: "/api/v1/flame/pprof",
        query: "seconds=N&weight=time|samples",
        about: "a gzipped pprof profile of the last N seconds, rounded up to one of a few windows",
        draws: true,
    },
    Endpoint {
        path: "/debug/pprof/profile",
        query: "seconds=N&weight=time|samples",
        about: "the same profile, where Parca's and Pyroscope's scrapers look",
        draws: true,
    },
    Endpoint {
        path: "/metrics",
        query: "",
        about: "Prometheus metrics",
        draws: false,
    },
];

/// Holds every request to its client's rate, and one that draws to the
/// serving budget (see [`super::limit`]), before any route sees it.
pub async fn limit(
    governor: Arc<Governor>,
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    // Only a GET reaches a route that draws; any other method gets 405.
    let draws = request.method() == actix_web::http::Method::GET
        && ENDPOINTS
            .iter()
            .any(|e| e.draws && e.path == request.path());
    let client = request.peer_addr().map(|a| a.ip());
    match governor.admit(client, draws) {
        Ok(()) => Ok(next.call(request).await?.map_into_left_body()),
        Err(refusal) => {
            let mut response = error(StatusCode::TOO_MANY_REQUESTS, refusal.message());
            response.headers_mut().insert(
                header::RETRY_AFTER,
                header::HeaderValue::from(refusal.retry_after_s()),
            );
            Ok(request.into_response(response).map_into_right_body())
        }
    }
}

async fn api() -> HttpResponse {
    ok("application/json").json(json!({ "endpoints": ENDPOINTS }))
}

/// Answers a request whose Host this server does not answer to with 421
/// (or 400 without a usable Host), before any route sees it.
pub async fn check_host(
    hosts: Arc<HostCheck>,
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let host = request.headers().get(header::HOST).map(|h| h.as_bytes());
    match hosts.check(host) {
        Ok(()) => Ok(next.call(request).await?.map_into_left_body()),
        Err(e) => {
            let status = match e {
                HostError::Foreign(_) => StatusCode::MISDIRECTED_REQUEST,
                HostError::Missing | HostError::Malformed => StatusCode::BAD_REQUEST,
            };
            Ok(request
                .into_response(error(status, &e.to_string()))
                .map_into_right_body())
        }
    }
}

/// A response that no cache or content sniffing reinterprets.
fn ok(content_type: &str) -> HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    response
}

fn error(status: StatusCode, message: &str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "error": message }))
}

fn page(asset: &Asset) -> HttpResponse {
    ok(asset.content_type)
        .insert_header((header::CONTENT_SECURITY_POLICY, PAGE_POLICY))
        .body(asset.body)
}

async fn not_found(request: HttpRequest) -> HttpResponse {
    error(
        StatusCode::NOT_FOUND,
        &format!("no such endpoint: {}", request.path()),
    )
}

async fn source(state: web::Data<State>) -> HttpResponse {
    ok("application/json").json(json!({
        "source": source_json(&state.info),
        "settings": state.settings,
        "snapshots": state.snapshots(),
        "ended": state.ended(),
        "version": env!("CARGO_PKG_VERSION"),
    }))
}

/// The source as the API serves it: its notes in words, as they always
/// were, and beside them `note_details`, each note's kind and data in the
/// same order.
fn source_json(info: &SourceInfo) -> serde_json::Value {
    let mut source = json!(info);
    let words: Vec<String> = info.notes.iter().map(notes::sentence).collect();
    source["notes"] = json!(words);
    source["note_details"] = json!(info.notes);
    source
}

async fn snapshot(state: web::Data<State>) -> HttpResponse {
    match state.latest_json() {
        Some(json) => ok("application/json").body(json),
        None => error(StatusCode::SERVICE_UNAVAILABLE, "no snapshot yet"),
    }
}

/// `?seconds=N`: how far back.
#[derive(Debug, Deserialize)]
struct Window {
    seconds: Option<f64>,
}

fn bad_request(message: &str) -> Box<HttpResponse> {
    Box::new(error(StatusCode::BAD_REQUEST, message))
}

impl Window {
    /// Any span of the history (all of it when absent), or the 400
    /// response for a bad one.
    fn span(&self, history_s: f64) -> Result<f64, Box<HttpResponse>> {
        match self.seconds {
            None => Ok(history_s),
            Some(s) if s.is_finite() && s > 0.0 => Ok(s.min(history_s)),
            Some(_) => Err(bad_request("seconds must be a positive number")),
        }
    }

    /// A recording's span: all of the history when absent, else a
    /// positive number of seconds up to it, or the 400 response.
    fn recording(&self, history_s: f64) -> Result<f64, Box<HttpResponse>> {
        match self.seconds {
            None => Ok(history_s),
            Some(s) if s.is_finite() && s > 0.0 && s <= history_s => Ok(s),
            Some(_) => Err(bad_request(&format!(
                "seconds must be a positive number up to {history_s} (--history: how long \
                 snapshots are kept)"
            ))),
        }
    }

    /// One of the offered flame windows (the default when absent), or the
    /// 400 response naming them.
    fn flame(&self) -> Result<FlameWindow, Box<HttpResponse>> {
        match self.seconds {
            None => Ok(FlameWindow::DEFAULT),
            Some(s) => FlameWindow::of(s).ok_or_else(|| {
                let offered: Vec<String> = FLAME_WINDOWS_S.iter().map(f64::to_string).collect();
                bad_request(&format!("seconds must be one of {}", offered.join(", ")))
            }),
        }
    }

    /// A profile's window: the default flame window when absent, else
    /// whole seconds up to the longest flame window, or the 400 response.
    fn profile(&self) -> Result<ProfileWindow, Box<HttpResponse>> {
        let seconds = self.seconds.unwrap_or(FlameWindow::DEFAULT.seconds());
        ProfileWindow::of(seconds).ok_or_else(|| {
            let longest = FLAME_WINDOWS_S[FLAME_WINDOWS_S.len() - 1];
            bad_request(&format!(
                "seconds must be a positive number up to {longest} (the longest flame window)"
            ))
        })
    }
}

/// `?weight=time|samples`: what a flame graph's widths count.
#[derive(Debug, Deserialize)]
struct Widths {
    weight: Option<String>,
}

impl Widths {
    /// The weight asked for ([`Weight::default`] when absent), or the 400
    /// response naming the choices.
    fn weight(&self) -> Result<Weight, Box<HttpResponse>> {
        match self.weight.as_deref() {
            None => Ok(Weight::default()),
            Some(name) => Weight::ALL
                .into_iter()
                .find(|w| w.name() == name)
                .ok_or_else(|| {
                    let names: Vec<&str> = Weight::ALL.iter().map(|w| w.name()).collect();
                    bad_request(&format!("weight must be one of {}", names.join(", ")))
                }),
        }
    }
}

/// The kept snapshots as one JSON array, sent from the bytes every reader
/// shares rather than serialized again.
async fn history(state: web::Data<State>, window: web::Query<Window>) -> HttpResponse {
    let seconds = match window.span(state.settings.history_s) {
        Ok(seconds) => seconds,
        Err(response) => return *response,
    };
    let snapshots = state.history(seconds);
    let mut parts = Vec::with_capacity(2 * snapshots.len() + 2);
    for (i, snapshot) in snapshots.into_iter().enumerate() {
        parts.push(Bytes::from_static(if i == 0 { b"[" } else { b"," }));
        parts.push(snapshot);
    }
    if parts.is_empty() {
        parts.push(Bytes::from_static(b"["));
    }
    parts.push(Bytes::from_static(b"]"));
    let length = parts.iter().map(Bytes::len).sum::<usize>();
    let body = tokio_stream::iter(parts.into_iter().map(Ok::<_, Infallible>));
    ok("application/json").body(SizedStream::new(length as u64, body))
}

/// The last N seconds as a recording file, made once per snapshot and
/// span, one at a time.
async fn recording(state: web::Data<State>, window: web::Query<Window>) -> HttpResponse {
    let seconds = match window.recording(state.settings.history_s) {
        Ok(seconds) => seconds,
        Err(response) => return *response,
    };
    // Serializing minutes of snapshots takes tens of milliseconds and
    // more: off the async workers.
    match web::block(move || state.recording(seconds)).await {
        Ok(Some(Ok(file))) => ok("application/json")
            .insert_header((
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"netto.json\"",
            ))
            .body(file),
        Ok(Some(Err(message))) => error(StatusCode::INTERNAL_SERVER_ERROR, &message),
        Ok(None) => error(StatusCode::SERVICE_UNAVAILABLE, "no snapshot yet"),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "server shutting down"),
    }
}

async fn folded(
    state: web::Data<State>,
    window: web::Query<Window>,
    widths: web::Query<Widths>,
) -> HttpResponse {
    let (window, weight) = match window.flame().and_then(|w| Ok((w, widths.weight()?))) {
        Ok(asked) => asked,
        Err(response) => return *response,
    };
    match web::block(move || state.folded(window, weight)).await {
        Ok(text) => ok("text/plain; charset=utf-8").body(text),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "server shutting down"),
    }
}

async fn flame_svg(
    state: web::Data<State>,
    window: web::Query<Window>,
    widths: web::Query<Widths>,
) -> HttpResponse {
    let (window, weight) = match window.flame().and_then(|w| Ok((w, widths.weight()?))) {
        Ok(asked) => asked,
        Err(response) => return *response,
    };
    // Drawing takes milliseconds to tens of them: off the async workers.
    match web::block(move || state.flame_svg(window, weight)).await {
        Ok(Ok(svg)) => ok("image/svg+xml").body(svg),
        Ok(Err(FlameFailure::NoSamples)) => error(
            StatusCode::NOT_FOUND,
            "no stack samples in this window (is sampling on?)",
        ),
        Ok(Err(FlameFailure::Render(message))) => {
            error(StatusCode::INTERNAL_SERVER_ERROR, &message)
        }
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "server shutting down"),
    }
}

/// A pprof profile of the last N seconds, already there: unlike Go's
/// handler of the same path, nothing waits N seconds to collect it.
async fn flame_pprof(
    state: web::Data<State>,
    window: web::Query<Window>,
    widths: web::Query<Widths>,
) -> HttpResponse {
    let (window, weight) = match window.profile().and_then(|w| Ok((w, widths.weight()?))) {
        Ok(asked) => asked,
        Err(response) => return *response,
    };
    // Encoding and compressing take milliseconds: off the async workers.
    match web::block(move || state.pprof(window, weight)).await {
        Ok(profile) => ok("application/octet-stream")
            .insert_header((
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"netto.pb.gz\"",
            ))
            .body(profile),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "server shutting down"),
    }
}

/// `?since=TS`: also send the kept snapshots newer than TS first, so a
/// page that loaded the history misses nothing in between.
#[derive(Debug, Deserialize)]
struct Since {
    since: Option<f64>,
}

async fn stream(state: web::Data<State>, query: web::Query<Since>) -> HttpResponse {
    match state.subscribe(query.since) {
        Ok(messages) => ok("text/event-stream")
            // Proxies such as nginx would otherwise hold events back.
            .insert_header(("X-Accel-Buffering", "no"))
            .streaming(ReceiverStream::new(messages).map(Ok::<_, Infallible>)),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

/// 200 while snapshots arrive (or before the first, or after a replay
/// ended), 503 when a live source's have stopped: for liveness probes.
async fn health(state: web::Data<State>) -> HttpResponse {
    let health = state.health();
    let status = if health.status.healthy() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .json(health)
}

async fn prometheus(state: web::Data<State>) -> HttpResponse {
    match state.metrics.encode() {
        Ok(text) => ok(metrics::CONTENT_TYPE).body(text),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}
