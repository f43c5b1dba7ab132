//! One call of every socket syscall netto accounts, on a connected UDP pair
//! on loopback: the traffic of a backend's start-up self-check, which asks
//! whether each opened a window ([`Loopback`] hands it to the kernel layer).
//! Sends come first and leave a datagram each for the receives that follow.

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
use crate::kernel::self_check::{ProbeCall, ProbeTraffic, Window};

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

    /// The window the call opens.
    pub fn window(self) -> Window {
        match self {
            SocketCall::Send(_) => Window::Send,
            SocketCall::Recv(_) => Window::Recv,
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

/// The self-check's traffic: each call once on a fresh [`LoopbackPair`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Loopback;

impl ProbeTraffic for Loopback {
    fn each_call(&self, made: &mut dyn FnMut(ProbeCall)) -> io::Result<()> {
        let pair = LoopbackPair::new()?;
        for call in SocketCall::all() {
            pair.call(call).map_err(|e| {
                io::Error::new(e.kind(), format!("{} on loopback failed: {e}", call.name()))
            })?;
            made(ProbeCall {
                name: call.name(),
                window: call.window(),
            });
        }
        Ok(())
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

    #[test]
    fn the_probe_makes_every_call_sends_first() {
        let mut made = Vec::new();
        Loopback
            .each_call(&mut |call| made.push((call.name, call.window)))
            .unwrap();
        let sends = made.iter().filter(|(_, w)| *w == Window::Send).count();
        assert_eq!(sends, SendSyscall::ALL.len());
        assert_eq!(made.len(), sends + RecvSyscall::ALL.len());
        assert!(made[..sends].iter().all(|(_, w)| *w == Window::Send));
        assert_eq!(made[0], ("sendto", Window::Send));
        assert_eq!(made[sends], ("recvfrom", Window::Recv));
    }
}
