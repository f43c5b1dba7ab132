//! The serving process's confinement. Whatever a request manages to do
//! to the HTTP server, it does it in a process that holds no capability,
//! runs as a user of its own (an unused uid and gid) or the one named with
//! --user when netto was started as root, can never gain a privilege again
//! (no_new_privs), and may make only the system calls an HTTP server on an
//! inherited socket needs (a seccomp allow-list: no open, exec, fork, bpf,
//! perf_event_open, ptrace, mount, namespaces, module loading...).
//!
//! Capabilities go through the `caps` crate, users, groups and prctl
//! through `nix`, the filter through `seccompiler`.

use std::collections::{BTreeMap, HashSet};
use std::io;

use caps::errors::CapsError;
use caps::{CapSet, Capability};
use nix::sys::prctl;
use nix::unistd::{self, Gid, Group, Uid, User};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use thiserror::Error;

/// Whom the serving process becomes when started as root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Error)]
pub enum SandboxError {
    #[error("no user named {0} (--user)")]
    NoUser(String),
    #[error("--user {0} is root; the HTTP server process must run as another user")]
    Root(String),
    #[error(
        "no unused uid and gid from {} to {} for the HTTP server process; name a user with --user",
        UNUSED_IDS.start(),
        UNUSED_IDS.end()
    )]
    NoUnusedId,
    #[error("{call}: {cause}")]
    Call {
        call: &'static str,
        cause: io::Error,
    },
    #[error("{what}: {cause}")]
    Caps {
        what: &'static str,
        cause: CapsError,
    },
    #[error("the seccomp filter: {0}")]
    Filter(String),
    #[error("still privileged after dropping privileges: {0}")]
    Remains(&'static str),
}

/// Where an unused uid (and the same gid) is picked: a range that
/// systemd's scheme of UID ranges leaves unused (above its container
/// ranges, below its foreign range) and that shadow's default subordinate
/// ranges do not reach; below 2^31, where no program takes a uid for a
/// negative number.
pub const UNUSED_IDS: std::ops::RangeInclusive<u32> = 0x7000_0000..=0x7eff_ffff;

/// How many random picks in [`UNUSED_IDS`] are tried.
const PICKS: usize = 64;

/// The user to become, when this process runs as root (otherwise it is
/// unprivileged already): `user`'s uid and primary group, or without a
/// user, an unused uid and gid picked now.
pub fn identity(user: Option<&str>) -> Result<Option<Identity>, SandboxError> {
    if !unistd::geteuid().is_root() {
        return Ok(None);
    }
    match user {
        Some(name) => named(name).map(Some),
        None => unused().map(Some),
    }
}

fn named(name: &str) -> Result<Identity, SandboxError> {
    let entry = User::from_name(name)
        .ok()
        .flatten()
        .ok_or_else(|| SandboxError::NoUser(name.to_owned()))?;
    if entry.uid.is_root() {
        return Err(SandboxError::Root(name.to_owned()));
    }
    Ok(Identity {
        uid: entry.uid.as_raw(),
        gid: entry.gid.as_raw(),
    })
}

/// A uid, with the same number for the gid, that no user or group entry
/// names and no process runs as: no other process on the host may then
/// signal, trace or read the serving process as its own user, as any
/// daemon running as `nobody` could.
fn unused() -> Result<Identity, SandboxError> {
    let taken = ids_of_processes();
    let free = |id: u32| {
        !taken.contains(&id)
            && matches!(User::from_uid(Uid::from_raw(id)), Ok(None))
            && matches!(Group::from_gid(Gid::from_raw(id)), Ok(None))
    };
    (0..PICKS)
        .map(|_| rand::random_range(UNUSED_IDS))
        .find(|&id| free(id))
        .map(|id| Identity { uid: id, gid: id })
        .ok_or(SandboxError::NoUnusedId)
}

/// Every uid and gid (real, effective, saved, filesystem) of every process
/// in /proc.
fn ids_of_processes() -> HashSet<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashSet::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter_map(|l| l.strip_prefix("Uid:").or_else(|| l.strip_prefix("Gid:")))
                .flat_map(|ids| ids.split_whitespace().filter_map(|id| id.parse().ok()))
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether the confined process may connect out: only for the OTLP
/// exporter, and then only until [`close_outbound`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outbound {
    Refused,
    /// TCP connections over IPv4 or IPv6.
    Tcp,
}

/// Drops every privilege of this process for good, then allows only the
/// system calls of `ALLOWED` (and of `OUTBOUND` if `outbound` says so).
/// Call it before any thread starts: threads inherit the filter, and the
/// capability sets dropped here are this thread's.
pub fn confine(identity: Option<Identity>, outbound: Outbound) -> Result<(), SandboxError> {
    // Only a process holding CAP_SETPCAP may shrink its bounding set; an
    // unprivileged one has nothing to gain from it once no_new_privs is set.
    let bounding = caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)
        .map_err(caps_error("reading the effective capabilities"))?;
    if bounding {
        caps::clear(None, CapSet::Bounding)
            .map_err(caps_error("dropping the capability bounding set"))?;
    }
    caps::clear(None, CapSet::Ambient).map_err(caps_error("clearing ambient capabilities"))?;
    if let Some(id) = identity {
        become_user(id)?;
    }
    for set in [CapSet::Inheritable, CapSet::Permitted] {
        caps::clear(None, set).map_err(caps_error("clearing the capability sets"))?;
    }
    prctl::set_no_new_privs().map_err(call("setting no_new_privs"))?;
    verify(bounding, identity)?;
    install_filters(outbound)
}

/// Refuses connecting out to this thread and every thread it starts from
/// now on: called by the serving process once the exporter's thread (the
/// one that connects) has started, so no request handler ever may.
pub fn close_outbound() -> Result<(), SandboxError> {
    let bad = |e: &dyn std::fmt::Display| SandboxError::Filter(e.to_string());
    let rules = [libc::SYS_socket, libc::SYS_connect]
        .into_iter()
        .map(|call| (call, vec![]))
        .collect();
    let arch = std::env::consts::ARCH.try_into().map_err(|e| bad(&e))?;
    let filter: BpfProgram = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| bad(&e))?
    .try_into()
    .map_err(|e: seccompiler::BackendError| bad(&e))?;
    seccompiler::apply_filter(&filter).map_err(|e| bad(&e))
}

/// Supplementary groups, then group, then user (a user switch first would
/// lose the right to change groups). Through the C library, which changes
/// them for every thread of the process, not only the calling one.
fn become_user(id: Identity) -> Result<(), SandboxError> {
    let (uid, gid) = (Uid::from_raw(id.uid), Gid::from_raw(id.gid));
    unistd::setgroups(&[]).map_err(call("setgroups"))?;
    unistd::setresgid(gid, gid, gid).map_err(call("setresgid"))?;
    unistd::setresuid(uid, uid, uid).map_err(call("setresuid"))
}

fn verify(bounding: bool, identity: Option<Identity>) -> Result<(), SandboxError> {
    let held = |set| caps::read(None, set).map_err(caps_error("reading the capability sets"));
    for set in [CapSet::Effective, CapSet::Permitted, CapSet::Inheritable] {
        if !held(set)?.is_empty() {
            return Err(SandboxError::Remains("capabilities"));
        }
    }
    if !held(CapSet::Ambient)?.is_empty() {
        return Err(SandboxError::Remains("ambient capabilities"));
    }
    if bounding && !held(CapSet::Bounding)?.is_empty() {
        return Err(SandboxError::Remains("the capability bounding set"));
    }
    if !prctl::get_no_new_privs().map_err(call("reading no_new_privs"))? {
        return Err(SandboxError::Remains("no_new_privs unset"));
    }
    if let Some(id) = identity {
        if (unistd::geteuid().as_raw(), unistd::getegid().as_raw()) != (id.uid, id.gid) {
            return Err(SandboxError::Remains("root's user or group"));
        }
    }
    Ok(())
}

fn call(call: &'static str) -> impl Fn(nix::Error) -> SandboxError {
    move |errno| SandboxError::Call {
        call,
        cause: errno.into(),
    }
}

fn caps_error(what: &'static str) -> impl Fn(CapsError) -> SandboxError {
    move |cause| SandboxError::Caps { what, cause }
}

/// A system call the serving process may make, on any arguments or only
/// on those the condition allows.
enum Allowed {
    Any(libc::c_long),
    /// Only when argument `arg` masked with `mask` equals `value`.
    Masked {
        call: libc::c_long,
        arg: u8,
        mask: u64,
        value: u64,
    },
    /// Only when argument `arg` is one of `values`.
    OneOf {
        call: libc::c_long,
        arg: u8,
        values: &'static [u64],
    },
}

/// `mmap` or `mprotect` only without `PROT_EXEC` (their third argument).
const fn never_executable(call: libc::c_long) -> Allowed {
    Allowed::Masked {
        call,
        arg: 2,
        mask: libc::PROT_EXEC as u64,
        value: 0,
    }
}

/// The clone flags of a thread: what glibc's and musl's pthread_create
/// both pass (besides those about the thread's TLS and id).
const THREAD_FLAGS: u64 = (libc::CLONE_VM
    | libc::CLONE_FS
    | libc::CLONE_FILES
    | libc::CLONE_SIGHAND
    | libc::CLONE_THREAD
    | libc::CLONE_SYSVSEM) as u64;

/// Every clone flag that makes a new namespace (CLONE_NEWTIME is clone3's
/// and unshare's only: in clone's flags that bit is the exit signal's).
const NAMESPACE_FLAGS: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64;

/// System calls answered ENOSYS, as a kernel without them would, so that
/// the C library falls back to one the allow-list can judge.
const NOT_IMPLEMENTED: &[libc::c_long] = &[libc::SYS_clone3];

/// What actix-web and tokio serving on an inherited socket need, found by
/// tracing (strace -f) the serving process through every endpoint, a
/// stream, a flame graph and its shutdown. Anything else fails with EPERM,
/// among them the reads of /proc and /sys by which the standard library
/// looks for a CPU quota (it then counts the CPUs it may run on).
const ALLOWED: &[Allowed] = &[
    // Memory, never executable.
    Allowed::Any(libc::SYS_brk),
    never_executable(libc::SYS_mmap),
    never_executable(libc::SYS_mprotect),
    Allowed::Any(libc::SYS_munmap),
    Allowed::Any(libc::SYS_mremap),
    Allowed::Any(libc::SYS_madvise),
    // Threads: the workers, the blocking pool that draws flame graphs.
    // Only threads: a clone that would make a process (fork) or a new
    // namespace of any kind is refused. clone3 passes its flags in memory,
    // which seccomp cannot read: it is answered ENOSYS instead (see
    // [`NOT_IMPLEMENTED`]), and the C library then makes its threads with
    // clone.
    Allowed::Masked {
        call: libc::SYS_clone,
        arg: 0,
        mask: THREAD_FLAGS | NAMESPACE_FLAGS,
        value: THREAD_FLAGS,
    },
    Allowed::Any(libc::SYS_futex),
    Allowed::Any(libc::SYS_set_robust_list),
    Allowed::Any(libc::SYS_rseq),
    Allowed::Any(libc::SYS_sched_yield),
    Allowed::Any(libc::SYS_sched_getaffinity),
    Allowed::Any(libc::SYS_gettid),
    Allowed::Any(libc::SYS_getpid),
    Allowed::Any(libc::SYS_exit),
    Allowed::Any(libc::SYS_exit_group),
    Allowed::Any(libc::SYS_rt_sigaction),
    Allowed::Any(libc::SYS_rt_sigprocmask),
    Allowed::Any(libc::SYS_rt_sigreturn),
    Allowed::Any(libc::SYS_sigaltstack),
    Allowed::OneOf {
        call: libc::SYS_prctl,
        arg: 0,
        values: &[libc::PR_SET_NAME as u64, libc::PR_GET_NAME as u64],
    },
    // Files it already has: the pipe, stdout, stderr, sockets.
    Allowed::Any(libc::SYS_read),
    Allowed::Any(libc::SYS_write),
    Allowed::Any(libc::SYS_readv),
    Allowed::Any(libc::SYS_writev),
    Allowed::Any(libc::SYS_close),
    Allowed::Any(libc::SYS_fcntl),
    Allowed::OneOf {
        call: libc::SYS_ioctl,
        arg: 1,
        // SIOCOUTQ (TIOCOUTQ's number): what a connection has not sent.
        values: &[libc::FIONBIO, libc::FIOCLEX, libc::TIOCOUTQ],
    },
    // Connections on the inherited listener.
    Allowed::Any(libc::SYS_accept4),
    Allowed::Any(libc::SYS_recvfrom),
    Allowed::Any(libc::SYS_sendto),
    Allowed::Any(libc::SYS_recvmsg),
    Allowed::Any(libc::SYS_sendmsg),
    Allowed::Any(libc::SYS_shutdown),
    Allowed::Any(libc::SYS_getsockname),
    Allowed::Any(libc::SYS_getpeername),
    Allowed::Any(libc::SYS_setsockopt),
    Allowed::Any(libc::SYS_getsockopt),
    // tokio's signal driver wakes itself through a local socket pair.
    Allowed::OneOf {
        call: libc::SYS_socketpair,
        arg: 0,
        values: &[libc::AF_UNIX as u64],
    },
    // Waiting.
    Allowed::Any(libc::SYS_epoll_create1),
    Allowed::Any(libc::SYS_epoll_ctl),
    Allowed::Any(libc::SYS_epoll_pwait),
    Allowed::Any(libc::SYS_epoll_pwait2),
    Allowed::Any(libc::SYS_eventfd2),
    Allowed::Any(libc::SYS_ppoll),
    Allowed::Any(libc::SYS_clock_gettime),
    Allowed::Any(libc::SYS_clock_nanosleep),
    Allowed::Any(libc::SYS_nanosleep),
    Allowed::Any(libc::SYS_restart_syscall),
    Allowed::Any(libc::SYS_getrandom),
    // The older forms x86_64 libraries still call.
    #[cfg(target_arch = "x86_64")]
    Allowed::Any(libc::SYS_epoll_wait),
    #[cfg(target_arch = "x86_64")]
    Allowed::Any(libc::SYS_poll),
];

/// What connecting out to the OTLP receiver needs besides `ALLOWED`: a
/// TCP socket of either family, and its connect; and, to close that again
/// for every other thread ([`close_outbound`]), adding a filter, which can
/// only ever refuse more.
const OUTBOUND: &[Allowed] = &[
    Allowed::OneOf {
        call: libc::SYS_prctl,
        arg: 0,
        values: &[libc::PR_SET_NO_NEW_PRIVS as u64],
    },
    Allowed::OneOf {
        call: libc::SYS_seccomp,
        arg: 0,
        values: &[libc::SECCOMP_SET_MODE_FILTER as u64],
    },
    Allowed::OneOf {
        call: libc::SYS_socket,
        arg: 0,
        values: &[libc::AF_INET as u64, libc::AF_INET6 as u64],
    },
    Allowed::Any(libc::SYS_connect),
];

/// The seccomp programs for this architecture, in the order they are
/// installed: first one that answers `NOT_IMPLEMENTED` with ENOSYS and
/// lets everything else through, then the allow-list of `ALLOWED`, which
/// lets those calls through too. Of two filters' answers the kernel takes
/// the more restrictive (an error over an allowance), and of two errors
/// the later filter's: so the ENOSYS filter must come first, and the
/// allow-list must allow what it answers.
pub fn filters(outbound: Outbound) -> Result<[BpfProgram; 2], SandboxError> {
    let bad = |e: &dyn std::fmt::Display| SandboxError::Filter(e.to_string());
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).map_err(|e| bad(&e))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let extra = match outbound {
        Outbound::Refused => &[][..],
        Outbound::Tcp => OUTBOUND,
    };
    for allowed in ALLOWED.iter().chain(extra) {
        let (call, chain) = match allowed {
            Allowed::Any(call) => (*call, vec![]),
            Allowed::Masked {
                call,
                arg,
                mask,
                value,
            } => {
                let rule = SeccompRule::new(vec![condition(
                    *arg,
                    SeccompCmpOp::MaskedEq(*mask),
                    *value,
                )?])
                .map_err(|e| bad(&e))?;
                (*call, vec![rule])
            }
            Allowed::OneOf { call, arg, values } => {
                let chain = values
                    .iter()
                    .map(|v| {
                        SeccompRule::new(vec![condition(*arg, SeccompCmpOp::Eq, *v)?])
                            .map_err(|e| bad(&e))
                    })
                    .collect::<Result<_, _>>()?;
                (*call, chain)
            }
        };
        // A call in both lists (prctl) is allowed on either's arguments.
        match rules.get_mut(&call) {
            Some(known) if !known.is_empty() && !chain.is_empty() => known.extend(chain),
            Some(known) => known.clear(),
            None => {
                rules.insert(call, chain);
            }
        }
    }
    let not_implemented: BTreeMap<i64, Vec<SeccompRule>> =
        NOT_IMPLEMENTED.iter().map(|&call| (call, vec![])).collect();
    rules.extend(not_implemented.clone());
    let arch = std::env::consts::ARCH.try_into().map_err(|e| bad(&e))?;
    let compile = |rules, mismatch, matched| -> Result<BpfProgram, SandboxError> {
        SeccompFilter::new(rules, mismatch, matched, arch)
            .map_err(|e| bad(&e))?
            .try_into()
            .map_err(|e: seccompiler::BackendError| bad(&e))
    };
    Ok([
        compile(
            not_implemented,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
        )?,
        compile(
            rules,
            SeccompAction::Errno(libc::EPERM as u32),
            SeccompAction::Allow,
        )?,
    ])
}

fn install_filters(outbound: Outbound) -> Result<(), SandboxError> {
    for filter in filters(outbound)? {
        seccompiler::apply_filter(&filter).map_err(|e| SandboxError::Filter(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
