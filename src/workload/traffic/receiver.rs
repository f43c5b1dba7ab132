//! A receiver that drives one chosen receive syscall.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};

use super::bind::{accept, Bound};
use super::drive::{drive, is_transient};
use super::pipe::{Pipe, PIPE_LEN};
use super::recvcall::{self, RecvBatch};
use super::Syscall;
use super::{Proto, RecvSyscall, Summary, TrafficError, Until, MMSG_BATCH};

/// Room for the largest datagram, and a typical read size for a stream.
const BUFFER_LEN: usize = 64 * 1024;

/// Binding and running are separate steps so a caller can announce that it is
/// listening (and learn the port it got for port 0) before traffic is started.
pub struct Receiver {
    socket: Bound,
    syscall: RecvSyscall,
}

impl Receiver {
    pub fn bind(
        proto: Proto,
        syscall: RecvSyscall,
        addr: SocketAddr,
    ) -> Result<Receiver, TrafficError> {
        syscall.check(proto)?;
        Ok(Receiver {
            socket: Bound::new(proto, addr)?,
            syscall,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Receives until `until`. TCP connections are served one after another; one
    /// that breaks ends only itself, the receiver goes on accepting.
    pub fn run(self, until: Until<'_>) -> Result<Summary, TrafficError> {
        let mut summary = Summary::default();
        match &self.socket {
            Bound::Udp(socket) => receive(socket.as_fd(), self.syscall, false, until, &mut summary)
                .map_err(TrafficError::io(format!("udp {}", self.syscall)))?,
            Bound::Tcp(listener) => {
                while !until.reached() {
                    let accepted = accept(listener).map_err(TrafficError::io("tcp accept"))?;
                    if let Some(stream) = accepted {
                        let _ = receive(stream.as_fd(), self.syscall, true, until, &mut summary);
                    }
                }
            }
        }
        Ok(summary)
    }
}

/// On a stream, a zero-byte receive is the peer closing; on a datagram socket it is
/// an empty datagram and counts like any other.
fn receive(
    fd: BorrowedFd<'_>,
    syscall: RecvSyscall,
    stream: bool,
    until: Until<'_>,
    summary: &mut Summary,
) -> io::Result<()> {
    let end_on_eof = |bytes: u64| (!stream || bytes > 0).then_some(bytes);
    let mut buf = vec![0; BUFFER_LEN];
    match syscall {
        RecvSyscall::Recvfrom => drive(until, summary, is_transient, || {
            recvcall::recvfrom(fd, &mut buf).map(end_on_eof)
        }),
        RecvSyscall::Recvmsg => drive(until, summary, is_transient, || {
            recvcall::recvmsg(fd, &mut buf).map(end_on_eof)
        }),
        RecvSyscall::Recvmmsg => {
            let mut batch = RecvBatch::new(MMSG_BATCH, BUFFER_LEN);
            drive(until, summary, is_transient, || {
                batch.recv(fd).map(end_on_eof)
            })
        }
        RecvSyscall::Read => drive(until, summary, is_transient, || {
            recvcall::read(fd, &mut buf).map(end_on_eof)
        }),
        RecvSyscall::Readv => drive(until, summary, is_transient, || {
            recvcall::readv(fd, &mut buf).map(end_on_eof)
        }),
        RecvSyscall::Splice => {
            let mut pipe = Pipe::new()?;
            drive(until, summary, is_transient, || {
                pipe.recv(fd, PIPE_LEN).map(end_on_eof)
            })
        }
    }
}
