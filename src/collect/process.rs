//! The CPU time of this process, as the kernel accounts it, read one way
//! (getrusage, in microseconds; /proc/self/stat counts whole clock ticks):
//! netto's own cost in every snapshot, and what `netto-loadgen` reports of
//! itself for the tests to hold netto's numbers to.

use std::io;
use std::time::Duration;

/// User and system CPU time of this whole process so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: Duration,
    pub system: Duration,
}

pub fn cpu_times() -> io::Result<CpuTimes> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the provided buffer, and
    // it is read only when the call succeeded.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        usage.assume_init()
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Ok(CpuTimes {
        user: tv(usage.ru_utime),
        system: tv(usage.ru_stime),
    })
}

/// User + system CPU time so far; zero where it cannot be read.
pub fn cpu_time() -> Duration {
    cpu_times().map_or(Duration::ZERO, |t| t.user + t.system)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_time_grows_with_work() {
        let before = cpu_times().unwrap();
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = cpu_times().unwrap();
        assert!(
            after.user + after.system >= before.user + before.system + Duration::from_millis(20)
        );
    }
}
