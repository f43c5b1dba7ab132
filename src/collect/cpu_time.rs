//! The CPU time of this process, as the kernel accounts it, read one way
//! (getrusage, in microseconds; /proc/self/stat counts whole clock ticks):
//! netto's own cost in every snapshot, and what `netto-loadgen` reports of
//! itself for the tests to hold netto's numbers to; and netto's other
//! processes (serve's HTTP server), whose CPU time is netto's cost too.

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

/// netto's processes besides this one (the HTTP server process of `serve`),
/// whose CPU time is netto's cost too; the demo load is not one of them.
#[derive(Debug, Default)]
pub struct OwnProcesses {
    /// pid, and its CPU time when last read (ns).
    others: Vec<(u32, u64)>,
}

impl OwnProcesses {
    pub fn add(&mut self, pid: u32) {
        if !self.others.iter().any(|&(p, _)| p == pid) {
            self.others.push((pid, 0));
        }
    }

    /// CPU time of this process and the others so far, in ns. Another
    /// process is read from the scheduler's run time of each of its
    /// threads (/proc/PID/task/*/schedstat, exact), and keeps what it had
    /// once it, or one of its threads, has gone: the figure never falls.
    pub fn cpu_ns(&mut self) -> u64 {
        let own = u64::try_from(cpu_time().as_nanos()).unwrap_or(u64::MAX);
        for (pid, last) in &mut self.others {
            *last = (*last).max(threads_run_time_ns(*pid));
        }
        own + self.others.iter().map(|&(_, ns)| ns).sum::<u64>()
    }
}

fn threads_run_time_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_adds_its_cpu_time_and_never_takes_it_back() {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 30",
            ])
            .spawn()
            .unwrap();
        let mut own = OwnProcesses::default();
        own.add(child.id());
        own.add(child.id());
        // Wait until the child's loop shows, however busy the host: a
        // reading that does not add the child never gets there.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let (mut alone, mut with_child) = (0, 0);
        while std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            alone = OwnProcesses::default().cpu_ns();
            with_child = own.cpu_ns();
            if with_child > alone + 10_000_000 {
                break;
            }
        }
        assert!(
            with_child > alone + 10_000_000,
            "{with_child} ns with the child, {alone} ns without"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(own.cpu_ns() >= with_child);
    }

    #[test]
    fn own_time_grows_with_work() {
        // Work until the CPU time shows 20 ms of it, however busy the host
        // (other tests' threads share the CPUs): a reading that does not
        // grow never gets there.
        let busy = |t: CpuTimes| t.user + t.system;
        let before = busy(cpu_times().unwrap());
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        let mut grown = Duration::ZERO;
        while grown < Duration::from_millis(20) && spin.elapsed() < Duration::from_secs(20) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            grown = busy(cpu_times().unwrap()).saturating_sub(before);
        }
        assert!(
            grown >= Duration::from_millis(20),
            "{grown:?} in {:?}",
            spin.elapsed()
        );
    }
}
