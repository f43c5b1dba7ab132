//! perf events: the cpu-clock event of each CPU that the stack sampler
//! runs on, and the probe `check` makes of it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};

use libbpf_rs::{libbpf_sys, Link, ProgramMut};

use super::KernelError;

/// Opens (and closes) a cpu-clock software event on CPU 0.
pub fn try_cpu_clock() -> Result<String, String> {
    open_cpu_clock(0, 1000)
        .map(|_| "software cpu-clock event opens".to_owned())
        .map_err(|e| format!("perf_event_open refused: {e}"))
}

/// A cpu-clock event sampling `frequency` times per second on `cpu`. A fixed
/// period (cpu-clock counts nanoseconds) rather than perf's frequency mode:
/// that one starts with a period of 1 and fires in a burst until it adapts,
/// which overflows a buffer sized for the steady rate.
pub fn open_cpu_clock(cpu: i32, frequency: u64) -> io::Result<OwnedFd> {
    let mut attr = libbpf_sys::perf_event_attr {
        type_: libbpf_sys::PERF_TYPE_SOFTWARE,
        size: u32::try_from(size_of::<libbpf_sys::perf_event_attr>()).expect("small struct"),
        config: u64::from(libbpf_sys::PERF_COUNT_SW_CPU_CLOCK),
        ..Default::default()
    };
    attr.__bindgen_anon_1.sample_period = period_ns(frequency);
    // SAFETY: attr is a valid perf_event_attr; pid -1 with a cpu means
    // "every task on that CPU"; no group fd, no flags.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const libbpf_sys::perf_event_attr,
            -1,
            cpu,
            -1,
            libc::c_ulong::from(libbpf_sys::PERF_FLAG_FD_CLOEXEC),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("fd out of range"))?;
    // SAFETY: the kernel returned a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The cpu-clock period, in nanoseconds, of `frequency` samples a second.
fn period_ns(frequency: u64) -> u64 {
    1_000_000_000 / frequency.max(1)
}

// PERF_EVENT_IOC_PERIOD: a new sample period, read from a u64.
nix::ioctl_write_ptr!(set_sample_period, b'$', 4, u64);

/// A CPU's cpu-clock event with the sampler attached through a link (which
/// owns the event), and a second descriptor of the event to read its count.
/// The count is the clock's nanoseconds, which go on while perf throttles
/// the event: less the CPU's idle time since (`kernel::idle`) and divided
/// by the period, it says how many samples were due while the CPU worked.
pub struct CpuEvent {
    _link: Link,
    counter: OwnedFd,
    last_count: u64,
    due: Due,
}

/// The samples an event was due for while its CPU worked, from its count,
/// the CPU's idle time and the sampler's runs outside the idle loop.
#[derive(Debug, Clone, Copy)]
struct Due {
    period_ns: u64,
    /// Samples due under earlier periods, and the busy clock (count less
    /// idle time) when the period in force began.
    before: f64,
    busy_at_period: u64,
    /// The sampler's runs outside the idle loop on this CPU, and the CPU's
    /// idle time, when the event was attached.
    runs_at_attach: u64,
    idle_at_attach: Option<u64>,
}

impl Due {
    fn new(period_ns: u64, runs: u64, idle_ns: Option<u64>) -> Due {
        Due {
            period_ns,
            before: 0.0,
            busy_at_period: 0,
            runs_at_attach: runs,
            idle_at_attach: idle_ns,
        }
    }

    /// The count less the CPU's idle time since the event was attached
    /// (`idle_ns`: the CPU's idle time now; none known, none left out).
    fn busy(&self, count: u64, idle_ns: Option<u64>) -> u64 {
        let idle = match (idle_ns, self.idle_at_attach) {
            (Some(now), Some(then)) => now.saturating_sub(then),
            _ => 0,
        };
        count.saturating_sub(idle)
    }

    /// Samples due since the event was attached, at the busy clock `busy`.
    fn due(&self, busy: u64) -> f64 {
        self.before + busy.saturating_sub(self.busy_at_period) as f64 / self.period_ns as f64
    }

    /// Samples due that the sampler did not run for, at `count` with
    /// `runs` and `idle_ns` now.
    fn shortfall(&self, count: u64, runs: u64, idle_ns: Option<u64>) -> f64 {
        self.due(self.busy(count, idle_ns)) - runs.saturating_sub(self.runs_at_attach) as f64
    }

    /// A new period from `count` and `idle_ns` on (an unread count: from
    /// where the period in force began).
    fn new_period(&mut self, period_ns: u64, count: Option<u64>, idle_ns: Option<u64>) {
        if let Some(count) = count {
            let busy = self.busy(count, idle_ns);
            self.before = self.due(busy);
            self.busy_at_period = busy;
        }
        self.period_ns = period_ns;
    }
}

impl CpuEvent {
    /// Attaches `program` to a new event on `cpu`, where the sampler had
    /// run `runs` times outside the idle loop and the CPU had been idle
    /// `idle_ns`; `None` if perf does not have the CPU (offline, or still
    /// coming up).
    pub fn attach(
        program: &ProgramMut<'_>,
        cpu: usize,
        frequency_hz: u64,
        runs: u64,
        idle_ns: Option<u64>,
    ) -> Result<Option<CpuEvent>, KernelError> {
        let cpu = i32::try_from(cpu).expect("CPU numbers are small");
        let fd = match open_cpu_clock(cpu, frequency_hz) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(None),
            Err(e) => return Err(KernelError::Perf(e.to_string())),
        };
        let counter = fd
            .try_clone()
            .map_err(|e| KernelError::Perf(e.to_string()))?;
        let link = program
            .attach_perf_event(fd.into_raw_fd())
            .map_err(|source| KernelError::Attach {
                prog: program.name().to_string_lossy().into_owned(),
                source,
            })?;
        Ok(Some(CpuEvent {
            _link: link,
            counter,
            last_count: 0,
            due: Due::new(period_ns(frequency_hz), runs, idle_ns),
        }))
    }

    /// The clock's count, in nanoseconds.
    fn count(&self) -> Option<u64> {
        let mut count = 0u64;
        // SAFETY: reads one u64 (the default read format) into `count`.
        let n = unsafe {
            libc::read(
                self.counter.as_raw_fd(),
                (&raw mut count).cast(),
                size_of::<u64>(),
            )
        };
        (n == size_of::<u64>() as isize).then_some(count)
    }

    /// Samples due on this CPU while it worked that the sampler did not
    /// run for, given its runs there outside the idle loop and the CPU's
    /// idle time now: perf throttled the event, or the kernel skipped the
    /// program while another BPF program ran. Up to a sample or two of it
    /// is the readings' timing and the idle time's ticks, not a loss.
    pub fn shortfall(&self, runs: u64, idle_ns: Option<u64>) -> f64 {
        self.count()
            .map_or(0.0, |count| self.due.shortfall(count, runs, idle_ns))
    }

    /// Samples `frequency_hz` times a second from now on (`idle_ns`: the
    /// CPU's idle time now). The event, its link and the program stay as
    /// they are, so a change of frequency loads nothing and the kernel's
    /// symbols do not change.
    pub fn set_frequency(
        &mut self,
        frequency_hz: u64,
        idle_ns: Option<u64>,
    ) -> Result<(), KernelError> {
        let period = period_ns(frequency_hz);
        let count = self.count();
        // SAFETY: `counter` is a descriptor of this perf event, and the
        // ioctl reads one u64 from `period`, which outlives the call.
        unsafe { set_sample_period(self.counter.as_raw_fd(), &period) }
            .map_err(|e| KernelError::Perf(format!("setting the sample period: {e}")))?;
        self.due.new_period(period, count, idle_ns);
        Ok(())
    }

    /// Whether the event's clock moved since the last look: a live
    /// cpu-clock event counts every nanosecond, idle or not.
    pub fn still_counting(&mut self) -> bool {
        let count = self.count();
        let moved = count.is_some_and(|c| c != self.last_count);
        self.last_count = count.unwrap_or(0);
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn samples_due_in_idle_time_are_not_owed() {
        // Attached after 100 runs with 5 s of idle time; at 99 Hz.
        let due = Due::new(period_ns(99), 100, Some(5_000 * MS));
        // 1 s on the clock, 0.6 s of it idle: 0.4 s of work owes 39.6
        // samples, and 40 runs outside the idle loop ran.
        assert!(due.shortfall(1_000 * MS, 140, Some(5_600 * MS)).abs() < 0.5);
        // 10 of them missing.
        let short = due.shortfall(1_000 * MS, 130, Some(5_600 * MS));
        assert!((short - 9.6).abs() < 0.01, "{short}");
        // Idle time unknown (no /proc/stat): every sample is owed.
        let owed = Due::new(period_ns(99), 100, None).shortfall(1_000 * MS, 140, None);
        assert!((owed - 59.0).abs() < 0.01, "{owed}");
    }

    #[test]
    fn each_period_owes_at_its_own_rate() {
        let mut due = Due::new(period_ns(1000), 0, Some(0));
        // 1 s busy at 1000 Hz, then 1 s busy and 1 s idle at 100 Hz.
        due.new_period(period_ns(100), Some(1_000 * MS), Some(0));
        let short = due.shortfall(3_000 * MS, 0, Some(1_000 * MS));
        assert!((short - 1_100.0).abs() < 0.01, "{short}");
        // An unread count changes the rate only, from where the period
        // in force began: 1 s busy at 10 Hz since.
        due.new_period(period_ns(10), None, Some(1_000 * MS));
        let short = due.shortfall(3_000 * MS, 0, Some(1_000 * MS));
        assert!((short - 1_010.0).abs() < 0.01, "{short}");
    }
}
