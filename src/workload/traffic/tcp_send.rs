//! The TCP sender.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::socket::{self, AddressFamily, SockFlag, SockType};

use super::drive::{drive, is_transient};
use super::pipe::{Pipe, PIPE_LEN};
use super::scratch::ScratchFile;
use super::Syscall;
use super::{sendcall, sockopt};
use super::{Proto, SendConfig, SendSyscall, Summary, TrafficError, Until, IO_TIMEOUT};

/// How long to keep retrying the connection: the receiver is usually started at the
/// same moment and may not be listening yet.
const CONNECT_PATIENCE: Duration = Duration::from_secs(2);

const CONNECT_PAUSE: Duration = Duration::from_millis(50);

/// Big enough that sendfile streams from the page cache rather than re-sending one
/// hot block, small enough to create in a few milliseconds.
const SENDFILE_SOURCE_LEN: u64 = 4 << 20;

pub(super) fn send(config: &SendConfig, until: Until<'_>) -> Result<Summary, TrafficError> {
    if let Some(name) = &config.congestion {
        probe_congestion(config.dest, name)?;
    }
    let stream = connect(config.dest, until)?;
    if let Some(name) = &config.congestion {
        sockopt::set_congestion(stream.as_fd(), name).map_err(|cause| {
            TrafficError::Congestion {
                name: name.clone(),
                cause,
            }
        })?;
    }
    if let Some(rate) = config.max_rate {
        sockopt::set_max_pacing_rate(stream.as_fd(), rate).map_err(TrafficError::Rate)?;
    }
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(TrafficError::io("setting the TCP send timeout"))?;
    let fd = stream.as_fd();
    let payload = vec![0xa5; config.size];
    let mut summary = Summary::default();
    let sent = match config.syscall {
        SendSyscall::Sendto => drive(until, &mut summary, is_transient, || {
            until_peer_leaves(sendcall::sendto(fd, &payload, None))
        }),
        SendSyscall::Sendmsg => drive(until, &mut summary, is_transient, || {
            until_peer_leaves(sendcall::sendmsg(fd, &payload, None))
        }),
        SendSyscall::Write => drive(until, &mut summary, is_transient, || {
            until_peer_leaves(sendcall::write(fd, &payload))
        }),
        SendSyscall::Writev => drive(until, &mut summary, is_transient, || {
            until_peer_leaves(sendcall::writev(fd, &payload))
        }),
        SendSyscall::Sendfile => {
            let source = ScratchFile::create(SENDFILE_SOURCE_LEN)
                .map_err(TrafficError::io("creating the sendfile source file"))?;
            let len = source.len as libc::off_t;
            let mut offset: libc::off_t = 0;
            drive(until, &mut summary, is_transient, || {
                if offset >= len {
                    offset = 0;
                }
                let count = config.size.min((len - offset) as usize);
                until_peer_leaves(sendcall::sendfile(
                    fd,
                    source.file.as_fd(),
                    &mut offset,
                    count,
                ))
            })
        }
        SendSyscall::Splice => {
            let source = ScratchFile::create(SENDFILE_SOURCE_LEN)
                .map_err(TrafficError::io("creating the splice source file"))?;
            let mut pipe = Pipe::new().map_err(TrafficError::io("creating the splice pipe"))?;
            let mut offset: libc::loff_t = 0;
            let len = config.size.min(PIPE_LEN);
            drive(until, &mut summary, is_transient, || {
                until_peer_leaves(pipe.send(fd, source.file.as_fd(), &mut offset, len))
            })
        }
        SendSyscall::Sendmmsg => return Err(config.syscall.unsupported(Proto::Tcp)),
    };
    sent.map_err(TrafficError::io(format!(
        "tcp {} to {}",
        config.syscall, config.dest
    )))?;
    Ok(summary)
}

/// A receiver that closes or resets the connection ends the run, like a receiver
/// whose own duration ran out first; what was sent until then is still reported.
fn until_peer_leaves(sent: io::Result<u64>) -> io::Result<Option<u64>> {
    match sent {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Tries the congestion control on a scratch socket, so an algorithm the kernel lacks
/// is reported as such even when nothing is listening at the destination.
fn probe_congestion(dest: SocketAddr, name: &str) -> Result<(), TrafficError> {
    let family = match dest {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let socket = socket::socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)
        .map_err(|e| TrafficError::io("creating a TCP socket")(e.into()))?;
    sockopt::set_congestion(socket.as_fd(), name).map_err(|cause| TrafficError::Congestion {
        name: name.to_owned(),
        cause,
    })
}

/// Connects to `dest`, retrying for [`CONNECT_PATIENCE`] while nothing listens there yet.
pub(super) fn connect(dest: SocketAddr, until: Until<'_>) -> Result<TcpStream, TrafficError> {
    let give_up = Instant::now() + CONNECT_PATIENCE;
    loop {
        match TcpStream::connect_timeout(&dest, IO_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(cause) if Instant::now() >= give_up || until.reached() => {
                return Err(TrafficError::Connect { addr: dest, cause })
            }
            Err(_) => thread::sleep(CONNECT_PAUSE),
        }
    }
}
