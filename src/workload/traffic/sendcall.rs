//! One call of each sending syscall, for the ones std either lacks or hides behind a
//! different syscall (std's `send_to` is sendto, but `write` on a socket is not
//! guaranteed to stay write(2)).
//!
//! sendto, sendmsg and sendmmsg pass MSG_NOSIGNAL so a vanished peer is an EPIPE
//! error, not a process-killing SIGPIPE. write, writev and sendfile have no such flag
//! and rely on SIGPIPE being ignored, as the Rust runtime arranges at startup; a
//! program that restores its default action must not use them on sockets.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr;

use super::ffi::{const_iovec, cvt, msghdr};
use super::sockaddr::RawAddr;

pub(crate) fn sendto(fd: BorrowedFd<'_>, buf: &[u8], dest: Option<&RawAddr>) -> io::Result<u64> {
    let (addr, len) = dest.map_or((ptr::null(), 0), |d| (d.as_ptr(), d.len()));
    // SAFETY: `buf` and `addr` are valid for the given lengths during the call.
    cvt(unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
            addr,
            len,
        )
    })
}

pub(crate) fn sendmsg(fd: BorrowedFd<'_>, buf: &[u8], dest: Option<&RawAddr>) -> io::Result<u64> {
    let mut iov = const_iovec(buf);
    let msg = msghdr(&mut iov, 1, dest);
    // SAFETY: `msg` points at `iov`, `buf` and `dest`, all alive during the call.
    cvt(unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) })
}

pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<u64> {
    // SAFETY: `buf` is valid for `buf.len()` bytes during the call.
    cvt(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// Splits `buf` in two so the call really gathers from more than one buffer.
pub(crate) fn writev(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<u64> {
    let (head, tail) = buf.split_at(buf.len() / 2);
    let iov = [const_iovec(head), const_iovec(tail)];
    // SAFETY: both iovecs point into `buf`, alive during the call.
    cvt(unsafe { libc::writev(fd.as_raw_fd(), iov.as_ptr(), 2) })
}

/// Sends up to `count` bytes of `file` from `offset`, advancing `offset`.
pub(crate) fn sendfile(
    socket: BorrowedFd<'_>,
    file: BorrowedFd<'_>,
    offset: &mut libc::off_t,
    count: usize,
) -> io::Result<u64> {
    // SAFETY: both descriptors are open and `offset` is a valid, exclusive pointer.
    cvt(unsafe { libc::sendfile(socket.as_raw_fd(), file.as_raw_fd(), offset, count) })
}

/// A sendmmsg batch: the same payload to the same destination, `batch` times per call.
/// It owns everything its headers point at, in heap allocations that do not move
/// when the batch does.
pub(crate) struct SendBatch {
    headers: Vec<libc::mmsghdr>,
    _iov: Box<libc::iovec>,
    _dest: Box<RawAddr>,
    _payload: Vec<u8>,
}

impl SendBatch {
    pub(crate) fn new(payload: Vec<u8>, dest: RawAddr, batch: usize) -> SendBatch {
        let dest = Box::new(dest);
        let mut iov = Box::new(const_iovec(&payload));
        let headers = (0..batch)
            .map(|_| libc::mmsghdr {
                msg_hdr: msghdr(&mut *iov, 1, Some(&*dest)),
                msg_len: 0,
            })
            .collect();
        SendBatch {
            headers,
            _iov: iov,
            _dest: dest,
            _payload: payload,
        }
    }

    /// One sendmmsg call; returns the payload bytes of the datagrams it sent.
    pub(crate) fn send(&mut self, fd: BorrowedFd<'_>) -> io::Result<u64> {
        // SAFETY: every header points at the iovec, payload and address owned by self.
        let sent = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                self.headers.as_mut_ptr(),
                self.headers.len() as libc::c_uint,
                libc::MSG_NOSIGNAL,
            )
        };
        let sent = cvt(sent as isize)? as usize;
        Ok(self.headers[..sent]
            .iter()
            .map(|h| u64::from(h.msg_len))
            .sum())
    }
}
