//! BPF run-time statistics: how often each of netto's programs ran and for
//! how long. Enabled through the fd-held `BPF_ENABLE_STATS`, which lasts
//! exactly as long as netto holds the fd (unlike the global sysctl, which
//! outlives a killed process). While on, every BPF program on the host pays
//! two clock reads per run, which is why netto holds them only for a slice
//! of each interval (`source::duty`), and not at all with `--no-bpf-stats`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys;

/// Holding this keeps run-time statistics on; dropping it turns them off
/// (unless something else on the host holds them on too).
pub struct StatsGuard {
    _fd: OwnedFd,
}

impl StatsGuard {
    pub fn enable() -> io::Result<Self> {
        // SAFETY: plain syscall wrapper; it returns a new fd or a negative errno.
        let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
        if fd < 0 {
            return Err(io::Error::from_raw_os_error(-fd));
        }
        Ok(StatsGuard {
            // SAFETY: the kernel just handed us this fd and nothing else owns it.
            _fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }
}

/// BPF run-time statistics for one run, as the user asked.
pub enum Statistics {
    /// Not asked for (`--no-bpf-stats`).
    Off,
    On(StatsGuard),
    /// Asked for, and the kernel refused.
    Refused(io::Error),
}

impl Statistics {
    /// Turns statistics on if `wanted`; a refusal is not an error, since
    /// everything but the program costs still works.
    pub fn turn_on(wanted: bool) -> Statistics {
        if !wanted {
            return Statistics::Off;
        }
        match StatsGuard::enable() {
            Ok(guard) => Statistics::On(guard),
            Err(e) => Statistics::Refused(e),
        }
    }

    pub fn is_on(&self) -> bool {
        matches!(self, Statistics::On(_))
    }

    /// What the user should know: why program costs are missing when they
    /// were asked for.
    pub fn note(&self) -> Option<String> {
        match self {
            Statistics::Refused(e) => Some(format!(
                "note: BPF run-time statistics unavailable ({e}); program costs not reported"
            )),
            Statistics::Off | Statistics::On(_) => None,
        }
    }
}

/// Cumulative run count and run time of one program (zero while run-time
/// statistics are off), and the runs the kernel skipped because the
/// program was already running on that CPU (counted always).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    pub run_count: u64,
    pub run_time_ns: u64,
    pub recursion_misses: u64,
}

/// One of netto's programs: the hook whose counter counts its runs
/// ([`super::hooks`]) and its cumulative statistics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramRun {
    pub name: String,
    pub hook: &'static str,
    pub stats: RunStats,
}

pub fn run_stats(prog: BorrowedFd<'_>) -> io::Result<RunStats> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = u32::try_from(std::mem::size_of_val(&info)).expect("small struct");
    // SAFETY: info and len describe a valid, writable bpf_prog_info.
    let ret = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(RunStats {
        run_count: info.run_cnt,
        run_time_ns: info.run_time_ns,
        recursion_misses: info.recursion_misses,
    })
}
