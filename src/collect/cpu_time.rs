//! The CPU time of this process, as the kernel accounts it, read one way
//! (getrusage, in microseconds; /proc/self/stat counts whole clock ticks):
//! netto's own cost in every snapshot, and what `netto-loadgen` reports of
//! itself for the tests to hold netto's numbers to; and netto's other
//! processes (serve's HTTP server), whose CPU time is netto's cost too,
//! their OTLP exporter's thread told apart by its name.

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

/// The name of the serving process's OTLP exporter thread, whose CPU time
/// is exporting's rather than serving's.
pub const EXPORTER_THREAD: &str = "netto-otlp";

/// netto's processes besides this one (the HTTP server process of `serve`),
/// whose CPU time is netto's cost too, but serving's rather than
/// measuring's; the demo load is not one of them.
#[derive(Debug, Default)]
pub struct OwnProcesses {
    others: Vec<Other>,
}

/// Another process of netto's, and what was read of it so far.
#[derive(Debug)]
struct Other {
    pid: u32,
    /// Each live thread's run time when last read (ns).
    threads: Vec<(u32, u64)>,
    /// The run time of its exporter threads, never falling (ns).
    export_ns: u64,
    /// The run time of its threads that have exited since it was added.
    gone_ns: u64,
    /// The whole process's CPU time when last read, never falling (ns).
    total_ns: u64,
}

/// The CPU time so far of netto's processes, split by what they do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnCpu {
    /// This process: measuring.
    pub measuring_ns: u64,
    /// The others: serving, and their exporter threads: exporting.
    pub serving_ns: u64,
    pub export_ns: u64,
}

impl OwnCpu {
    pub fn total_ns(self) -> u64 {
        self.measuring_ns + self.serving_ns + self.export_ns
    }
}

impl OwnProcesses {
    pub fn add(&mut self, pid: u32) {
        if !self.others.iter().any(|o| o.pid == pid) {
            self.others.push(Other {
                pid,
                threads: Vec::new(),
                export_ns: 0,
                gone_ns: 0,
                total_ns: 0,
            });
        }
    }

    /// CPU time of this process and of the others so far, in ns; the
    /// figures never fall.
    pub fn cpu_ns(&mut self) -> OwnCpu {
        let measuring_ns = u64::try_from(cpu_time().as_nanos()).unwrap_or(u64::MAX);
        let (mut serving_ns, mut export_ns) = (0, 0);
        for other in &mut self.others {
            let total = other.read();
            serving_ns += total.saturating_sub(other.export_ns);
            export_ns += other.export_ns.min(total);
        }
        OwnCpu {
            measuring_ns,
            serving_ns,
            export_ns,
        }
    }
}

impl Other {
    /// The process's CPU time so far, exited threads included. Two
    /// readings, and the larger counts: each thread's scheduler run time
    /// (/proc/PID/task/*/schedstat, in ns), a thread that exited keeping
    /// what it had when last read; and the process's own user + system
    /// time (/proc/PID/stat), which covers all of its exited threads'
    /// time but only in clock ticks.
    fn read(&mut self) -> u64 {
        let live = threads_run_time_ns(self.pid);
        let exporting: u64 = live
            .iter()
            .filter(|&&(tid, _)| thread_name(self.pid, tid).as_deref() == Some(EXPORTER_THREAD))
            .map(|&(_, ns)| ns)
            .sum();
        self.export_ns = self.export_ns.max(exporting);
        if !live.is_empty() {
            for (tid, ns) in &self.threads {
                if !live.iter().any(|(t, _)| t == tid) {
                    self.gone_ns += ns;
                }
            }
            self.threads = live;
        }
        let by_thread = self.gone_ns + self.threads.iter().map(|&(_, ns)| ns).sum::<u64>();
        let by_process = process_stat_ns(self.pid).unwrap_or(0);
        self.total_ns = self.total_ns.max(by_thread).max(by_process);
        self.total_ns
    }
}

/// Each live thread of `pid` and its run time so far (ns).
fn threads_run_time_ns(pid: u32) -> Vec<(u32, u64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| {
            let tid = task.file_name().to_str()?.parse().ok()?;
            let line = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            Some((tid, line.split_whitespace().next()?.parse().ok()?))
        })
        .collect()
}

/// The name (`comm`) of thread `tid` of `pid`.
fn thread_name(pid: u32, tid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
    Some(comm.trim_end().to_owned())
}

/// utime + stime of the whole process `pid` (exited threads included), in
/// ns at the precision of a clock tick.
fn process_stat_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces: fields count from
    // after its closing one. utime and stime are fields 14 and 15.
    let mut fields = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    let ticks = u64::try_from(ticks).ok().filter(|&t| t > 0)?;
    Some((utime + stime) * (1_000_000_000 / ticks))
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
            alone = OwnProcesses::default().cpu_ns().total_ns();
            with_child = own.cpu_ns().total_ns();
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
        assert!(own.cpu_ns().total_ns() >= with_child);
    }

    #[test]
    fn a_process_keeps_the_time_of_its_exited_threads() {
        let mut us = Other {
            pid: std::process::id(),
            threads: Vec::new(),
            export_ns: 0,
            gone_ns: 0,
            total_ns: 0,
        };
        let before = us.read();
        // A thread that runs for 60 ms of CPU, then exits before the next
        // reading: a sum over the live threads alone loses it.
        std::thread::spawn(|| {
            let start = thread_cpu();
            let mut x = 0u64;
            while thread_cpu() - start < Duration::from_millis(60) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
        })
        .join()
        .unwrap();
        let after = us.read();
        assert!(
            after >= before + 50_000_000,
            "{} ms counted of a thread's 60",
            (after - before) / 1_000_000
        );
    }

    #[test]
    fn the_exporter_threads_time_is_exporting_not_serving() {
        let mut own = OwnProcesses::default();
        own.add(std::process::id());
        let before = own.cpu_ns();
        std::thread::Builder::new()
            .name(EXPORTER_THREAD.into())
            .spawn(|| {
                let start = thread_cpu();
                let mut x = 0u64;
                while thread_cpu() - start < Duration::from_millis(60) {
                    for _ in 0..10_000 {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                }
                // Read while this thread still lives: an exporter does not
                // exit while it is measured.
                std::thread::sleep(Duration::from_millis(300));
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut after = own.cpu_ns();
        while after.export_ns < before.export_ns + 50_000_000
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
            after = own.cpu_ns();
        }
        assert!(
            after.export_ns >= before.export_ns + 50_000_000,
            "{} ms of the exporter's 60",
            (after.export_ns - before.export_ns) / 1_000_000
        );
        assert!(after.total_ns() >= after.export_ns + after.serving_ns);
    }

    fn thread_cpu() -> Duration {
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
        Duration::from(t)
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
