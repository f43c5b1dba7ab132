//! A throwaway network namespace joined to the host by a veth pair.
//!
//! The demo and the tests need traffic that crosses a real network device and the
//! full IP stack on both ends, yet never leaves the machine. A veth pair into a
//! private namespace gives exactly that, and deleting the namespace takes the whole
//! topology away again.
//!
//! Setup is done with the `ip` command (iproute2) rather than netlink by hand: it is
//! present on every machine that can run netto, and its failures come with readable
//! messages.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::sched::{setns, CloneFlags};
use nix::sys::signal::kill;
use nix::unistd::{sysconf, Pid, SysconfVar};

use super::undo::{self, Registered};

/// First address of 198.18.0.0/15, the RFC 2544 benchmarking range: it is never routed
/// on the internet, so even a misrouted packet from a test cannot reach a real host.
const BENCH_BASE: u32 = u32::from_be_bytes([198, 18, 0, 0]);

/// How many /30 subnets fit in 198.18.0.0/15.
const BENCH_SUBNETS: u32 = 1 << 15;

/// Spreads the pairs of different processes apart in the range, so concurrent runs
/// rarely probe the same subnets.
const SUBNETS_PER_PID: u32 = 64;

/// Names are `netto-{tag}-{pid}-{n}` so that [`sweep_stale`] can tell, from the name
/// alone, which process owned a namespace.
const NS_PREFIX: &str = "netto-";

/// Longest tag accepted, keeping namespace names short enough to read in `ip netns list`.
const MAX_TAG_LEN: usize = 16;

/// Linux's `PID_MAX_LIMIT` is 2^22, below 36^5, so five base-36 digits always hold a pid.
const PID_DIGITS: usize = 5;

static NEXT_PAIR: AtomicU32 = AtomicU32::new(0);

/// Why a namespace could not be set up or entered.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error(
        "the `ip` command (iproute2) is not installed: install it, e.g. `apt-get install iproute2`"
    )]
    IpMissing,
    #[error("cannot run `ip {args}`: {cause}")]
    Spawn { args: String, cause: io::Error },
    #[error("`ip {args}` failed: {detail}")]
    Ip { args: String, detail: String },
    #[error("invalid namespace tag {0:?}: use 1 to 16 ASCII letters, digits or underscores")]
    InvalidTag(String),
    #[error("every /30 in 198.18.0.0/15 is already in use on this host: delete leftover interfaces (`ip -4 addr`) or namespaces (`ip netns list`)")]
    NoFreeSubnet,
    #[error(
        "cannot enter network namespace {ns}: {cause}; entering one needs root (CAP_SYS_ADMIN)"
    )]
    Enter { ns: String, cause: io::Error },
}

/// A network namespace with one end of a veth pair inside it and the other end in the
/// namespace of the thread that created it. Dropping it removes both.
#[derive(Debug)]
pub struct VethPair {
    ns: String,
    host_if: String,
    peer_if: String,
    host_addr: Ipv4Addr,
    peer_addr: Ipv4Addr,
    /// Whether this pair made `host_if`: a failed setup must not delete an interface
    /// of that name that was already there.
    owns_link: bool,
    /// The removals of the namespace and of the host end, registered in that
    /// order and so undone host end first (newest first), for an exit that
    /// skips `drop` ([`undo`]); forgotten after `drop` has removed them.
    undos: Vec<Registered>,
}

impl VethPair {
    /// Creates namespace `netto-{tag}-{pid}-{n}` and a veth pair addressed from a free
    /// /30 of 198.18.0.0/15. Must be called from a thread in the host namespace, since
    /// the `ip` child processes inherit the calling thread's namespace.
    /// Leftovers of dead processes with the same tag are swept first
    /// ([`sweep_stale`]).
    pub fn create(tag: &str) -> Result<VethPair, NetnsError> {
        sweep_stale(tag);
        let n = NEXT_PAIR.fetch_add(1, Ordering::Relaxed);
        VethPair::create_numbered(tag, std::process::id(), n)
    }

    /// `create` with the name's pid and counter given, so tests can predict the names.
    fn create_numbered(tag: &str, pid: u32, n: u32) -> Result<VethPair, NetnsError> {
        check_tag(tag)?;
        let (host_addr, peer_addr) = free_subnet(pid, n)?;
        let (host_if, peer_if) = interface_names(pid, n);
        let ns = format!("{NS_PREFIX}{tag}-{pid}-{n}");
        ip(&["netns", "add", &ns])?;
        let undo = {
            let ns = ns.clone();
            undo::register(move || {
                let _ = ip(&["netns", "del", &ns]);
            })
        };
        // From here on, dropping `pair` undoes whatever part of the setup succeeded.
        let mut pair = VethPair {
            ns,
            host_if,
            peer_if,
            host_addr,
            peer_addr,
            owns_link: false,
            undos: vec![undo],
        };
        pair.configure()?;
        Ok(pair)
    }

    fn configure(&mut self) -> Result<(), NetnsError> {
        let ns = self.ns.as_str();
        let host_cidr = format!("{}/30", self.host_addr);
        let peer_cidr = format!("{}/30", self.peer_addr);
        ip(&[
            "link",
            "add",
            &self.host_if,
            "type",
            "veth",
            "peer",
            "name",
            &self.peer_if,
            "netns",
            ns,
        ])?;
        self.owns_link = true;
        // Before the namespace: deleting it alone frees the pair later, from a
        // work queue.
        let host_if = self.host_if.clone();
        self.undos.push(undo::register(move || {
            let _ = ip(&["link", "del", &host_if]);
        }));
        ip(&["addr", "add", &host_cidr, "dev", &self.host_if])?;
        ip(&["link", "set", &self.host_if, "up"])?;
        ip(&["-n", ns, "addr", "add", &peer_cidr, "dev", &self.peer_if])?;
        ip(&["-n", ns, "link", "set", &self.peer_if, "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        Ok(())
    }

    pub fn ns_name(&self) -> &str {
        &self.ns
    }

    pub fn host_addr(&self) -> Ipv4Addr {
        self.host_addr
    }

    pub fn peer_addr(&self) -> Ipv4Addr {
        self.peer_addr
    }

    pub fn host_ifname(&self) -> &str {
        &self.host_if
    }

    pub fn peer_ifname(&self) -> &str {
        &self.peer_if
    }

    /// Sets the MTU of both ends: jumbo frames let a test send large
    /// datagrams without IP fragmentation.
    pub fn set_mtu(&self, mtu: u32) -> Result<(), NetnsError> {
        let mtu = mtu.to_string();
        ip(&["link", "set", "dev", &self.host_if, "mtu", &mtu])?;
        ip(&[
            "-n",
            &self.ns,
            "link",
            "set",
            "dev",
            &self.peer_if,
            "mtu",
            &mtu,
        ])?;
        Ok(())
    }

    /// `ip netns exec NS program`, so a child process runs wholly inside the namespace
    /// without this process having to fork and setns itself.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec"]).arg(&self.ns).arg(program);
        cmd
    }

    /// Moves only the calling thread into the namespace (network namespaces are per
    /// thread), so one process can serve inside the namespace and send from the host.
    pub fn enter_current_thread(&self) -> Result<(), NetnsError> {
        let enter_error = |cause| NetnsError::Enter {
            ns: self.ns.clone(),
            cause,
        };
        let handle = File::open(format!("/run/netns/{}", self.ns)).map_err(enter_error)?;
        setns(handle, CloneFlags::CLONE_NEWNET).map_err(|e| enter_error(e.into()))
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        // Deleting the host end first removes both ends at once; deleting only the
        // namespace would leave the kernel to free them later from a work queue, and a
        // caller looking right after the drop could still see the interface.
        if self.owns_link {
            let _ = ip(&["link", "del", &self.host_if]);
        }
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

/// Deletes namespaces `netto-{tag}-{pid}-*` whose process is gone, so leftovers of a
/// process that was killed (SIGKILL, a terminal's Ctrl-C on a test run, a machine
/// restart: no destructor ran) are reaped by the next one that makes a pair of that
/// tag. A live pid that started after the namespace was made is not its owner but a
/// reuse of the number (after a restart, pids start over). Best effort: anything it
/// cannot inspect or delete is left alone.
pub fn sweep_stale(tag: &str) {
    if check_tag(tag).is_err() {
        return;
    }
    let Ok(listing) = ip(&["netns", "list"]) else {
        return;
    };
    let prefix = format!("{NS_PREFIX}{tag}-");
    for name in listing.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name.strip_prefix(&prefix).and_then(owner_pid) else {
            continue;
        };
        let made = std::fs::metadata(format!("/run/netns/{name}")).and_then(|m| m.modified());
        if !owner_alive(process_alive(pid), process_started(pid), made.ok()) {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// How far a process's start time, as read here, may be off its real one: `btime` is
/// in whole seconds, and it is the wall clock less the uptime, so it moves when the
/// clock is set. An owner whose start seems a little after its namespace stays one.
const START_SLACK: Duration = Duration::from_secs(2);

/// Whether a namespace's owner may still run: its pid is alive and did not start after
/// the namespace was made. Unknown times count as alive.
fn owner_alive(alive: bool, started: Option<SystemTime>, made: Option<SystemTime>) -> bool {
    match (started, made) {
        (Some(started), Some(made)) => alive && started <= made + START_SLACK,
        _ => alive,
    }
}

/// The pid in a `{pid}-{n}` name suffix; `None` for names netto did not make.
fn owner_pid(suffix: &str) -> Option<libc::pid_t> {
    let (pid, n) = suffix.split_once('-')?;
    n.parse::<u32>().ok()?;
    pid.parse::<libc::pid_t>().ok().filter(|&pid| pid > 0)
}

fn process_alive(pid: libc::pid_t) -> bool {
    // No signal: only whether the process exists (EPERM: it does, as another user).
    matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// When a process started: the boot time (`btime` of /proc/stat) plus its start in
/// clock ticks after boot (field 22 of /proc/PID/stat).
fn process_started(pid: libc::pid_t) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hz = u64::try_from(sysconf(SysconfVar::CLK_TCK).ok()??).ok()?;
    let ticks = start_ticks(&stat)?;
    Some(
        SystemTime::UNIX_EPOCH
            + Duration::from_secs(btime)
            + Duration::from_millis(ticks * 1000 / hz.max(1)),
    )
}

/// Field 22 (starttime) of a /proc/PID/stat line. The command name (field 2) is in
/// parentheses and may hold spaces and parentheses itself, so fields are counted
/// from after its last `)`, where field 3 begins.
fn start_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

fn check_tag(tag: &str) -> Result<(), NetnsError> {
    let valid = !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(NetnsError::InvalidTag(tag.to_owned()))
    }
}

/// Host and peer address of the first /30 at or after a pid- and counter-derived
/// index that has no address on the host yet.
fn free_subnet(pid: u32, n: u32) -> Result<(Ipv4Addr, Ipv4Addr), NetnsError> {
    let taken = host_ipv4_addrs()?;
    let start = pid.wrapping_mul(SUBNETS_PER_PID).wrapping_add(n) % BENCH_SUBNETS;
    (0..BENCH_SUBNETS)
        .map(|k| BENCH_BASE + (start + k) % BENCH_SUBNETS * 4)
        .find(|&base| (base..base + 4).all(|a| !taken.contains(&Ipv4Addr::from(a))))
        .map(|base| (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2)))
        .ok_or(NetnsError::NoFreeSubnet)
}

fn host_ipv4_addrs() -> Result<HashSet<Ipv4Addr>, NetnsError> {
    Ok(parse_ipv4_addrs(&ip(&["-o", "-4", "addr"])?))
}

/// Reads the `inet A.B.C.D/LEN` fields of `ip -o -4 addr` output.
fn parse_ipv4_addrs(listing: &str) -> HashSet<Ipv4Addr> {
    listing
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|&w| w == "inet")?;
            let cidr = words.next()?;
            cidr.split('/').next()?.parse().ok()
        })
        .collect()
}

/// Interface names must fit IFNAMSIZ (15 characters): "nt", the pid in five base-36
/// digits, the counter in base 36 (at most seven digits) and a side letter. The fixed
/// pid width keeps every pid/counter combination distinct.
fn interface_names(pid: u32, n: u32) -> (String, String) {
    let pid = base36(pid % 36u32.pow(PID_DIGITS as u32));
    let stem = format!("nt{pid:0>width$}{}", base36(n), width = PID_DIGITS);
    (format!("{stem}h"), format!("{stem}p"))
}

fn base36(mut value: u32) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit(value % 36, 36).unwrap_or('0'));
        value /= 36;
        if value == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}

/// Runs `ip` and returns its stdout. Failures carry the command and ip's own message
/// on one line, plus a hint when the cause is missing privileges.
fn ip(args: &[&str]) -> Result<String, NetnsError> {
    let joined = || args.join(" ");
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|cause| match cause.kind() {
            io::ErrorKind::NotFound => NetnsError::IpMissing,
            _ => NetnsError::Spawn {
                args: joined(),
                cause,
            },
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut detail = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    if detail.is_empty() {
        detail = output.status.to_string();
    }
    if detail.contains("Operation not permitted") || detail.contains("Permission denied") {
        detail.push_str("; run as root (needs CAP_NET_ADMIN and CAP_SYS_ADMIN)");
    }
    Err(NetnsError::Ip {
        args: joined(),
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_fit_ifnamsiz_and_differ() {
        let (host, peer) = interface_names(4_194_304, u32::MAX);
        assert!(host.len() <= 15 && peer.len() <= 15, "{host} {peer}");
        assert_ne!(host, peer);
        assert_ne!(interface_names(1, 12).0, interface_names(11, 2).0);
    }

    #[test]
    fn a_start_time_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        assert_eq!(start_ticks(stat), Some(987654));
        assert_eq!(start_ticks("42 (truncated"), None);
    }

    #[test]
    fn a_process_starts_after_boot_and_before_now() {
        let before_spawn = SystemTime::now();
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        let started = process_started(pid);
        let _ = child.kill();
        let _ = child.wait();
        let started = started.expect("a live child's start time");
        assert!(
            started + START_SLACK >= before_spawn,
            "{started:?} vs {before_spawn:?}"
        );
        assert!(started <= SystemTime::now());
    }

    #[test]
    fn a_reused_pid_does_not_own_an_older_namespace() {
        let made = SystemTime::now();
        let minute = Duration::from_secs(60);
        // The owner started before its namespace, and runs.
        assert!(owner_alive(true, Some(made - minute), Some(made)));
        // Within the start time's slack: still the owner.
        assert!(owner_alive(
            true,
            Some(made + Duration::from_secs(1)),
            Some(made)
        ));
        // The pid is alive but started long after: a reuse, so stale.
        assert!(!owner_alive(true, Some(made + minute), Some(made)));
        // Dead is dead; unknown times leave a live pid alone.
        assert!(!owner_alive(false, Some(made - minute), Some(made)));
        assert!(owner_alive(true, None, Some(made)));
        assert!(owner_alive(true, Some(made), None));
    }

    #[test]
    fn owner_pid_accepts_only_netto_suffixes() {
        assert_eq!(owner_pid("123-0"), Some(123));
        assert_eq!(owner_pid("x-123-0"), None);
        assert_eq!(owner_pid("123-0-1"), None);
        assert_eq!(owner_pid("0-1"), None);
    }

    #[test]
    fn parses_ip_addr_listing() {
        let listing = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                       7: nt0h    inet 198.18.0.1/30 scope global nt0h\n";
        let addrs = parse_ipv4_addrs(listing);
        assert!(addrs.contains(&Ipv4Addr::new(198, 18, 0, 1)));
        assert_eq!(addrs.len(), 2);
    }

    /// Removes an interface the test made itself.
    struct LinkGuard(String);

    impl Drop for LinkGuard {
        fn drop(&mut self) {
            let _ = ip(&["link", "del", &self.0]);
        }
    }

    #[test]
    fn failed_setup_removes_the_namespace_but_not_foreign_interfaces() {
        // A counter value the process never reaches, so no other pair can clash.
        let (pid, n) = (std::process::id(), u32::MAX);
        let (host_if, _) = interface_names(pid, n);
        let squatter = LinkGuard(host_if);
        ip(&["link", "add", &squatter.0, "type", "veth"]).expect("create squatter");
        let err = VethPair::create_numbered("unit", pid, n)
            .expect_err("the name clash must fail the setup");
        assert!(matches!(err, NetnsError::Ip { .. }), "{err}");
        assert!(!err.to_string().contains('\n'));
        let ns_path = format!("/run/netns/{NS_PREFIX}unit-{pid}-{n}");
        assert!(
            !std::path::Path::new(&ns_path).exists(),
            "{ns_path} left behind"
        );
        let squatter_path = format!("/sys/class/net/{}", squatter.0);
        assert!(
            std::path::Path::new(&squatter_path).exists(),
            "deleted a foreign interface"
        );
    }

    #[test]
    fn rejects_tags_that_would_confuse_the_sweep() {
        assert!(check_tag("demo").is_ok());
        assert!(check_tag("a-b").is_err());
        assert!(check_tag("").is_err());
    }
}
