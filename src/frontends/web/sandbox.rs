//! The serving process's confinement. Whatever a request manages to do
//! to the HTTP server, it does it in a process that holds no capability,
//! runs as an unprivileged user when netto was started as root, can never
//! gain a privilege again (no_new_privs), and may make only the system
//! calls an HTTP server on an inherited socket needs (a seccomp allow-list:
//! no open, exec, bpf, perf_event_open, ptrace, mount, module loading...).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;

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
    #[error("{call}: {cause}")]
    Call {
        call: &'static str,
        cause: io::Error,
    },
    #[error("the seccomp filter: {0}")]
    Filter(String),
    #[error("still privileged after dropping privileges: {0}")]
    Remains(&'static str),
}

/// The user to become: `name`'s uid and primary group, when this process
/// runs as root (otherwise it is unprivileged already).
pub fn identity(name: &str) -> Result<Option<Identity>, SandboxError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let no_user = || SandboxError::NoUser(name.to_owned());
    let c_name = CString::new(name).map_err(|_| no_user())?;
    // SAFETY: passwd is plain old data; all zeroes is a valid value.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, the buffer's length is
    // its own, and `found` points at `entry` or is null afterwards.
    let rc = unsafe {
        libc::getpwnam_r(
            c_name.as_ptr(),
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() {
        return Err(no_user());
    }
    if entry.pw_uid == 0 {
        return Err(SandboxError::Root(name.to_owned()));
    }
    Ok(Some(Identity {
        uid: entry.pw_uid,
        gid: entry.pw_gid,
    }))
}

/// Drops every privilege of this process for good, then allows only the
/// system calls of `ALLOWED`. Call it before any thread starts: threads
/// inherit the filter, and the user switch then covers them all.
pub fn confine(identity: Option<Identity>) -> Result<(), SandboxError> {
    let last = last_capability()?;
    // Only a process holding CAP_SETPCAP may shrink its bounding set; an
    // unprivileged one has nothing to gain from it once no_new_privs is set.
    let bounding = effective()? & (1 << CAP_SETPCAP) != 0;
    if bounding {
        for cap in 0..=last {
            prctl(
                "dropping the capability bounding set",
                libc::PR_CAPBSET_DROP,
                cap.into(),
                0,
            )?;
        }
    }
    prctl(
        "clearing ambient capabilities",
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
        0,
    )?;
    if let Some(id) = identity {
        become_user(id)?;
    }
    set_capabilities(CapData::default())?;
    prctl("setting no_new_privs", libc::PR_SET_NO_NEW_PRIVS, 1, 0)?;
    verify(last, bounding, identity)?;
    install_filter()
}

/// Supplementary groups, then group, then user (a user switch first would
/// lose the right to change groups).
fn become_user(id: Identity) -> Result<(), SandboxError> {
    // SAFETY: an empty group list needs no pointer.
    check("setgroups", unsafe { libc::setgroups(0, std::ptr::null()) })?;
    // SAFETY: plain system calls on integers.
    check("setresgid", unsafe {
        libc::setresgid(id.gid, id.gid, id.gid)
    })?;
    // SAFETY: as above.
    check("setresuid", unsafe {
        libc::setresuid(id.uid, id.uid, id.uid)
    })
}

fn verify(last: u32, bounding: bool, identity: Option<Identity>) -> Result<(), SandboxError> {
    let caps = capabilities()?;
    if caps
        .iter()
        .any(|c| c.effective | c.permitted | c.inheritable != 0)
    {
        return Err(SandboxError::Remains("capabilities"));
    }
    for cap in 0..=last {
        let ambient = prctl_read(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong,
            cap.into(),
        );
        if ambient != 0 {
            return Err(SandboxError::Remains("ambient capabilities"));
        }
        if bounding && prctl_read(libc::PR_CAPBSET_READ, cap.into(), 0) != 0 {
            return Err(SandboxError::Remains("the capability bounding set"));
        }
    }
    if prctl_read(libc::PR_GET_NO_NEW_PRIVS, 0, 0) != 1 {
        return Err(SandboxError::Remains("no_new_privs unset"));
    }
    if let Some(id) = identity {
        // SAFETY: plain system calls without arguments.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if (uid, gid) != (id.uid, id.gid) {
            return Err(SandboxError::Remains("root's user or group"));
        }
    }
    Ok(())
}

/// The highest capability number this kernel knows.
fn last_capability() -> Result<u32, SandboxError> {
    let path = "/proc/sys/kernel/cap_last_cap";
    let text = std::fs::read_to_string(path).map_err(|cause| SandboxError::Call {
        call: "reading /proc/sys/kernel/cap_last_cap",
        cause,
    })?;
    text.trim().parse().map_err(|_| SandboxError::Call {
        call: "reading /proc/sys/kernel/cap_last_cap",
        cause: io::Error::new(io::ErrorKind::InvalidData, text.trim().to_owned()),
    })
}

/// The capability that allows shrinking the bounding set
/// (linux/capability.h).
const CAP_SETPCAP: u32 = 8;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`: one per 32 capabilities.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit sets, as two `CapData`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

fn capabilities() -> Result<[CapData; 2], SandboxError> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and data are the layout capget(2) fills for version 3.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    check("capget", rc as libc::c_int)?;
    Ok(data)
}

fn effective() -> Result<u64, SandboxError> {
    let [low, high] = capabilities()?;
    Ok(u64::from(high.effective) << 32 | u64::from(low.effective))
}

/// Sets this thread's effective, permitted and inheritable sets to `data`
/// (the same for both halves of the 64 capabilities).
fn set_capabilities(data: CapData) -> Result<(), SandboxError> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [data; 2];
    // SAFETY: header and data are the layout capset(2) reads for version 3.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    check("capset", rc as libc::c_int)
}

fn prctl(
    what: &'static str,
    option: libc::c_int,
    arg2: libc::c_ulong,
    arg3: libc::c_ulong,
) -> Result<(), SandboxError> {
    // SAFETY: the options used here take integers only.
    check(what, unsafe { libc::prctl(option, arg2, arg3, 0, 0) })
}

/// A prctl that reads a flag: its value, or -1.
fn prctl_read(option: libc::c_int, arg2: libc::c_ulong, arg3: libc::c_ulong) -> libc::c_int {
    // SAFETY: the options used here take integers only.
    unsafe { libc::prctl(option, arg2, arg3, 0, 0) }
}

fn check(call: &'static str, rc: libc::c_int) -> Result<(), SandboxError> {
    if rc < 0 {
        Err(SandboxError::Call {
            call,
            cause: io::Error::last_os_error(),
        })
    } else {
        Ok(())
    }
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
    Allowed::Any(libc::SYS_clone),
    Allowed::Any(libc::SYS_clone3),
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
        values: &[libc::FIONBIO, libc::FIOCLEX],
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

/// The allow-list as a seccomp program for this architecture.
pub fn filter() -> Result<BpfProgram, SandboxError> {
    let bad = |e: &dyn std::fmt::Display| SandboxError::Filter(e.to_string());
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value).map_err(|e| bad(&e))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for allowed in ALLOWED {
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
        rules.insert(call, chain);
    }
    let arch = std::env::consts::ARCH.try_into().map_err(|e| bad(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(|e| bad(&e))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| bad(&e))
}

fn install_filter() -> Result<(), SandboxError> {
    seccompiler::apply_filter(&filter()?).map_err(|e| SandboxError::Filter(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_machine() {
        let program = filter().unwrap();
        // An instruction or more per allowed call, within seccomp's limit.
        assert!(program.len() > ALLOWED.len());
        assert!(program.len() < 4096);
    }

    /// Set in the copy of the test binary that confines itself.
    const CONFINED: &str = "NETTO_TEST_CONFINED";

    fn errno_of(call: libc::c_long, args: [libc::c_long; 3]) -> i32 {
        // SAFETY: every call made here is refused by the filter before the
        // kernel looks at its arguments, or takes integers only.
        let rc = unsafe { libc::syscall(call, args[0], args[1], args[2], 0, 0, 0) };
        assert_eq!(rc, -1, "system call {call} succeeded");
        io::Error::last_os_error().raw_os_error().unwrap()
    }

    /// What the confined copy checks on itself.
    fn confined_checks() {
        let nobody = identity("nobody").unwrap();
        confine(nobody).unwrap();
        // confine() checked the user and the capability sets before the
        // filter went on (which refuses getuid and capget now); the serve
        // tests read them in /proc.
        let path = c"/etc/hostname".as_ptr() as libc::c_long;
        for (call, args) in [
            (libc::SYS_openat, [libc::AT_FDCWD as libc::c_long, path, 0]),
            (libc::SYS_bpf, [0, 0, 0]),
            (libc::SYS_perf_event_open, [0, 0, 0]),
            (
                libc::SYS_ptrace,
                [libc::PTRACE_TRACEME as libc::c_long, 0, 0],
            ),
            (libc::SYS_execve, [path, 0, 0]),
            (libc::SYS_mount, [0, 0, 0]),
            (libc::SYS_setns, [0, 0, 0]),
            (libc::SYS_unshare, [0, 0, 0]),
            (libc::SYS_init_module, [0, 0, 0]),
            (libc::SYS_kexec_load, [0, 0, 0]),
            (libc::SYS_setuid, [0, 0, 0]),
            (libc::SYS_kill, [1, 0, 0]),
            (
                libc::SYS_socket,
                [libc::AF_INET.into(), libc::SOCK_STREAM.into(), 0],
            ),
            (
                libc::SYS_socketpair,
                [libc::AF_INET.into(), libc::SOCK_STREAM.into(), 0],
            ),
            (libc::SYS_prctl, [libc::PR_SET_DUMPABLE.into(), 1, 0]),
            (libc::SYS_ioctl, [0, libc::TIOCSTI as libc::c_long, 0]),
        ] {
            assert_eq!(errno_of(call, args), libc::EPERM, "system call {call}");
        }
        // SAFETY: an anonymous mapping, unmapped if it was made.
        let exec = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_eq!(exec, libc::MAP_FAILED, "an executable mapping was made");
        // What the server does still works: threads, local sockets, I/O.
        let (mut a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let echo = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut got = [0; 5];
            b.read_exact(&mut got).unwrap();
            b.write_all(&got).unwrap();
        });
        use std::io::{Read, Write};
        a.write_all(b"hello").unwrap();
        let mut back = [0; 5];
        a.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hello");
        echo.join().unwrap();
    }

    /// Confines a copy of this test binary (confining the test runner
    /// itself would end the other tests) and runs the checks there.
    #[test]
    fn a_confined_process_holds_nothing_and_may_call_little() {
        if std::env::var_os(CONFINED).is_some() {
            return confined_checks();
        }
        let module = module_path!().split_once("::").unwrap().1;
        let name = format!("{module}::a_confined_process_holds_nothing_and_may_call_little");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &name, "--nocapture", "--test-threads=1"])
            .env(CONFINED, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn nobody_is_found_and_root_is_refused() {
        if unsafe { libc::geteuid() } != 0 {
            assert_eq!(identity("nobody").unwrap(), None);
            return;
        }
        let nobody = identity("nobody").unwrap().unwrap();
        assert_ne!(nobody.uid, 0);
        assert!(matches!(identity("root"), Err(SandboxError::Root(_))));
        assert!(matches!(
            identity("no-such-user-here"),
            Err(SandboxError::NoUser(_))
        ));
    }
}
