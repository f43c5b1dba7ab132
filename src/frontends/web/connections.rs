//! What a client that stops reading may hold: not memory, and not a slot
//! another client needs. actix-web has no write timeout, and a response
//! it cannot send (up to a whole history) stays in memory with its
//! connection for as long as the client keeps the socket open. So every
//! connection is registered here as it opens, and the kernel's own view of
//! it (`TCP_INFO`, `SIOCOUTQ`) says when it last moved data:
//!
//! - a connection with data the client has not taken, and no data moved
//!   either way for [`STALL`], is aborted (a reset, so the kernel frees its
//!   queue at once), and actix then drops the response;
//! - at most [`Cap::connections`] are open, below the file limit; a new one
//!   past the cap aborts the open connection that has moved data least
//!   recently, so stalled and idle clients give way to a scrape however
//!   many of them there are, and the newcomer waits for nothing.
//!
//! Both act on the socket only; what held the response goes when actix
//! sees the socket fail.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::socket::{setsockopt, shutdown, sockopt, Shutdown};

/// No data moved either way for this long, with data waiting for the
/// client: the response is dropped.
pub const STALL: Duration = Duration::from_secs(10);

/// How often connections are checked for [`STALL`].
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Open connections at most, when the file limit allows.
const MOST_CONNECTIONS: usize = 1024;

/// Files the serving process keeps for itself: the listener, the feed,
/// epoll, the blocking pool, standard streams.
const RESERVED_FILES: u64 = 64;

/// Files each connection takes: its socket, and the registry's handle on
/// it.
const FILES_PER_CONNECTION: u64 = 2;

/// How many connections the serving process holds, from its file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// Connections registered at most.
    pub connections: usize,
    /// actix-web's own bound for each worker: as many again, so that it
    /// never stops accepting while aborted connections are being dropped,
    /// and still within the file limit.
    pub per_worker: usize,
}

impl Cap {
    /// The cap for `workers` workers under a soft file limit of `files`:
    /// every connection actix could hold, with its registry handle, fits.
    pub fn for_file_limit(files: u64, workers: usize) -> Cap {
        let spare = files.saturating_sub(RESERVED_FILES);
        let per_worker = (spare / FILES_PER_CONNECTION / workers as u64) as usize;
        let per_worker = per_worker.clamp(1, MOST_CONNECTIONS);
        Cap {
            connections: per_worker,
            per_worker,
        }
    }

    /// The cap under this process's soft file limit (read before the
    /// sandbox, which refuses `prlimit64`).
    pub fn of_this_process(workers: usize) -> std::io::Result<Cap> {
        let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)?;
        Ok(Cap::for_file_limit(soft, workers))
    }
}

/// What the kernel says of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Since data last moved either way.
    pub quiet: Duration,
    /// Bytes the kernel holds that the client has not acknowledged.
    pub unsent: u64,
}

impl Progress {
    /// Whether the response makes no progress: data waits, nothing has
    /// moved for `stall`.
    pub fn stalled(self, stall: Duration) -> bool {
        self.unsent > 0 && self.quiet >= stall
    }
}

/// The open connections, by the order they opened in.
#[derive(Debug)]
pub struct Registry {
    cap: usize,
    /// [`STALL`], but for the tests.
    stall: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    open: BTreeMap<u64, OwnedFd>,
    aborted_stalled: u64,
    aborted_at_cap: u64,
}

/// Held in a connection's extensions: it leaves the registry when actix
/// drops the connection.
pub struct Registered {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.lock().open.remove(&self.id);
    }
}

/// Connections aborted so far, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Aborted {
    pub stalled: u64,
    pub at_cap: u64,
}

impl Registry {
    pub fn new(cap: usize) -> Registry {
        Registry::stalling_after(cap, STALL)
    }

    /// A registry that drops responses stalled for `stall`.
    pub fn stalling_after(cap: usize, stall: Duration) -> Registry {
        Registry {
            cap,
            stall,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection's socket. At the cap, the connection
    /// that has been quiet longest is aborted first; one whose socket
    /// cannot be registered (no file left) is aborted itself.
    pub fn open(self: &Arc<Self>, socket: BorrowedFd<'_>) -> Option<Registered> {
        let Ok(handle) = socket.try_clone_to_owned() else {
            abort(socket);
            return None;
        };
        let mut inner = self.lock();
        if inner.open.len() >= self.cap {
            let quietest = inner
                .open
                .iter()
                .map(|(id, fd)| (*id, progress(fd.as_fd()).map_or(Duration::MAX, |p| p.quiet)))
                .max_by_key(|(id, quiet)| (*quiet, std::cmp::Reverse(*id)))
                .map(|(id, _)| id);
            if let Some(fd) = quietest.and_then(|id| inner.open.remove(&id)) {
                abort(fd.as_fd());
                inner.aborted_at_cap += 1;
            }
        }
        let id = inner.next;
        inner.next += 1;
        inner.open.insert(id, handle);
        Some(Registered {
            registry: self.clone(),
            id,
        })
    }

    /// Aborts every connection whose response has stalled.
    pub fn sweep(&self) {
        let mut inner = self.lock();
        let stalled: Vec<u64> = inner
            .open
            .iter()
            .filter(|(_, fd)| progress(fd.as_fd()).is_ok_and(|p| p.stalled(self.stall)))
            .map(|(id, _)| *id)
            .collect();
        for id in stalled {
            if let Some(fd) = inner.open.remove(&id) {
                abort(fd.as_fd());
                inner.aborted_stalled += 1;
            }
        }
    }

    /// Connections open now.
    pub fn open_now(&self) -> usize {
        self.lock().open.len()
    }

    pub fn aborted(&self) -> Aborted {
        let inner = self.lock();
        Aborted {
            stalled: inner.aborted_stalled,
            at_cap: inner.aborted_at_cap,
        }
    }
}

/// Ends a connection with a reset: the kernel frees what it queued as the
/// last handle closes, and actix sees the socket fail at once, whether it
/// waits to read or to write.
fn abort(socket: BorrowedFd<'_>) {
    // Failing to set either leaves the connection to actix's own timeouts;
    // nothing better can be done with a socket that refuses them.
    let _ = setsockopt(
        &socket,
        sockopt::Linger,
        &libc::linger {
            l_onoff: 1,
            l_linger: 0,
        },
    );
    let _ = shutdown(socket.as_raw_fd(), Shutdown::Both);
}

/// The kernel's view of a TCP connection.
pub fn progress(socket: BorrowedFd<'_>) -> std::io::Result<Progress> {
    // SAFETY: tcp_info is plain integers, for which zero is valid.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is writable for `len` bytes, and the kernel writes
    // at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut unsent: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int to the pointer given.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::TIOCOUTQ, &raw mut unsent) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let quiet_ms = info.tcpi_last_data_sent.min(info.tcpi_last_data_recv);
    Ok(Progress {
        quiet: Duration::from_millis(quiet_ms.into()),
        unsent: unsent.max(0) as u64,
    })
}

#[cfg(test)]
mod tests;
