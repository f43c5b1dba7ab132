//! One call of every socket syscall netto accounts, on a connected UDP pair
//! on loopback: the start-up self-check of a backend runs them and asks
//! whether each opened a window. Sends come first and leave a datagram each
//! for the receives that follow.

use std::fs::File;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::socket::SockaddrStorage;

use super::pipe::Pipe;
use super::recvcall::{self, RecvBatch};
use super::sendcall::{self, SendBatch};
use super::{RecvSyscall, SendSyscall, Syscall};

const PAYLOAD: &[u8] = b"netto self-check";

/// Two UDP sockets connected to each other, and a file to sendfile and
/// splice from.
pub struct LoopbackPair {
    sender: UdpSocket,
    receiver: UdpSocket,
    file: File,
}

/// A call and whether it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketCall {
    Send(SendSyscall),
    Recv(RecvSyscall),
}

impl SocketCall {
    /// Every call, sends first (the order [`LoopbackPair::call`] needs).
    pub fn all() -> impl Iterator<Item = SocketCall> {
        let sends = SendSyscall::ALL.iter().map(|&s| SocketCall::Send(s));
        sends.chain(RecvSyscall::ALL.iter().map(|&r| SocketCall::Recv(r)))
    }

    pub fn name(self) -> &'static str {
        match self {
            SocketCall::Send(s) => s.name(),
            SocketCall::Recv(r) => r.name(),
        }
    }
}

impl LoopbackPair {
    pub fn new() -> io::Result<LoopbackPair> {
        let bind = || UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        let (sender, receiver) = (bind()?, bind()?);
        sender.connect(receiver.local_addr()?)?;
        receiver.connect(sender.local_addr()?)?;
        // A lost datagram must fail the check, not hang start-up.
        receiver.set_read_timeout(Some(Duration::from_secs(1)))?;
        let mut file = memfd()?;
        file.write_all(PAYLOAD)?;
        Ok(LoopbackPair {
            sender,
            receiver,
            file,
        })
    }

    /// Makes `call` once; bytes moved.
    pub fn call(&self, call: SocketCall) -> io::Result<u64> {
        let out = self.sender.as_fd();
        let into = self.receiver.as_fd();
        let mut buf = [0u8; 64];
        match call {
            SocketCall::Send(SendSyscall::Sendto) => sendcall::sendto(out, PAYLOAD, None),
            SocketCall::Send(SendSyscall::Sendmsg) => sendcall::sendmsg(out, PAYLOAD, None),
            SocketCall::Send(SendSyscall::Sendmmsg) => {
                let dest = SockaddrStorage::from(self.receiver.local_addr()?);
                SendBatch::new(PAYLOAD.to_vec(), dest, 2).send(out)
            }
            SocketCall::Send(SendSyscall::Write) => sendcall::write(out, PAYLOAD),
            SocketCall::Send(SendSyscall::Writev) => sendcall::writev(out, PAYLOAD),
            SocketCall::Send(SendSyscall::Sendfile) => {
                let mut offset = 0;
                sendcall::sendfile(out, self.file.as_fd(), &mut offset, PAYLOAD.len())
            }
            SocketCall::Recv(RecvSyscall::Recvfrom) => recvcall::recvfrom(into, &mut buf),
            SocketCall::Recv(RecvSyscall::Recvmsg) => recvcall::recvmsg(into, &mut buf),
            SocketCall::Recv(RecvSyscall::Recvmmsg) => RecvBatch::new(2, buf.len()).recv(into),
            SocketCall::Recv(RecvSyscall::Read) => recvcall::read(into, &mut buf),
            SocketCall::Recv(RecvSyscall::Readv) => recvcall::readv(into, &mut buf),
            SocketCall::Send(SendSyscall::Splice) => {
                let mut offset = 0;
                Pipe::new()?.send(out, self.file.as_fd(), &mut offset, PAYLOAD.len())
            }
            SocketCall::Recv(RecvSyscall::Splice) => Pipe::new()?.recv(into, buf.len()),
        }
    }
}

/// An anonymous in-memory file: nothing on disk to clean up.
fn memfd() -> io::Result<File> {
    Ok(memfd_create(c"netto-self-check", MFdFlags::MFD_CLOEXEC)?.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_moves_data() {
        let pair = LoopbackPair::new().unwrap();
        for call in SocketCall::all() {
            let moved = pair
                .call(call)
                .unwrap_or_else(|e| panic!("{}: {e}", call.name()));
            assert!(moved > 0, "{} moved nothing", call.name());
        }
    }
}
