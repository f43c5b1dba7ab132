//! Where this host mounts the cgroup v2 hierarchy: a fact about the running
//! system that `check` reports and attribution names cgroups under. Hosts
//! differ (`/sys/fs/cgroup` on unified hosts, `/sys/fs/cgroup/unified` on
//! hybrid ones, anywhere an administrator chose), so it is read from the
//! mount table rather than assumed.

use std::fs;
use std::path::PathBuf;

/// The deepest a walk of the hierarchy goes below the root, and the
/// longest path it follows (PATH_MAX): a delegated subtree is anyone's to
/// nest, and walks run on the measuring thread.
pub const MAX_DEPTH: usize = 32;
pub const MAX_PATH: usize = 4096;

/// Directories one walk step (one interval) may read: a walk of a bigger
/// tree goes on where it stopped in the next interval. A user who makes a
/// new group every interval costs at most this much.
pub const WALK_BUDGET: usize = 1024;

/// Where this host mounts the cgroup v2 hierarchy, if it does.
pub fn v2_hierarchy() -> Option<PathBuf> {
    fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|text| v2_mount(&text))
}

/// The mount point of the cgroup v2 hierarchy in a mountinfo table.
fn v2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        let fs_type = fs.split_whitespace().next()?;
        let point = mount.split_whitespace().nth(4)?;
        (fs_type == "cgroup2").then(|| PathBuf::from(unescape(point)))
    })
}

/// mountinfo escapes spaces, tabs, newlines and backslashes as octal.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(digits) => {
                out.push(
                    digits
                        .iter()
                        .fold(0u8, |v, d| v.wrapping_mul(8) + (d - b'0')),
                );
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_v2_hierarchy_wherever_it_is_mounted() {
        let hybrid = "\
25 30 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
33 31 0:28 / /sys/fs/cgroup/cpu rw shared:11 - cgroup cgroup rw,cpu";
        assert_eq!(
            v2_mount(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw";
        assert_eq!(v2_mount(unified), Some(PathBuf::from("/sys/fs/cgroup")));
        let spaced = r"29 23 0:26 / /mnt/my\040cgroups rw - cgroup2 none rw";
        assert_eq!(v2_mount(spaced), Some(PathBuf::from("/mnt/my cgroups")));
        assert_eq!(
            v2_mount("33 31 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw"),
            None
        );
    }
}
