//! netto's own CPU time, for the overhead it reports about itself.

use std::time::Duration;

/// User + system CPU time of this whole process so far.
pub fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the provided buffer.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return Duration::ZERO;
        }
        usage.assume_init()
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
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
        std::thread::sleep(Duration::from_millis(300));
        let alone = OwnProcesses::default().cpu_ns();
        own.add(child.id());
        own.add(child.id());
        let with_child = own.cpu_ns();
        assert!(
            with_child > alone + 10_000_000,
            "{with_child} ns with the child, {alone} ns without"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(own.cpu_ns() >= with_child);
    }
}
