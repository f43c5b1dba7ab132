//! Socket options std does not expose.

use std::ffi::OsString;
use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use nix::sys::time::TimeVal;
use nix::{getsockopt_impl, setsockopt_impl, sockopt_impl};

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

sockopt_impl!(
    /// SO_MAX_PACING_RATE: the most bytes per second the kernel sends on
    /// the socket (TCP paces itself to it, whatever its congestion control).
    MaxPacingRate,
    Both,
    libc::SOL_SOCKET,
    libc::SO_MAX_PACING_RATE,
    u64
);

/// Caps the socket's sending rate at `bytes_per_s`, paced by the kernel.
pub(crate) fn set_max_pacing_rate(fd: BorrowedFd<'_>, bytes_per_s: u64) -> io::Result<()> {
    Ok(setsockopt(&fd, MaxPacingRate, &bytes_per_s)?)
}
