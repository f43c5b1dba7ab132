use super::*;

#[test]
fn the_filters_compile_for_this_machine() {
    let [not_implemented, allowed] = filters(Outbound::Refused).unwrap();
    // An instruction or more per call, within seccomp's limit.
    assert!(not_implemented.len() > NOT_IMPLEMENTED.len());
    assert!(allowed.len() > ALLOWED.len());
    assert!(allowed.len() < 4096);
}

/// What pthread_create passes, as both C libraries do: the allow-list
/// must let it through, or the server cannot start a thread.
#[test]
fn thread_flags_are_the_c_librarys() {
    let glibc = THREAD_FLAGS
        | (libc::CLONE_SETTLS | libc::CLONE_PARENT_SETTID | libc::CLONE_CHILD_CLEARTID) as u64;
    assert_eq!(glibc & (THREAD_FLAGS | NAMESPACE_FLAGS), THREAD_FLAGS);
    assert_eq!(THREAD_FLAGS & NAMESPACE_FLAGS, 0);
    // The exit signal's byte is not looked at.
    assert_eq!((THREAD_FLAGS | NAMESPACE_FLAGS) & libc::CSIGNAL as u64, 0);
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
    confine(identity(None).unwrap(), Outbound::Refused).unwrap();
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
        // No new namespace (what unshare would do), no new process.
        (
            libc::SYS_clone,
            [
                (libc::CLONE_NEWUSER | libc::CLONE_NEWNET | libc::SIGCHLD).into(),
                0,
                0,
            ],
        ),
        (libc::SYS_clone, [libc::SIGCHLD.into(), 0, 0]),
        (
            libc::SYS_clone,
            [
                THREAD_FLAGS as libc::c_long | libc::CLONE_NEWNET as libc::c_long,
                0,
                0,
            ],
        ),
    ] {
        assert_eq!(errno_of(call, args), libc::EPERM, "system call {call}");
    }
    assert_eq!(errno_of(libc::SYS_clone3, [0, 0, 0]), libc::ENOSYS);
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
fn users_are_found_and_root_is_refused() {
    if !unistd::geteuid().is_root() {
        assert_eq!(identity(Some("nobody")).unwrap(), None);
        assert_eq!(identity(None).unwrap(), None);
        return;
    }
    let nobody = identity(Some("nobody")).unwrap().unwrap();
    assert_ne!(nobody.uid, 0);
    assert!(matches!(identity(Some("root")), Err(SandboxError::Root(_))));
    assert!(matches!(
        identity(Some("no-such-user-here")),
        Err(SandboxError::NoUser(_))
    ));
}

#[test]
fn an_unused_id_is_nobodys() {
    let taken = ids_of_processes();
    // This process at least.
    assert!(taken.contains(&unistd::getuid().as_raw()));
    let picked = unused().unwrap();
    assert_eq!(picked.uid, picked.gid);
    assert!(UNUSED_IDS.contains(&picked.uid));
    assert!(!taken.contains(&picked.uid));
    assert!(User::from_uid(Uid::from_raw(picked.uid)).unwrap().is_none());
    assert!(Group::from_gid(Gid::from_raw(picked.gid))
        .unwrap()
        .is_none());
    // Picked afresh each time.
    let picks: HashSet<u32> = (0..8).map(|_| unused().unwrap().uid).collect();
    assert!(picks.len() > 1);
}

/// The capability sets are read and cleared through `caps`, which
/// names the capabilities it knows: every one this kernel has must be
/// among them, or a new one could stay in the bounding set unseen.
#[test]
fn caps_knows_every_capability_of_this_kernel() {
    let last: u8 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let known = caps::all();
    assert!(
        (0..=last).all(|n| known.iter().any(|c| c.index() == n)),
        "the kernel knows capabilities up to {last}"
    );
}
