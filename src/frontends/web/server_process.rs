//! The serving process: `netto serve` binds the listener, then starts
//! `netto serve-http` (this same binary) with only that socket (as fd 3)
//! and the read end of the feed pipe (as stdin). The child confines itself
//! before it reads a byte (see [`super::sandbox`]), says it is ready on
//! stdout, serves until the pipe closes, and exits.

use std::io::{self, BufRead, BufReader, BufWriter};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use thiserror::Error;

use super::feed::{self, Feed, FeedError};
use super::otlp::ExportSettings;
use super::sandbox::Identity;

/// The hidden subcommand the serving process runs.
pub const SERVE_HTTP_COMMAND: &str = "serve-http";

/// The serving process's name in `ps`, `ss -p` and `--by process`:
/// started from /proc/self/exe, it would be called `exe`.
pub const HTTP_PROCESS_NAME: &std::ffi::CStr = c"netto-http";

/// Where the serving process finds the listening socket.
pub const LISTENER_FD: RawFd = 3;

/// What the serving process prints once it accepts connections.
const READY: &str = "ready";

#[derive(Debug, Error)]
pub enum ProcessError {
    #[error("cannot start the HTTP server process: {0}")]
    Spawn(io::Error),
    #[error("the HTTP server process did not start (it said why above)")]
    NotReady,
    #[error(transparent)]
    Feed(#[from] FeedError),
    #[error("fd {LISTENER_FD} is not a listening TCP socket: {0}")]
    NoListener(io::Error),
    #[error("closing inherited files: {0}")]
    Close(io::Error),
}

/// A started serving process and the pipe that feeds it.
pub struct ServerProcess {
    pub child: Child,
    pub feed: BufWriter<ChildStdin>,
    /// Opened before anything could reap the child: the way to kill it
    /// while another thread waits for it.
    pub pidfd: PidFd,
}

/// A process's pidfd (pidfd_open(2)). A signal sent through it reaches
/// that process or none, never one that was given its pid after it was
/// reaped, as a signal sent by pid can. The standard library's own is not
/// stable yet and nix has none: two system calls, wrapped here.
#[derive(Debug)]
pub struct PidFd(OwnedFd);

impl PidFd {
    /// The pidfd of `pid`, which must be a child of this process not yet
    /// reaped for the pidfd to be sure to be that child's.
    pub fn open(pid: u32) -> io::Result<PidFd> {
        let pid =
            libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: pidfd_open takes a pid and flags, and returns a new
        // descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = RawFd::try_from(fd).map_err(io::Error::other)?;
        // SAFETY: `fd` was just opened by this call and nothing else owns it.
        Ok(PidFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// SIGKILL to the process; false if it had already been reaped, when
    /// nothing is sent.
    pub fn kill(&self) -> io::Result<bool> {
        // SAFETY: a descriptor this value owns, a signal number, no
        // siginfo (which the call allows) and no flags.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
            e => Err(e),
        }
    }
}

/// Starts the serving process on `listener`, as `identity` if given, and
/// sends it `start`; returns once it serves, and pushes profiles to the
/// OTLP receiver of `otlp` if given. The listener is this
/// process's no more.
pub fn spawn(
    listener: TcpListener,
    identity: Option<Identity>,
    otlp: Option<&ExportSettings>,
    start: &Feed,
) -> Result<ServerProcess, ProcessError> {
    let mut command = Command::new("/proc/self/exe");
    command
        .arg0("netto")
        .arg(SERVE_HTTP_COMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(id) = identity {
        command.args(["--uid", &id.uid.to_string(), "--gid", &id.gid.to_string()]);
    }
    if let Some(otlp) = otlp {
        let settings = serde_json::to_string(otlp).expect("export settings serialize");
        command.args(["--otlp", &settings]);
    }
    // Above the standard descriptors and fd 3, so that neither the stdio
    // set-up nor the move to fd 3 overwrites it in the child.
    // SAFETY: fcntl on a descriptor this process owns.
    let high = unsafe { libc::fcntl(listener.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    if high < 0 {
        return Err(ProcessError::Spawn(io::Error::last_os_error()));
    }
    // SAFETY: `high` is a new descriptor owned by nothing else.
    let high = unsafe { OwnedFd::from_raw_fd(high) };
    drop(listener);
    let fd = high.as_raw_fd();
    // SAFETY: between fork and exec the closure only calls dup2 and
    // sigaction, both async-signal-safe, on a descriptor this process owns
    // and with no handler of its own; the copy at fd 3 has no close-on-exec
    // flag, and an ignored signal stays ignored across exec.
    unsafe {
        command.pre_exec(move || {
            if libc::dup2(fd, LISTENER_FD) < 0 {
                return Err(io::Error::last_os_error());
            }
            ignore_stop_signals()
        });
    }
    let mut child = command.spawn().map_err(ProcessError::Spawn)?;
    drop(high);
    let pidfd = match PidFd::open(child.id()) {
        Ok(pidfd) => pidfd,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ProcessError::Spawn(e));
        }
    };
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut process = ServerProcess {
        child,
        feed: BufWriter::new(stdin),
        pidfd,
    };
    let ready = feed::send(&mut process.feed, start)
        .map_err(ProcessError::from)
        .and_then(|()| {
            let mut line = String::new();
            match BufReader::new(stdout).read_line(&mut line) {
                Ok(_) if line.trim_end() == READY => Ok(()),
                _ => Err(ProcessError::NotReady),
            }
        });
    if let Err(e) = ready {
        let _ = process.child.kill();
        let _ = process.child.wait();
        return Err(e);
    }
    Ok(process)
}

/// The signals that stop netto, which the serving process ignores from
/// before it runs: a terminal's Ctrl-C reaches the whole foreground group,
/// and `systemctl stop` sends SIGTERM to every process of the unit, both
/// at once. The serving process stops when netto, stopping, closes its
/// pipe; were it to die of the signal instead, netto could not tell that
/// from a crash.
pub const STOP_SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

fn ignore_stop_signals() -> io::Result<()> {
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    for signal in STOP_SIGNALS {
        // SAFETY: installs no handler, only the ignored disposition.
        unsafe { sigaction(signal, &ignore) }.map_err(io::Error::from)?;
    }
    Ok(())
}

/// In the serving process, first thing: closes every inherited file but
/// stdin, stdout, stderr and the listener.
pub fn close_inherited() -> Result<(), ProcessError> {
    // SAFETY: closes descriptors nothing in this fresh process uses.
    let rc = unsafe { libc::close_range(LISTENER_FD as libc::c_uint + 1, libc::c_uint::MAX, 0) };
    if rc < 0 {
        return Err(ProcessError::Close(io::Error::last_os_error()));
    }
    Ok(())
}

/// In the serving process: the inherited listening socket.
pub fn listener() -> Result<TcpListener, ProcessError> {
    // SAFETY: fcntl on any number is sound; it fails when nothing is open.
    if unsafe { libc::fcntl(LISTENER_FD, libc::F_GETFD) } < 0 {
        return Err(ProcessError::NoListener(io::Error::last_os_error()));
    }
    // SAFETY: fd 3 is open, was set up by `spawn` for this process alone,
    // and is taken once.
    let listener = TcpListener::from(unsafe { OwnedFd::from_raw_fd(LISTENER_FD) });
    listener.local_addr().map_err(ProcessError::NoListener)?;
    Ok(listener)
}

/// In the serving process: tells netto it serves.
pub fn ready() -> io::Result<()> {
    use std::io::Write;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{READY}")?;
    stdout.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pidfd_kills_its_process_and_no_other() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pidfd = PidFd::open(child.id()).unwrap();
        assert!(pidfd.kill().unwrap());
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        // Reaped: its pid is free for any new process, which a kill by pid
        // would hit. Through the pidfd nothing is sent.
        assert!(!pidfd.kill().unwrap());
    }

    #[test]
    fn a_pid_without_a_process_has_no_pidfd() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        // The pid could be taken again meanwhile, but hardly so soon.
        let err = PidFd::open(pid).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ESRCH));
    }
}
