//! The loop every sender and receiver runs: one syscall after another until the end.

use std::io;

use super::{Summary, Until};

/// Calls `call` until `until` is reached, recording each `Ok(Some(bytes))`.
/// `Ok(None)` means the peer closed the stream. Errors that `transient` accepts (a
/// socket timeout expiring, say) are retried, so the loop gets to look at `until`
/// again; any other error ends the loop and is returned, with `summary` still
/// holding what was done before it.
pub(crate) fn drive(
    until: Until<'_>,
    summary: &mut Summary,
    transient: fn(&io::Error) -> bool,
    mut call: impl FnMut() -> io::Result<Option<u64>>,
) -> io::Result<()> {
    while !until.reached() {
        match call() {
            Ok(Some(bytes)) => summary.record(bytes),
            Ok(None) => break,
            Err(e) if transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Timeouts, signals and a momentarily full device queue: none of them mean the
/// socket is broken.
pub(crate) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted | io::ErrorKind::TimedOut
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}
