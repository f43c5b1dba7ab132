//! The CPU time this process has used, as the kernel accounts it.

use std::fs;
use std::io;

/// User and system time, in nanoseconds. netto's own measurements are checked
/// against these, so they come from the same kernel accounting (/proc) rather than
/// from getrusage's rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user_ns: u64,
    pub system_ns: u64,
}

/// Reads fields 14 (utime) and 15 (stime) of /proc/self/stat.
pub fn process_cpu_times() -> io::Result<CpuTimes> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = u64::try_from(ticks)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| io::Error::other("sysconf(_SC_CLK_TCK) gave no clock tick rate"))?;
    let stat = fs::read_to_string("/proc/self/stat")?;
    parse_stat(&stat, ticks)
        .ok_or_else(|| io::Error::other("/proc/self/stat has no utime/stime fields"))
}

/// The command name (field 2) may contain spaces and parentheses, so fields are
/// counted from the last `)`: field 3 is the first after it.
fn parse_stat(stat: &str, ticks_per_sec: u64) -> Option<CpuTimes> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let to_ns = |t: u64| (u128::from(t) * 1_000_000_000 / u128::from(ticks_per_sec)) as u64;
    Some(CpuTimes {
        user_ns: to_ns(utime),
        system_ns: to_ns(stime),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times_after_a_tricky_command_name() {
        let stat = "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 250 7 0 0 20 0 1 0 5 0 0";
        let times = parse_stat(stat, 100).unwrap();
        assert_eq!(times.user_ns, 2_500_000_000);
        assert_eq!(times.system_ns, 70_000_000);
    }

    #[test]
    fn reads_own_times() {
        assert!(process_cpu_times().is_ok());
    }
}
