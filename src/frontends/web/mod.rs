//! `netto serve`: the web view, the JSON API and Prometheus metrics, all
//! fed from one snapshot stream.
//!
//! Two processes: `netto serve` runs the source (and so holds the BPF
//! objects) and writes each snapshot to a pipe ([`feed`]); the serving
//! process ([`server_process`]), confined to no privileges at all ([`sandbox`]),
//! takes each snapshot into the [`state::State`] on its feed thread and
//! pushes it to the stream clients without ever waiting for one;
//! actix-web's workers answer requests from that state. So the collector's
//! pace is set by its own interval alone, whatever the clients do, and
//! whatever a request does, it does without privileges.

pub mod assets;
pub mod connections;
pub mod feed;
pub mod host_header;
pub mod limit;
pub mod metrics;
pub mod otlp;
pub mod recording;
pub mod routes;
pub mod sandbox;
pub mod server_process;
pub mod state;
pub mod stream;

use std::io;
use std::net::TcpListener;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{middleware, web, App, HttpServer};

use host_header::HostCheck;
use state::State;

/// Request handling threads (also read by `netto serve-http` for its
/// connection cap); requests are short, and stream clients cost
/// no thread.
pub const WORKERS: usize = 2;

/// Time to send a complete request head; slower clients are cut off.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Idle time allowed between requests on a kept-alive connection.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

/// Seconds a shutdown waits for responses in progress.
const SHUTDOWN_TIMEOUT_S: u64 = 2;

/// The HTTP server on `listener`, serving `state` to requests that name
/// a host `hosts` allows, within the serving budget of its settings, and
/// holding at most `cap` connections, none stalled for long
/// ([`connections`]); runs when awaited, inside an actix system. It
/// installs no signal handlers: the feed's end stops it.
pub fn server(
    listener: TcpListener,
    state: web::Data<State>,
    hosts: HostCheck,
    cap: connections::Cap,
) -> io::Result<Server> {
    let registry = std::sync::Arc::new(connections::Registry::new(cap.connections));
    let sweeper = registry.clone();
    actix_web::rt::spawn(async move {
        let mut every = actix_web::rt::time::interval(connections::SWEEP_EVERY);
        loop {
            every.tick().await;
            sweeper.sweep();
        }
    });
    let hosts = std::sync::Arc::new(hosts);
    // A replay measures nothing that serving could take from: only a live
    // source's serving is held to --serve-budget; clients' rates hold
    // either way.
    let cpu_bound = match state.info.origin {
        crate::source::Origin::Live => Some(state.settings.serve_budget_percent),
        crate::source::Origin::Replay(_) => None,
    };
    let governor = std::sync::Arc::new(limit::Governor::new(cpu_bound));
    Ok(HttpServer::new(move || {
        let (hosts, governor) = (hosts.clone(), governor.clone());
        App::new()
            // The last wrapped runs first: a foreign Host is refused before
            // it costs its client a token.
            .wrap(middleware::from_fn(move |request, next| {
                routes::limit(governor.clone(), request, next)
            }))
            .wrap(middleware::from_fn(move |request, next| {
                routes::check_host(hosts.clone(), request, next)
            }))
            .configure(routes::configure(state.clone()))
    })
    .on_connect(move |connection, extensions| {
        use std::os::fd::AsFd;
        if let Some(socket) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
            if let Some(registered) = registry.open(socket.as_fd()) {
                extensions.insert(registered);
            }
        }
    })
    .workers(WORKERS)
    .max_connections(cap.per_worker)
    .backlog(128)
    .client_request_timeout(REQUEST_TIMEOUT)
    .client_disconnect_timeout(Duration::from_secs(1))
    .keep_alive(KEEP_ALIVE)
    .shutdown_timeout(SHUTDOWN_TIMEOUT_S)
    .disable_signals()
    .listen(listener)?
    .run())
}
