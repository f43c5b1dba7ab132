//! One call of each receiving syscall, so a receiver drives exactly the syscall it was
//! asked for (std's `recv` is recvfrom, `read` on a socket may not stay read(2)).

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::ffi::{cvt, msghdr, mut_iovec};

/// Also asks for the source address, as real datagram servers do, so the kernel
/// takes the same path it would for them.
pub(crate) fn recvfrom(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
    let mut from: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut from_len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `buf`, `from` and `from_len` are valid and exclusive during the call.
    cvt(unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            0,
            (&mut from as *mut libc::sockaddr_storage).cast(),
            &mut from_len,
        )
    })
}

pub(crate) fn recvmsg(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    let mut iov = mut_iovec(buf);
    let mut msg = msghdr(&mut iov, 1, None);
    // SAFETY: `msg` points at `iov`, which points into `buf`; both alive during the call.
    cvt(unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) })
}

pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    // SAFETY: `buf` is valid and exclusive for `buf.len()` bytes during the call.
    cvt(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// Splits `buf` in two so the call really scatters into more than one buffer.
pub(crate) fn readv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<u64> {
    let (head, tail) = buf.split_at_mut(buf.len() / 2);
    let iov = [mut_iovec(head), mut_iovec(tail)];
    // SAFETY: both iovecs point into `buf`, alive and exclusive during the call.
    cvt(unsafe { libc::readv(fd.as_raw_fd(), iov.as_ptr(), 2) })
}

/// A recvmmsg batch of `batch` buffers of `size` bytes. It owns everything its headers
/// point at, in heap allocations that do not move when the batch does.
pub(crate) struct RecvBatch {
    headers: Vec<libc::mmsghdr>,
    _iovecs: Vec<libc::iovec>,
    _buffers: Vec<u8>,
}

impl RecvBatch {
    pub(crate) fn new(batch: usize, size: usize) -> RecvBatch {
        let mut buffers = vec![0u8; batch * size];
        let mut iovecs: Vec<libc::iovec> = buffers.chunks_mut(size).map(mut_iovec).collect();
        let headers = iovecs
            .iter_mut()
            .map(|iov| libc::mmsghdr {
                msg_hdr: msghdr(iov, 1, None),
                msg_len: 0,
            })
            .collect();
        RecvBatch {
            headers,
            _iovecs: iovecs,
            _buffers: buffers,
        }
    }

    /// One recvmmsg call. MSG_WAITFORONE makes it return as soon as one datagram is
    /// in, instead of waiting to fill the batch; the socket's receive timeout bounds
    /// the wait for that first one.
    pub(crate) fn recv(&mut self, fd: BorrowedFd<'_>) -> io::Result<u64> {
        // SAFETY: every header points at an iovec and buffer owned by self.
        let received = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.headers.as_mut_ptr(),
                self.headers.len() as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        let received = cvt(received as isize)? as usize;
        Ok(self.headers[..received]
            .iter()
            .map(|h| u64::from(h.msg_len))
            .sum())
    }
}
