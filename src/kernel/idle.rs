//! Each CPU's idle time as the kernel counts it, for the sampler's count
//! of samples due (`kernel::perf`). Some hypervisors hold an idle virtual
//! CPU's timer back, so no sample is taken there while its cpu-clock
//! counts on; samples due in idle time are not samples the sampler owes.
//! The kernel's idle time (`/proc/stat`'s idle and iowait) is the idle
//! task's time outside interrupts, which is what the sampler program
//! counts as its runs in the idle loop (`sample_idle_runs`, bpf/netto.h).

use std::io;

use nix::unistd::{sysconf, SysconfVar};

const PROC_STAT: &str = "/proc/stat";

/// Each CPU's idle time so far, in nanoseconds, index = CPU; `None` for a
/// CPU /proc/stat does not list (offline).
pub fn idle_ns() -> io::Result<Vec<Option<u64>>> {
    Ok(parse(&std::fs::read_to_string(PROC_STAT)?, tick_ns()))
}

/// How coarse those times are: /proc/stat counts in clock ticks.
pub fn tick_ns() -> u64 {
    sysconf(SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|hz| u64::try_from(hz).ok())
        .filter(|&hz| hz > 0)
        .map_or(10_000_000, |hz| 1_000_000_000 / hz)
}

/// The `cpuN` lines of /proc/stat: the fourth and fifth numbers (idle,
/// iowait) in ticks of `tick_ns`.
fn parse(stat: &str, tick_ns: u64) -> Vec<Option<u64>> {
    let mut idle = Vec::new();
    for line in stat.lines() {
        let mut words = line.split_ascii_whitespace();
        let Some(cpu) = words
            .next()
            .and_then(|w| w.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let ticks: Option<u64> = words.skip(3).take(2).map(|w| w.parse::<u64>().ok()).sum();
        if idle.len() <= cpu {
            idle.resize(cpu + 1, None);
        }
        idle[cpu] = ticks.map(|t| t * tick_ns);
    }
    idle
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_and_iowait_of_each_listed_cpu() {
        let stat = "cpu  10 0 20 300 4 0 0 0 0 0\n\
                    cpu0 5 0 10 100 1 0 0 0 0 0\n\
                    cpu2 5 0 10 200 3 0 0 0 0 0\n\
                    intr 12345\nctxt 99\n";
        assert_eq!(
            parse(stat, 10_000_000),
            [Some(1_010_000_000), None, Some(2_030_000_000)]
        );
        assert_eq!(parse("cpu0 1 2 3 x 5\n", 1), [None]);
    }

    #[test]
    fn this_hosts_cpus_are_listed_and_idle_time_only_grows() {
        let before = idle_ns().unwrap();
        let after = idle_ns().unwrap();
        assert!(before.iter().flatten().count() >= 1);
        for (b, a) in before.iter().zip(&after) {
            if let (Some(b), Some(a)) = (b, a) {
                assert!(a >= b);
            }
        }
    }
}
