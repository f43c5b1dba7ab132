//! splice(2) through a pipe, the only way it moves data: a sender splices a
//! regular file into the pipe and the pipe into its socket (a server sending
//! a file), a receiver splices its socket into the pipe and the pipe into
//! /dev/null. The file and /dev/null sides move page references, not bytes,
//! and are not socket calls: only the socket splice is a socket window.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::fcntl::{self, OFlag, SpliceFFlags};
use nix::unistd;

/// A pipe's default capacity: a splice of this much never waits for room.
pub(crate) const PIPE_LEN: usize = 64 * 1024;

pub(crate) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// Bytes written into the pipe and not yet spliced out of it.
    held: usize,
    discard: File,
}

impl Pipe {
    pub(crate) fn new() -> io::Result<Pipe> {
        let (read, write) = unistd::pipe2(OFlag::O_CLOEXEC)?;
        let discard = OpenOptions::new().write(true).open("/dev/null")?;
        Ok(Pipe {
            read,
            write,
            held: 0,
            discard,
        })
    }

    /// One splice of up to `len` bytes from the pipe into `socket`, after
    /// filling the pipe from `source` at `offset` (wrapping at its end) when
    /// it holds less. `len` must fit the pipe ([`PIPE_LEN`]).
    pub(crate) fn send(
        &mut self,
        socket: BorrowedFd<'_>,
        source: BorrowedFd<'_>,
        offset: &mut libc::loff_t,
        len: usize,
    ) -> io::Result<u64> {
        while self.held < len {
            match splice(source, Some(offset), self.write.as_fd(), len - self.held)? {
                0 => *offset = 0,
                n => self.held += n as usize,
            }
        }
        let sent = splice(self.read.as_fd(), None, socket, self.held)?;
        self.held -= sent as usize;
        Ok(sent)
    }

    /// One splice of up to `len` bytes from `socket` into the pipe, which is
    /// then emptied so the next call has room.
    pub(crate) fn recv(&mut self, socket: BorrowedFd<'_>, len: usize) -> io::Result<u64> {
        let received = splice(socket, None, self.write.as_fd(), len)?;
        let mut left = received;
        while left > 0 {
            left -= splice(self.read.as_fd(), None, self.discard.as_fd(), left as usize)?;
        }
        Ok(received)
    }
}

/// splice(2) of up to `len` bytes; `from_offset` is the position in a
/// regular file, advanced by the kernel (pipes and sockets have none).
fn splice(
    from: BorrowedFd<'_>,
    from_offset: Option<&mut libc::loff_t>,
    to: BorrowedFd<'_>,
    len: usize,
) -> io::Result<u64> {
    let moved = fcntl::splice(
        from,
        from_offset,
        to,
        None,
        len,
        SpliceFFlags::SPLICE_F_MOVE,
    )?;
    Ok(moved as u64)
}
