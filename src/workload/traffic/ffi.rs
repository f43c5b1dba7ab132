//! Small helpers shared by the raw syscall wrappers.

use std::io;
use std::mem;

use super::sockaddr::RawAddr;

/// Turns a syscall's `-1 and errno` convention into an `io::Result` of the byte count.
pub(crate) fn cvt(rc: isize) -> io::Result<u64> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as u64)
    }
}

/// An iovec over a buffer the kernel only reads; the C type has no const variant.
pub(crate) fn const_iovec(buf: &[u8]) -> libc::iovec {
    libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    }
}

pub(crate) fn mut_iovec(buf: &mut [u8]) -> libc::iovec {
    libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    }
}

/// A msghdr over `iovlen` iovecs starting at `iov`, with an optional destination and
/// no control data.
pub(crate) fn msghdr(iov: *mut libc::iovec, iovlen: usize, name: Option<&RawAddr>) -> libc::msghdr {
    // SAFETY: msghdr is plain old data; all zeroes means no name and no control data.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = iovlen as _;
    if let Some(name) = name {
        msg.msg_name = name.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = name.len();
    }
    msg
}
