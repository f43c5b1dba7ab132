use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;

use super::*;

#[test]
fn the_cap_keeps_every_connection_within_the_file_limit() {
    // The usual soft limit: two workers of 1024 connections and their
    // handles would not fit.
    let cap = Cap::for_file_limit(1024, 2);
    assert_eq!(cap.per_worker, (1024 - 64) / 2 / 2);
    assert!(2 * cap.per_worker as u64 * FILES_PER_CONNECTION + RESERVED_FILES <= 1024);
    // A raised limit: the most, no more.
    assert_eq!(
        Cap::for_file_limit(1 << 20, 2).connections,
        MOST_CONNECTIONS
    );
    // Nothing to spare still serves one.
    assert_eq!(Cap::for_file_limit(10, 2).connections, 1);
}

#[test]
fn a_response_stalls_only_with_data_waiting_and_nothing_moving() {
    let quiet = |s| Progress {
        quiet: Duration::from_secs(s),
        unsent: 1,
    };
    assert!(quiet(10).stalled(STALL));
    assert!(!quiet(9).stalled(STALL));
    assert!(!Progress {
        unsent: 0,
        ..quiet(60)
    }
    .stalled(STALL));
}

/// A server socket with a client that wrote `request` and reads nothing.
fn pair(listener: &TcpListener, request: &[u8]) -> (TcpStream, TcpStream) {
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.write_all(request).unwrap();
    let (server, _) = listener.accept().unwrap();
    (server, client)
}

#[test]
fn at_the_cap_the_quietest_connection_is_reset() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = Arc::new(Registry::new(2));
    let (old, _old_client) = pair(&listener, b"x");
    let _old = registry.open(old.as_fd()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (busy, _busy_client) = pair(&listener, b"x");
    let _busy = registry.open(busy.as_fd()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let (new, _new_client) = pair(&listener, b"x");
    let _new = registry.open(new.as_fd()).unwrap();
    assert_eq!(registry.open_now(), 2);
    assert_eq!(
        registry.aborted(),
        Aborted {
            stalled: 0,
            at_cap: 1
        }
    );
    // The oldest was shut: reading it ends at once.
    let mut buf = [0u8; 8];
    let read = std::io::Read::read(&mut &old, &mut buf).unwrap();
    assert_eq!(read, 1, "what the client sent is still there");
    assert_eq!(std::io::Read::read(&mut &old, &mut buf).unwrap(), 0);
    // The others are not.
    busy.set_nonblocking(true).unwrap();
    assert_eq!(std::io::Read::read(&mut &busy, &mut buf).unwrap(), 1);
    assert!(std::io::Read::read(&mut &busy, &mut buf).is_err());
}

#[test]
fn unsent_bytes_are_seen_while_the_client_reads_nothing() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let (server, _client) = pair(&listener, b"GET");
    server.set_nonblocking(true).unwrap();
    let chunk = vec![0u8; 1 << 16];
    while std::io::Write::write(&mut &server, &chunk).is_ok() {}
    let progress = progress(server.as_fd()).unwrap();
    assert!(progress.unsent > 0, "{progress:?}");
    assert!(progress.quiet < STALL, "{progress:?}");
}

#[test]
fn a_client_that_stops_reading_is_reset_and_an_idle_one_is_not() {
    // The kernel's side of the rule, on loopback: zero-window probes are
    // not progress, the unsent bytes stay, and the reset reaches the
    // client after what it had received.
    let stall = Duration::from_millis(400);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = Arc::new(Registry::stalling_after(8, stall));
    let (server, mut client) = pair(&listener, b"GET");
    let _registered = registry.open(server.as_fd()).unwrap();
    let (idle, _idle_client) = pair(&listener, b"GET");
    let _idle = registry.open(idle.as_fd()).unwrap();
    server.set_nonblocking(true).unwrap();
    let chunk = vec![7u8; 1 << 16];
    let mut sent = 0;
    while let Ok(n) = std::io::Write::write(&mut &server, &chunk) {
        sent += n;
    }
    registry.sweep();
    assert_eq!(registry.aborted().stalled, 0, "stalled too soon");
    std::thread::sleep(stall + Duration::from_millis(300));
    let progress = progress(server.as_fd()).unwrap();
    assert!(progress.stalled(stall), "{progress:?}");
    registry.sweep();
    // The idle one (nothing unsent) stays.
    assert_eq!(
        registry.aborted(),
        Aborted {
            stalled: 1,
            at_cap: 0
        }
    );
    assert_eq!(registry.open_now(), 1);
    drop(_registered);
    drop(server);
    let mut got = Vec::new();
    let error = std::io::Read::read_to_end(&mut client, &mut got).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "{error}");
    assert!(got.len() < sent, "{} of {sent}", got.len());
}
