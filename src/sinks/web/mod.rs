//! `netto serve`: the web view, the JSON API and Prometheus metrics, all
//! fed from one snapshot stream.
//!
//! The source runs on its own thread; [`pump`] (the hub, on another)
//! takes each snapshot into the [`state::State`] and pushes it to the
//! stream clients without ever waiting for one; actix-web's workers answer
//! requests from that state. So the collector's pace is set by its own
//! interval alone, whatever the clients do.

pub mod assets;
pub mod metrics;
pub mod routes;
pub mod state;
pub mod stream;

use std::io;
use std::net::TcpListener;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{web, App, HttpServer};

use crate::model::Snapshot;
use state::State;

/// Request handling threads; requests are short, and stream clients cost
/// no thread.
const WORKERS: usize = 2;

/// Open connections per worker, stream clients included; more wait in the
/// listen backlog.
const MAX_CONNECTIONS: usize = 512;

/// Time to send a complete request head; slower clients are cut off.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Idle time allowed between requests on a kept-alive connection.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

/// Seconds a shutdown waits for responses in progress.
const SHUTDOWN_TIMEOUT_S: u64 = 2;

/// The HTTP server on `listener`, serving `state`; runs when awaited,
/// inside an actix system. It installs no signal handlers: the command
/// stops it together with the source.
pub fn server(listener: TcpListener, state: web::Data<State>) -> io::Result<Server> {
    Ok(
        HttpServer::new(move || App::new().configure(routes::configure(state.clone())))
            .workers(WORKERS)
            .max_connections(MAX_CONNECTIONS)
            .backlog(128)
            .client_request_timeout(REQUEST_TIMEOUT)
            .client_disconnect_timeout(Duration::from_secs(1))
            .keep_alive(KEEP_ALIVE)
            .shutdown_timeout(SHUTDOWN_TIMEOUT_S)
            .disable_signals()
            .listen(listener)?
            .run(),
    )
}

/// The hub: every snapshot of the source into `state` until the source
/// ends, then tells the clients it has.
pub fn pump(snapshots: &Receiver<Snapshot>, state: &State) {
    for snapshot in snapshots.iter() {
        state.publish(snapshot);
    }
    state.end();
}
