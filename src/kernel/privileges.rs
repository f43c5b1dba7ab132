//! Whether this process may load and attach BPF programs. Checked up front
//! so an unprivileged user gets one clear sentence instead of a verifier or
//! libbpf error.

use caps::{CapSet, Capability};

pub const REQUIREMENT: &str =
    "netto needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN) to load its BPF programs";

pub fn sufficient() -> bool {
    // A set that cannot be read holds nothing this process can use.
    let has = |cap| caps::has_cap(None, CapSet::Effective, cap).unwrap_or(false);
    has(Capability::CAP_SYS_ADMIN) || (has(Capability::CAP_BPF) && has(Capability::CAP_PERFMON))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer matches the kernel's own account of this process.
    #[test]
    fn agrees_with_proc_status() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let effective = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .map(|hex| u64::from_str_radix(hex.trim(), 16).unwrap())
            .unwrap();
        let has = |cap: Capability| effective & cap.bitmask() != 0;
        assert_eq!(
            sufficient(),
            has(Capability::CAP_SYS_ADMIN)
                || (has(Capability::CAP_BPF) && has(Capability::CAP_PERFMON))
        );
    }
}
