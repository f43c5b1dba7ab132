//! One call of each sending syscall, for the ones std either lacks or hides behind a
//! different syscall (std's `send_to` is sendto, but `write` on a socket is not
//! guaranteed to stay write(2)). Each is nix's thin wrapper of the C library's
//! function of the same name, but for sendmmsg (see [`SendBatch`]).
//!
//! sendto, sendmsg and sendmmsg pass MSG_NOSIGNAL so a vanished peer is an EPIPE
//! error, not a process-killing SIGPIPE. write, writev and sendfile have no such flag
//! and rely on SIGPIPE being ignored, as the Rust runtime arranges at startup; a
//! program that restores its default action must not use them on sockets.

use std::io::{self, IoSlice};
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::sys::socket::{self, MsgFlags, SockaddrLike, SockaddrStorage};
use nix::sys::{sendfile as zerocopy, uio};
use nix::unistd;

/// Without a destination the address is null, as a connected socket's sender
/// passes it.
pub(crate) fn sendto(
    fd: BorrowedFd<'_>,
    buf: &[u8],
    dest: Option<&SockaddrStorage>,
) -> io::Result<u64> {
    let dest: &dyn SockaddrLike = match dest {
        Some(dest) => dest,
        None => &(),
    };
    Ok(socket::sendto(fd.as_raw_fd(), buf, dest, MsgFlags::MSG_NOSIGNAL)? as u64)
}

pub(crate) fn sendmsg(
    fd: BorrowedFd<'_>,
    buf: &[u8],
    dest: Option<&SockaddrStorage>,
) -> io::Result<u64> {
    let iov = [IoSlice::new(buf)];
    let sent = socket::sendmsg(fd.as_raw_fd(), &iov, &[], MsgFlags::MSG_NOSIGNAL, dest)?;
    Ok(sent as u64)
}

pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<u64> {
    Ok(unistd::write(fd, buf)? as u64)
}

/// Splits `buf` in two so the call really gathers from more than one buffer.
pub(crate) fn writev(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<u64> {
    let (head, tail) = buf.split_at(buf.len() / 2);
    Ok(uio::writev(fd, &[IoSlice::new(head), IoSlice::new(tail)])? as u64)
}

/// Sends up to `count` bytes of `file` from `offset`, advancing `offset`.
pub(crate) fn sendfile(
    socket: BorrowedFd<'_>,
    file: BorrowedFd<'_>,
    offset: &mut libc::off_t,
    count: usize,
) -> io::Result<u64> {
    Ok(zerocopy::sendfile(socket, file, Some(offset), count)? as u64)
}

/// A sendmmsg batch: the same payload to the same destination, `batch` times per call.
/// It owns everything its headers point at, in heap allocations that do not move
/// when the batch does.
///
/// The one raw call of the traffic generator: nix's sendmmsg sends as well, but
/// tells how much was sent only through an iterator that also reads, for every
/// message, a source address slot that a send never fills (uninitialised memory).
pub(crate) struct SendBatch {
    headers: Vec<libc::mmsghdr>,
    _iov: Box<libc::iovec>,
    _dest: Box<SockaddrStorage>,
    _payload: Vec<u8>,
}

impl SendBatch {
    pub(crate) fn new(payload: Vec<u8>, dest: SockaddrStorage, batch: usize) -> SendBatch {
        let dest = Box::new(dest);
        // The C type has no const variant; the kernel only reads the payload.
        let mut iov = Box::new(libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: payload.len(),
        });
        let headers = (0..batch)
            .map(|_| {
                // SAFETY: msghdr is plain old data; all zeroes is no name, no
                // iovec and no control data, filled in below.
                let mut msg: libc::msghdr = unsafe { mem::zeroed() };
                msg.msg_iov = &mut *iov;
                msg.msg_iovlen = 1;
                msg.msg_name = dest.as_ptr() as *mut libc::c_void;
                msg.msg_namelen = dest.len();
                libc::mmsghdr {
                    msg_hdr: msg,
                    msg_len: 0,
                }
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
        // SAFETY: every header points at the iovec, payload and address owned by
        // self, alive and unmoved for the call; the kernel writes only msg_len.
        let sent = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                self.headers.as_mut_ptr(),
                self.headers.len() as libc::c_uint,
                libc::MSG_NOSIGNAL,
            )
        };
        let sent = usize::try_from(sent).map_err(|_| io::Error::last_os_error())?;
        Ok(self.headers[..sent]
            .iter()
            .map(|h| u64::from(h.msg_len))
            .sum())
    }
}
