//! CPU pinning, so the traffic's kernel work lands on a known CPU.

use std::io;
use std::mem;

/// Pins the calling thread (not the whole process) to `cpu`. Threads it spawns later
/// inherit the pinning.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    let limit = libc::CPU_SETSIZE as usize;
    if cpu >= limit {
        // CPU_SET indexes a fixed-size mask and would panic beyond it.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond the {limit} CPUs sched_setaffinity can address"),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit mask; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `cpu` was checked to be inside the mask.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid mask of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
