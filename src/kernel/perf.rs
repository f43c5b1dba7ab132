//! perf events. For now only the probe `check` needs: whether a software
//! cpu-clock event can be opened (stack sampling builds on it).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys;

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
    attr.__bindgen_anon_1.sample_period = 1_000_000_000 / frequency.max(1);
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
