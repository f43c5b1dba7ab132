//! Socket options std does not expose.

use std::ffi::OsString;
use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use nix::sys::time::TimeVal;

/// Sets SO_RCVTIMEO, which Linux also applies to accept(); std only offers it on
/// connected sockets, but the listeners must wake up to notice their deadline too.
pub(crate) fn set_receive_timeout(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<()> {
    let timeout = TimeVal::new(
        timeout.as_secs() as libc::time_t,
        timeout.subsec_micros() as libc::suseconds_t,
    );
    Ok(setsockopt(&fd, sockopt::ReceiveTimeout, &timeout)?)
}

/// Sets TCP_CONGESTION; the kernel answers ENOENT for an algorithm it does not have.
pub(crate) fn set_congestion(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    if name.contains('\0') {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    Ok(setsockopt(
        &fd,
        sockopt::TcpCongestion,
        &OsString::from(name),
    )?)
}
