//! One guest boot: the jobs it runs, the qemu process and what comes back.
//! qemu exits 0 whatever happens inside, so results are read from files the
//! guest wrote to the share; a job without a `status` file never finished.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::host::{self, shell_quote};
use super::initramfs::{self, GuestConfig};
use super::kernel::Kernel;
use super::Layout;

/// Boot to the first job, with room to spare (about 8 s measured).
const BOOT_ALLOWANCE: Duration = Duration::from_secs(90);
const MEMORY: &str = "2G";
/// The guest's heartbeat (every 5 s) older than this: the guest hung.
const HANG_AFTER: Duration = Duration::from_secs(120);

/// A command the guest runs, bounded by its own timeout inside the guest.
#[derive(Clone)]
pub struct Job {
    /// Directory name under `jobs/`; jobs run in name order.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Runs the job with `kernel.bpf_stats_enabled` set, so that netto's
    /// duty cycle (`source::duty`) takes and drops a reference to the
    /// kernel's statistics key instead of flipping it. Each flip rewrites
    /// every BPF dispatch site with int3 text patching, and under
    /// multi-threaded TCG a vCPU running a patched site while the other
    /// patches it can trap on a breakpoint already gone: the 6.12 guest
    /// panicked that way on every boot of the forwarded-flows row (see
    /// docs/src/journal/2026-11-29-matrix-flows-int3-panics.md). Every
    /// job sets the sysctl, so none inherits another's.
    pub bpf_stats_held: bool,
    pub timeout: Duration,
}

/// The emulated machine a guest boots on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    pub vcpus: u32,
    /// qemu's `-accel`, unless `NETTO_VM_ACCEL` names another for a
    /// comparison.
    pub accel: &'static str,
}

/// How a job ended.
#[derive(Debug)]
pub struct JobResult {
    /// `None` when the guest never finished the job (hung, crashed or
    /// killed at the boot's deadline).
    pub status: Option<i32>,
    pub output: String,
    pub seconds: Option<u64>,
}

/// What one boot produced.
pub struct Boot {
    pub results: Vec<JobResult>,
    pub serial_log: PathBuf,
    pub timed_out: bool,
    /// Why the guest was found hung (its heartbeat stopped, or a job could
    /// not be ended), and where its vCPUs were, symbolized with the
    /// guest's own kallsyms.
    pub hung: Option<String>,
    pub wall: Duration,
}

/// Boots `kernel` on `machine`, runs `jobs` in it and collects their
/// results. `dir` (on the share) receives the jobs and the serial log.
pub fn boot(
    kernel: &Kernel,
    machine: Machine,
    layout: &Layout,
    dir: &Path,
    jobs: &[Job],
) -> Result<Boot> {
    let share = &layout.target_dir;
    let _ = fs::remove_dir_all(dir);
    let jobs_dir = dir.join("jobs");
    for job in jobs {
        write_job(&jobs_dir.join(&job.name), job)
            .with_context(|| format!("writing job {} in {}", job.name, jobs_dir.display()))?;
    }
    let executables: Vec<PathBuf> = jobs
        .iter()
        .map(|j| j.program.clone())
        .chain([layout.netto.clone()])
        .collect();
    let archive = dir.join("initramfs.cpio");
    initramfs::build(
        kernel,
        &GuestConfig {
            share,
            results: dir,
        },
        &executables,
        &archive,
    )
    .context("building the guest's initramfs")?;

    let serial_log = dir.join("serial.log");
    let monitor = dir.join("monitor.sock");
    let deadline = BOOT_ALLOWANCE + jobs.iter().map(|j| j.timeout).sum::<Duration>();
    let started = Instant::now();
    let mut qemu = Command::new(host::find_tool("qemu-system-x86_64", "qemu-system-x86")?);
    // NETTO_VM_ACCEL: another accelerator for comparisons, such as
    // single-threaded TCG (see the journal entry on `bpf_stats_held`).
    let accel = std::env::var("NETTO_VM_ACCEL").unwrap_or_else(|_| machine.accel.to_owned());
    qemu.args(["-accel", &accel, "-cpu", "max", "-m", MEMORY])
        .args(["-smp", &machine.vcpus.to_string()])
        .args(["-nographic", "-no-reboot"])
        .arg("-monitor")
        .arg(format!("unix:{},server,nowait", monitor.display()))
        .arg("-kernel")
        .arg(&kernel.vmlinuz)
        .arg("-initrd")
        .arg(&archive)
        // oops=panic: an oops that kills only the task it hit (the
        // emulated guests' int3 oopses while the kernel patches its text,
        // see docs/src/reliability.md) leaves the job running it to fail on a lost child,
        // and the kernel in a state no later job should trust. As a panic
        // it ends the boot, and the jobs left get a fresh one.
        .args(["-append", "console=ttyS0 oops=panic panic=-1 quiet"])
        .arg("-virtfs")
        .arg(format!(
            "local,path={},mount_tag=share,security_model=none",
            share.display()
        ))
        .stdin(Stdio::null())
        .stdout(fs::File::create(&serial_log)?)
        .stderr(Stdio::inherit());
    // SAFETY: prctl is async-signal-safe; it only sets a process attribute.
    // It takes qemu down with the test when the test itself is killed
    // (a CI time-out, Ctrl-C), which the deadline below cannot handle.
    unsafe {
        qemu.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut qemu = qemu.spawn().context("starting qemu")?;
    let mut hung = None;
    let mut begun = HashMap::new();
    let timed_out = loop {
        if qemu.try_wait()?.is_some() {
            break false;
        }
        let hang = stuck_job(&jobs_dir, jobs, &mut begun, Instant::now())
            .map(|name| format!("job {name} could not be ended past its timeout"))
            .or_else(|| {
                heartbeat_stopped(&dir.join("heartbeat")).then(|| "heartbeat stopped".to_owned())
            })
            .or_else(|| {
                lockup_reported(&serial_log).then(|| "the kernel reported a soft lockup".to_owned())
            });
        if let Some(why) = hang {
            hung = Some(format!(
                "{why}; vCPUs at: {}",
                where_cpus_are(&monitor, &dir.join("kallsyms"))
            ));
            let _ = qemu.kill();
            let _ = qemu.wait();
            break false;
        }
        if started.elapsed() > deadline {
            let _ = qemu.kill();
            let _ = qemu.wait();
            break true;
        }
        thread::sleep(Duration::from_millis(200));
    };
    let _ = fs::remove_file(&archive);
    let _ = fs::remove_file(&monitor);
    Ok(Boot {
        results: jobs
            .iter()
            .map(|job| read_result(&jobs_dir.join(&job.name)))
            .collect(),
        serial_log,
        timed_out,
        hung,
        wall: started.elapsed(),
    })
}

/// The job that began (its `started` mark) more than its timeout and
/// [`HANG_AFTER`] ago and has no `status`: the guest's own timeout could
/// not end it, so part of the guest is stuck while the heartbeat may go on.
/// When a job began is when the host first saw its mark (`begun`), by the
/// host's clock: the guest's clock drifts under TCG.
fn stuck_job<'j>(
    jobs_dir: &Path,
    jobs: &'j [Job],
    begun: &mut HashMap<&'j str, Instant>,
    now: Instant,
) -> Option<&'j str> {
    jobs.iter()
        .find(|job| {
            let dir = jobs_dir.join(&job.name);
            if dir.join("status").exists() || !dir.join("started").exists() {
                return false;
            }
            let at = *begun.entry(job.name.as_str()).or_insert(now);
            now.saturating_duration_since(at) > job.timeout + HANG_AFTER
        })
        .map(|job| job.name.as_str())
}

/// Whether the guest's kernel reported a soft lockup: a CPU that has not
/// scheduled for twice its watchdog threshold. No emulated guest that did
/// recovered. In those whose vCPUs were read, one waited in
/// `smp_call_function_many_cond` (the text patcher's sync) while the other
/// kept taking `int3`, or both sat at a softirq tracepoint's site. A job
/// timed across that means nothing, and the first report comes well
/// before the heartbeat's [`HANG_AFTER`].
fn lockup_reported(serial_log: &Path) -> bool {
    fs::read(serial_log).is_ok_and(|log| log.windows(LOCKUP.len()).any(|w| w == LOCKUP.as_bytes()))
}

/// The soft-lockup detector's report, as the kernel prints it.
const LOCKUP: &str = "BUG: soft lockup";

/// Whether the guest's heartbeat, once started, has not beaten for
/// [`HANG_AFTER`].
fn heartbeat_stopped(heartbeat: &Path) -> bool {
    fs::metadata(heartbeat)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age > HANG_AFTER)
}

/// Each vCPU's program counter, three times a second apart, named by the
/// guest's kallsyms (function and offset; no addresses), on one line for
/// the matrix's list of stops. `info cpus` no longer has the program
/// counter (qemu 7.2); `info registers -a` does.
fn where_cpus_are(monitor: &Path, kallsyms: &Path) -> String {
    let symbols = Symbols::read(kallsyms);
    let mut lines = Vec::new();
    for _ in 0..3 {
        let Some(registers) = ask_monitor(monitor, "info registers -a") else {
            return "the qemu monitor did not answer".to_owned();
        };
        for cpu in vcpus(&registers) {
            lines.push(format!(
                "CPU #{}: {}{}",
                cpu.index,
                symbols.name(cpu.pc),
                if cpu.halted { " (halted)" } else { "" }
            ));
        }
        thread::sleep(Duration::from_secs(1));
    }
    if lines.is_empty() {
        return "the qemu monitor named no vCPU".to_owned();
    }
    lines.join(", ")
}

/// Where one vCPU was, from `info registers -a`.
#[derive(Debug, PartialEq)]
struct Vcpu {
    index: u32,
    pc: u64,
    halted: bool,
}

/// The vCPUs of an `info registers -a` answer: a `CPU#N` line, then
/// register lines, `RIP=` and `HLT=` among them.
fn vcpus(registers: &str) -> Vec<Vcpu> {
    let mut cpus = Vec::new();
    let mut index = None;
    for line in registers.lines() {
        if let Some(n) = line.trim().strip_prefix("CPU#") {
            index = n.parse().ok();
        }
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name).map(str::to_owned))
        };
        if let (Some(i), Some(pc)) = (index, field("RIP=")) {
            if let Ok(pc) = u64::from_str_radix(&pc, 16) {
                cpus.push(Vcpu {
                    index: i,
                    pc,
                    halted: field("HLT=").as_deref() == Some("1"),
                });
                index = None;
            }
        }
    }
    cpus
}

/// One command to qemu's human monitor; its answer.
fn ask_monitor(monitor: &Path, command: &str) -> Option<String> {
    let mut stream = UnixStream::connect(monitor).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(format!("{command}\n").as_bytes()).ok()?;
    let mut answer = Vec::new();
    let mut buffer = [0; 4096];
    while let Ok(n) = stream.read(&mut buffer) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..n]);
    }
    Some(String::from_utf8_lossy(&answer).into_owned())
}

/// The guest kernel's text symbols, sorted by address.
struct Symbols(Vec<(u64, String)>);

impl Symbols {
    fn read(kallsyms: &Path) -> Symbols {
        let text = fs::read_to_string(kallsyms).unwrap_or_default();
        let mut symbols: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let address = u64::from_str_radix(fields.next()?, 16).ok()?;
                let kind = fields.next()?;
                let name = fields.next()?;
                matches!(kind, "T" | "t" | "W" | "w").then(|| (address, name.to_owned()))
            })
            .collect();
        symbols.sort_unstable();
        Symbols(symbols)
    }

    fn name(&self, pc: u64) -> String {
        let i = self.0.partition_point(|(address, _)| *address <= pc);
        match i.checked_sub(1).map(|i| &self.0[i]) {
            Some((address, name)) => format!("{name}+{:#x}", pc - address),
            None => "outside the kernel's text".to_owned(),
        }
    }
}

/// Why the guest stopped before its jobs were done, if its kernel did:
/// a panic, or a hang (its heartbeat stopped). Every job after the one it
/// was running then has no result through no fault of its own.
pub fn kernel_stopped(boot: &Boot) -> Option<String> {
    if let Some(why) = &boot.hung {
        return Some(format!("hung: {why}"));
    }
    fs::read_to_string(&boot.serial_log)
        .is_ok_and(|log| log.contains("Kernel panic"))
        .then(|| "panicked".to_owned())
}

/// The jobs of a boot that never finished.
pub fn unfinished(results: &[JobResult]) -> Vec<usize> {
    (0..results.len())
        .filter(|&i| results[i].status.is_none())
        .collect()
}

/// `run` (a shell script the init runs) and `timeout` (seconds) in `dir`.
fn write_job(dir: &Path, job: &Job) -> Result<()> {
    fs::create_dir_all(dir)?;
    let mut script = format!(
        "cd /tmp\necho {} > /proc/sys/kernel/bpf_stats_enabled\n",
        u8::from(job.bpf_stats_held)
    );
    for (key, value) in &job.env {
        script.push_str(&format!("export {key}={}\n", shell_quote(value)));
    }
    script.push_str("exec");
    let program = job.program.to_string_lossy();
    for word in std::iter::once(&*program).chain(job.args.iter().map(String::as_str)) {
        script.push(' ');
        script.push_str(&shell_quote(word));
    }
    script.push('\n');
    fs::write(dir.join("run"), script)?;
    fs::write(dir.join("timeout"), job.timeout.as_secs().to_string())?;
    Ok(())
}

fn read_result(dir: &Path) -> JobResult {
    let read = |name| fs::read_to_string(dir.join(name)).ok();
    JobResult {
        status: read("status").and_then(|s| s.trim().parse().ok()),
        output: read("output").unwrap_or_default(),
        seconds: read("seconds").and_then(|s| s.trim().parse().ok()),
    }
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_jobs_are_those_without_an_exit_status() {
        let result = |status| JobResult {
            status,
            output: String::new(),
            seconds: None,
        };
        let results = [result(Some(0)), result(Some(1)), result(None), result(None)];
        assert_eq!(unfinished(&results), [2, 3]);
        assert!(unfinished(&results[..2]).is_empty());
    }

    #[test]
    fn every_job_sets_the_statistics_sysctl_before_its_program() {
        let dir = tempfile::tempdir().unwrap();
        for held in [true, false] {
            let job = Job {
                name: "01-flows".to_owned(),
                program: PathBuf::from("/t/flows"),
                args: vec!["a b".to_owned()],
                env: Vec::new(),
                bpf_stats_held: held,
                timeout: Duration::from_secs(1),
            };
            write_job(dir.path(), &job).unwrap();
            let script = fs::read_to_string(dir.path().join("run")).unwrap();
            let sysctl = format!(
                "echo {} > /proc/sys/kernel/bpf_stats_enabled\n",
                u8::from(held)
            );
            let at = script.find(&sysctl).expect(&script);
            assert!(at < script.find("exec").unwrap(), "{script}");
        }
    }

    #[test]
    fn a_job_begun_long_past_its_timeout_without_a_status_is_stuck() {
        let dir = tempfile::tempdir().unwrap();
        let job = |name: &str, timeout_s| Job {
            name: name.to_owned(),
            program: PathBuf::new(),
            args: Vec::new(),
            env: Vec::new(),
            bpf_stats_held: false,
            timeout: Duration::from_secs(timeout_s),
        };
        let jobs = [
            job("01-done", 0),
            job("02-running", 0),
            job("03-waiting", 0),
        ];
        for name in ["01-done", "02-running", "03-waiting"] {
            fs::create_dir(dir.path().join(name)).unwrap();
        }
        let mark = |name: &str| fs::write(dir.path().join(name).join("started"), "").unwrap();
        mark("01-done");
        fs::write(dir.path().join("01-done/status"), "0").unwrap();
        let mut begun = HashMap::new();
        let first_seen = Instant::now();
        // Not begun yet: never stuck, however long the host waits.
        let later = first_seen + HANG_AFTER + Duration::from_secs(5);
        assert_eq!(stuck_job(dir.path(), &jobs, &mut begun, first_seen), None);
        mark("02-running");
        // Begun when first seen: within its timeout and the margin...
        assert_eq!(stuck_job(dir.path(), &jobs, &mut begun, first_seen), None);
        // ...and stuck once both have passed, by the host's clock.
        assert_eq!(
            stuck_job(dir.path(), &jobs, &mut begun, later),
            Some("02-running")
        );
        // A longer timeout gives it longer.
        let patient = [job("02-running", 60)];
        let mut begun = HashMap::new();
        assert_eq!(
            stuck_job(dir.path(), &patient, &mut begun, first_seen),
            None
        );
        assert_eq!(stuck_job(dir.path(), &patient, &mut begun, later), None);
    }

    #[test]
    fn a_soft_lockup_in_the_serial_log_is_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serial.log");
        assert!(!lockup_reported(&log), "no log yet");
        fs::write(&log, "netto-vm: job 05-sampling\n[  696.1] rcu: INFO: rcu_preempt self-detected stall on CPU\n").unwrap();
        assert!(
            !lockup_reported(&log),
            "an RCU stall warning alone is left to the heartbeat"
        );
        let mut text = fs::read_to_string(&log).unwrap();
        text.push_str(
            "[  720.8] watchdog: BUG: soft lockup - CPU#0 stuck for 45s! [tiny_buffer_dro:677]\n",
        );
        fs::write(&log, text).unwrap();
        assert!(lockup_reported(&log));
    }

    #[test]
    fn each_vcpu_is_read_from_the_monitors_registers() {
        let answer = "(qemu) info registers -a\n\nCPU#0\n\
            RAX=0000000000000000 RBX=0000000000000000\n\
            RIP=ffffffff86653907 RFL=00000046 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1\n\
            ES =0000 0000000000000000 00000000 00000000\n\n\
            CPU#1\n\
            RIP=ffffffff81000010 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=0\n";
        assert_eq!(
            vcpus(answer),
            [
                Vcpu {
                    index: 0,
                    pc: 0xffff_ffff_8665_3907,
                    halted: true
                },
                Vcpu {
                    index: 1,
                    pc: 0xffff_ffff_8100_0010,
                    halted: false
                },
            ]
        );
        assert!(vcpus("(qemu) info registers -a\nunknown command\n").is_empty());
    }

    #[test]
    fn a_program_counter_is_named_by_the_symbol_below_it() {
        let symbols = Symbols(vec![(0x1000, "a".to_owned()), (0x1100, "b".to_owned())]);
        assert_eq!(symbols.name(0x1000), "a+0x0");
        assert_eq!(symbols.name(0x10ff), "a+0xff");
        assert_eq!(symbols.name(0x1234), "b+0x134");
        assert_eq!(symbols.name(0x10), "outside the kernel's text");
    }
}
