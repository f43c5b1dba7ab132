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
    in_a_confined_copy(
        "a_confined_process_holds_nothing_and_may_call_little",
        confined_checks,
    );
}

/// The serving process with an OTLP exporter: the thread started before
/// [`close_outbound`] connects out; the confining thread, and any thread
/// it starts after, may not even make a socket.
#[test]
fn only_the_exporters_thread_may_connect_out() {
    in_a_confined_copy("only_the_exporters_thread_may_connect_out", || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = listener.local_addr().unwrap();
        confine(identity(None).unwrap(), Outbound::Tcp).unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let exporter = std::thread::spawn(move || {
            wait.recv().unwrap();
            std::net::TcpStream::connect(to).map(drop)
        });
        close_outbound().unwrap();
        go.send(()).unwrap();
        exporter
            .join()
            .unwrap()
            .expect("the exporter's thread connects");
        let refused = |what: &str, e: io::Error| {
            assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{what}: {e}");
        };
        refused("here", std::net::TcpStream::connect(to).unwrap_err());
        let later = std::thread::spawn(move || std::net::TcpStream::connect(to).map(drop));
        refused("a later thread", later.join().unwrap().unwrap_err());
        assert_eq!(
            errno_of(
                libc::SYS_socket,
                [libc::AF_UNIX.into(), libc::SOCK_STREAM.into(), 0]
            ),
            libc::EPERM
        );
    });
}

/// Runs `checks` in a copy of this test binary that runs only the test
/// `test` (whose body this call is) with [`CONFINED`] set.
fn in_a_confined_copy(test: &str, checks: fn()) {
    if std::env::var_os(CONFINED).is_some() {
        return checks();
    }
    let module = module_path!().split_once("::").unwrap().1;
    let name = format!("{module}::{test}");
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
