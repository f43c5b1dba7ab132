//! CPU pinning, so the traffic's kernel work lands on a known CPU.

use std::io;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// Pins the calling thread (not the whole process) to `cpu`. Threads it spawns later
/// inherit the pinning.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    let mut set = CpuSet::new();
    // A fixed-size mask: a CPU beyond it cannot be named.
    set.set(cpu).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "CPU {cpu} is beyond the {} CPUs sched_setaffinity can address",
                CpuSet::count()
            ),
        )
    })?;
    // Pid 0 is the calling thread.
    Ok(sched_setaffinity(Pid::from_raw(0), &set)?)
}
