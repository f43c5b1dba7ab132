//! Short TCP connections, one after another: the load that fills netto's
//! group map under `--by flow`, where every connection is a new flow at
//! each end.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::socket::{setsockopt, sockopt};

use super::bind::{accept, listen};
use super::tcp_send::connect;
use super::{target, Proto, Summary, TrafficError, Until, IO_TIMEOUT};

/// The most bytes one short connection writes: one window's worth, so a
/// write never waits for the peer to read (the closer never does).
const CHURN_MAX_SIZE: usize = 64 << 10;

/// What [`churn`] does.
#[derive(Debug, Clone)]
pub struct ChurnConfig {
    pub dest: SocketAddr,
    /// Bytes written on each connection before it is reset.
    pub size: usize,
    /// The most connections to open per second; `None`: as fast as they go.
    pub rate: Option<u32>,
}

impl ChurnConfig {
    pub fn validate(&self) -> Result<(), TrafficError> {
        target::check_destination(self.dest)?;
        if !(1..=CHURN_MAX_SIZE).contains(&self.size) {
            return Err(TrafficError::Size {
                proto: Proto::Tcp,
                size: self.size,
                max: CHURN_MAX_SIZE,
            });
        }
        if self.rate == Some(0) {
            return Err(TrafficError::ZeroRate);
        }
        Ok(())
    }
}

/// Opens a connection to `dest`, writes `size` bytes and resets it, again
/// and again until `until`, no faster than `rate`. Each connection ends
/// with a reset (SO_LINGER 0) rather than a FIN so that it leaves no
/// TIME_WAIT socket behind: the ephemeral ports last however long it runs.
/// A connection that fails midway (the server's accept queue full, a
/// reset before the write) is skipped; only the first must succeed.
/// `calls` counts the connections that wrote everything.
pub fn churn(config: &ChurnConfig, until: Until<'_>) -> Result<Summary, TrafficError> {
    let payload = vec![0x5a; config.size];
    let mut summary = Summary::default();
    // The first connection waits for the server, as every sender does.
    let first = connect(config.dest, until)?;
    one_connection(first, &payload, &mut summary)
        .map_err(TrafficError::io("writing on the first short connection"))?;
    let start = Instant::now();
    let mut opened: u64 = 0;
    while !until.reached() {
        if let Some(rate) = config.rate {
            let due = start + Duration::from_secs_f64(opened as f64 / f64::from(rate));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
                continue;
            }
        }
        opened += 1;
        if let Ok(stream) = TcpStream::connect_timeout(&config.dest, IO_TIMEOUT) {
            // A failed connection is the server's backlog, not the run's end.
            let _ = one_connection(stream, &payload, &mut summary);
        }
    }
    Ok(summary)
}

fn one_connection(mut stream: TcpStream, payload: &[u8], summary: &mut Summary) -> io::Result<()> {
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    setsockopt(
        &stream.as_fd(),
        sockopt::Linger,
        &libc::linger {
            l_onoff: 1,
            l_linger: 0,
        },
    )?;
    stream.write_all(payload)?;
    summary.record(payload.len() as u64);
    Ok(())
}

/// A server for [`churn`]: accepts each connection and closes it at once,
/// in one thread, which keeps up with thousands a second where a thread
/// per connection ([`super::Discard`]) would not. `calls` counts the
/// connections accepted; what they sent is never read.
pub struct Closer {
    listener: TcpListener,
}

impl Closer {
    pub fn bind(addr: SocketAddr) -> Result<Closer, TrafficError> {
        Ok(Closer {
            listener: listen(addr)?,
        })
    }

    pub fn run(self, until: Until<'_>) -> Result<Summary, TrafficError> {
        let mut summary = Summary::default();
        while !until.reached() {
            if accept(&self.listener)
                .map_err(TrafficError::io("tcp accept"))?
                .is_some()
            {
                summary.record(0);
            }
        }
        Ok(summary)
    }
}
