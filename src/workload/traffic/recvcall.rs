//! One call of each receiving syscall, so a receiver drives exactly the syscall it was
//! asked for (std's `recv` is recvfrom, `read` on a socket may not stay read(2)).
//! Each is nix's thin wrapper of the C library's function of the same name.
//!
//! recvfrom, recvmsg and recvmmsg ask for the source address, as real datagram
//! servers do, so the kernel takes the same path it would for them; with no room
//! for it (`()`), so the address is never read back.

use std::io::{self, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::sys::socket::{self, MsgFlags, MultiHeaders};
use nix::sys::uio;
use nix::unistd;

pub(crate) fn recvfrom(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    let (received, _) = socket::recvfrom::<()>(fd.as_raw_fd(), buf)?;
    Ok(received as u64)
}

pub(crate) fn recvmsg(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    let mut iov = [IoSliceMut::new(buf)];
    let received = socket::recvmsg::<()>(fd.as_raw_fd(), &mut iov, None, MsgFlags::empty())?;
    Ok(received.bytes as u64)
}

pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    Ok(unistd::read(fd, buf)? as u64)
}

/// Splits `buf` in two so the call really scatters into more than one buffer.
pub(crate) fn readv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    let (head, tail) = buf.split_at_mut(buf.len() / 2);
    let mut iov = [IoSliceMut::new(head), IoSliceMut::new(tail)];
    Ok(uio::readv(fd, &mut iov)? as u64)
}

/// A recvmmsg batch of `batch` buffers of `size` bytes.
pub(crate) struct RecvBatch {
    headers: MultiHeaders<()>,
    buffers: Vec<u8>,
    size: usize,
}

impl RecvBatch {
    pub(crate) fn new(batch: usize, size: usize) -> RecvBatch {
        RecvBatch {
            headers: MultiHeaders::preallocate(batch, None),
            buffers: vec![0; batch * size],
            size,
        }
    }

    /// One recvmmsg call. MSG_WAITFORONE makes it return as soon as one datagram is
    /// in, instead of waiting to fill the batch; the socket's receive timeout bounds
    /// the wait for that first one.
    pub(crate) fn recv(&mut self, fd: BorrowedFd<'_>) -> io::Result<u64> {
        let mut slices: Vec<[IoSliceMut<'_>; 1]> = self
            .buffers
            .chunks_mut(self.size)
            .map(|buffer| [IoSliceMut::new(buffer)])
            .collect();
        let received = socket::recvmmsg(
            fd.as_raw_fd(),
            &mut self.headers,
            slices.iter_mut(),
            MsgFlags::MSG_WAITFORONE,
            None,
        )?;
        Ok(received.map(|message| message.bytes as u64).sum())
    }
}
