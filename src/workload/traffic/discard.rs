//! A discard server: accepts whatever arrives and throws it away.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::thread;

use super::bind::{accept, Bound};
use super::drive::{drive, is_transient};
use super::{Proto, Summary, TrafficError, Until};

const BUFFER_LEN: usize = 64 * 1024;

/// Unlike [`super::Receiver`], a discard server serves every TCP connection at once, each in its
/// own thread, so it can absorb several senders (or a reconnecting one) without any
/// of them stalling.
pub struct Discard {
    socket: Bound,
}

impl Discard {
    pub fn bind(proto: Proto, addr: SocketAddr) -> Result<Discard, TrafficError> {
        Ok(Discard {
            socket: Bound::new(proto, addr)?,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Discards traffic until `until`, then waits for its connection threads, which
    /// notice `until` within one receive timeout.
    pub fn run(self, until: Until<'_>) -> Result<Summary, TrafficError> {
        match &self.socket {
            Bound::Udp(socket) => {
                let mut summary = Summary::default();
                let mut buf = vec![0; BUFFER_LEN];
                drive(until, &mut summary, is_transient, || {
                    socket.recv(&mut buf).map(|n| Some(n as u64))
                })
                .map_err(TrafficError::io("udp discard receive"))?;
                Ok(summary)
            }
            Bound::Tcp(listener) => {
                let total = Mutex::new(Summary::default());
                thread::scope(|scope| -> Result<(), TrafficError> {
                    while !until.reached() {
                        let accepted =
                            accept(listener).map_err(TrafficError::io("tcp discard accept"))?;
                        let Some(stream) = accepted else { continue };
                        let total = &total;
                        thread::Builder::new()
                            .name("netto-discard".into())
                            .spawn_scoped(scope, move || {
                                let drained = drain(stream, until);
                                if let Ok(mut total) = total.lock() {
                                    *total += drained;
                                }
                            })
                            .map_err(TrafficError::io("starting a discard connection thread"))?;
                    }
                    Ok(())
                })?;
                Ok(total.into_inner().unwrap_or_else(|e| e.into_inner()))
            }
        }
    }
}

/// Reads until the peer closes, the connection breaks, or `until`; a broken connection
/// is the client's business, so its error is not reported.
fn drain(mut stream: TcpStream, until: Until<'_>) -> Summary {
    let mut summary = Summary::default();
    let mut buf = vec![0; BUFFER_LEN];
    let _ = drive(until, &mut summary, is_transient, || {
        stream.read(&mut buf).map(|n| (n > 0).then_some(n as u64))
    });
    summary
}
