//! 32-bit programs' socket calls (the tracepoint backend's compat path): a
//! 32-bit program's system call numbers and argument registers are not the
//! native ones, so netto must look them up in their own table. Host-only:
//! the kernel matrix's guests have no 32-bit compiler. Needs root, BPF and
//! gcc-multilib (installed by scripts/install-deps.sh).

mod common;

use std::process::Command;
use std::thread;
use std::time::Duration;

use common::*;
use netto::model::EventKey;

const UNDER_TEST: usize = 1;

/// Builds tests/compat/socket_io.c as a static 32-bit program.
fn build_program(dir: &std::path::Path) -> std::path::PathBuf {
    let binary = dir.join("socket_io32");
    let out = Command::new("gcc")
        .args(["-m32", "-static", "-O2", "-o"])
        .arg(&binary)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/compat/socket_io.c"
        ))
        .output()
        .expect("running gcc (scripts/install-deps.sh installs it)");
    assert!(
        out.status.success(),
        "gcc -m32 failed (gcc-multilib missing? scripts/install-deps.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    binary
}

#[test]
fn a_32_bit_programs_socket_calls_are_windows_of_their_own_kind() {
    let dir = tempfile::tempdir().unwrap();
    let program = build_program(dir.path());
    let netto = NettoStat::start(0, &["--interval", "0.25", "--no-bpf-stats"]);
    thread::sleep(Duration::from_millis(600));
    let mut command = Command::new(&program);
    command.args([UNDER_TEST.to_string(), scaled_secs(4).to_string()]);
    let stolen = Stolen::start(UNDER_TEST);
    let run = run_client(command);
    let stolen = stolen.ns();
    thread::sleep(Duration::from_millis(600));
    let snaps = netto.stop();

    assert!(run.calls > 6000, "the 32-bit program barely ran: {run:?}");
    let window = overlapping(&snaps, run.started, run.ended);
    let send = event_on_cpu(&window, EventKey::SockSend, UNDER_TEST) as f64;
    let recv = event_on_cpu(&window, EventKey::SockRecv, UNDER_TEST) as f64;
    let sys = run.stime_ns as f64;
    eprintln!(
        "32-bit: sock_send {send} + sock_recv {recv} ns vs system time {sys} ns: {:.2}; \
         stolen by the host {stolen} ns",
        (send + recv) / sys
    );
    assert!(
        send >= 0.25 * sys && recv >= 0.25 * sys,
        "32-bit sends ({send} ns) and receives ({recv} ns) must each be a good part of the \
         program's system time ({sys} ns)"
    );
    let ratio = (send + recv) / sys;
    assert!(
        ratio >= window_floor() && ratio <= kernel_time_ceiling(1.05, run.stime_ns, stolen),
        "32-bit socket windows are {ratio:.2} of system time"
    );
}
