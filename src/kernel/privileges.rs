//! Whether this process may load and attach BPF programs. Checked up front
//! so an unprivileged user gets one clear sentence instead of a verifier or
//! libbpf error.

use std::fs;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

pub const REQUIREMENT: &str =
    "netto needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN) to load its BPF programs";

/// Effective capability set of this process, from /proc/self/status.
fn effective_caps() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .unwrap_or(0)
}

pub fn sufficient() -> bool {
    let caps = effective_caps();
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}
