//! Signals as a terminal sends them. Ctrl-C reaches the whole foreground
//! process group, netto and its demo traffic child alike: netto must still
//! end cleanly and leave no namespace or veth behind, and a second Ctrl-C
//! must end it at once, with the namespace still removed. The interval in
//! progress at the Ctrl-C is printed, not lost. Root (the demo load builds
//! a namespace).

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::{Duration, Instant};

use common::{exit_within, forward_lines, topology, Guarded, NETTO};

/// `netto stat --demo` as a shell runs a foreground job: in a process
/// group of its own, which the demo child joins.
struct Job {
    netto: Guarded,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// The demo's namespace and host-side veth, from netto's banner.
    namespace: String,
    veth: String,
}

impl Job {
    fn start(extra: &[&str]) -> Job {
        let mut child = Command::new(NETTO)
            .args(["stat", "--demo"])
            .args(extra)
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = forward_lines(child.stdout.take().unwrap());
        let stderr = forward_lines(child.stderr.take().unwrap());
        let netto = Guarded(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut banner = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = stderr
                .recv_timeout(left)
                .expect("netto never said it measures");
            if line.contains("demo traffic: TCP") {
                banner = Some(line);
            } else if line.starts_with("netto: measuring") {
                break;
            }
        }
        let banner = banner.expect("no demo banner");
        let word_after = |marker: &str| {
            let rest = &banner[banner.find(marker).unwrap() + marker.len()..];
            rest.split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches(',')
                .to_owned()
        };
        Job {
            namespace: word_after("into namespace "),
            veth: word_after("via veth "),
            stdout,
            stderr,
            netto,
        }
    }

    fn pid(&self) -> libc::pid_t {
        self.netto.0.id() as libc::pid_t
    }

    /// What a terminal does on Ctrl-C: SIGINT to every process of the group.
    fn interrupt_group(&self) {
        // SAFETY: kill(2) with a negative pid signals that process group.
        assert_eq!(unsafe { libc::kill(-self.pid(), libc::SIGINT) }, 0);
    }

    /// The demo traffic child (`netto demo-traffic`), from /proc.
    fn demo_child(&self) -> libc::pid_t {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid())).unwrap();
        let children: Vec<libc::pid_t> = tasks
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("children")).ok())
            .flat_map(|list| {
                list.split_whitespace()
                    .filter_map(|pid| pid.parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(children.len(), 1, "children of netto: {children:?}");
        children[0]
    }

    fn wait(&mut self, timeout: Duration) -> ExitStatus {
        exit_within(&mut self.netto.0, timeout, "netto still running")
    }

    fn stderr_lines(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }

    fn remains(&self) -> Vec<String> {
        topology::still_there(&self.namespace, &self.veth)
    }
}

fn signal(pid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) only sends a signal.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

#[test]
fn ctrl_c_to_the_process_group_removes_the_demo_namespace() {
    let mut job = Job::start(&[]);
    assert_eq!(job.remains(), [job.namespace.clone(), job.veth.clone()]);
    job.interrupt_group();
    let status = job.wait(Duration::from_secs(10));
    assert!(status.success(), "{status}: {:?}", job.stderr_lines());
    // netto waits for its child's cleanup: nothing is left the moment it
    // has exited.
    assert_eq!(job.remains(), Vec::<String>::new());
}

/// Ctrl-C in the middle of an interval prints that interval, measured up
/// to the stop: nothing netto counted is lost with it.
#[test]
fn ctrl_c_prints_the_interval_in_progress() {
    let mut job = Job::start(&["--json", "--interval", "60"]);
    let measuring = Instant::now();
    thread::sleep(Duration::from_secs(2));
    job.interrupt_group();
    let status = job.wait(Duration::from_secs(10));
    let ran = measuring.elapsed().as_secs_f64();
    assert!(status.success(), "{status}: {:?}", job.stderr_lines());
    // netto has exited: its output ends once the pipe is read.
    let lines: Vec<serde_json::Value> = job
        .stdout
        .iter()
        .map(|line| serde_json::from_str(&line).expect("a JSON snapshot per line"))
        .collect();
    assert_eq!(lines.len(), 1, "one interval, cut short by the stop");
    let interval = lines[0]["interval_s"].as_f64().unwrap();
    // From about the "measuring" line to the stop, not the 60 s asked.
    assert!(
        (1.5..=ran + 1.0).contains(&interval),
        "the interval ran {interval} s; netto measured for {ran:.2} s"
    );
    // The demo's traffic crossed the stack in it.
    let net_rx = &lines[0]["events"]["net_rx_softirq"];
    assert!(net_rx["count"].as_u64().unwrap() > 0, "{net_rx}");
    assert_eq!(job.remains(), Vec::<String>::new());
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_the_namespace_still_goes() {
    let mut job = Job::start(&[]);
    let demo = job.demo_child();
    // A clean-up that does not finish: the demo child is stopped, so
    // netto, told to stop, waits for it.
    signal(demo, libc::SIGSTOP);
    let _resume = ResumeOnDrop(demo);
    job.interrupt_group();
    thread::sleep(Duration::from_millis(500));
    if let Some(status) = job.netto.0.try_wait().unwrap() {
        panic!(
            "netto ended ({status}) without waiting for the demo traffic: {:?}",
            job.stderr_lines()
        );
    }
    let second = Instant::now();
    job.interrupt_group();
    let status = job.wait(Duration::from_secs(5));
    let took = second.elapsed();
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "{status}");
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    let lines = job.stderr_lines();
    assert_eq!(
        lines.last().map(String::as_str),
        Some("netto: interrupted again: exiting now"),
        "{lines:?}"
    );
    // The child, running again, finds its stdin closed and cleans up.
    signal(demo, libc::SIGCONT);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !job.remains().is_empty() {
        assert!(Instant::now() < deadline, "left {:?}", job.remains());
        thread::sleep(Duration::from_millis(50));
    }
}

/// Resumes a stopped process, so a failed assertion leaves none stopped.
struct ResumeOnDrop(libc::pid_t);

impl Drop for ResumeOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill(2) only sends a signal; the pid may be gone by now.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

/// What `systemctl stop` does to the shipped unit (KillMode=control-group):
/// SIGTERM to netto and to its HTTP server process at once; and what a
/// terminal does to a job, the signal to the whole process group. Each of
/// SIGTERM, SIGINT and SIGHUP is a stop asked for: exit 0, every BPF
/// program gone.
#[test]
fn a_stop_signal_to_every_process_of_a_live_serve_exits_0_and_removes_its_programs() {
    let before = common::netto_programs_loaded();
    for stop in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let mut command = Command::new(NETTO);
        command
            .args(["serve", "--interval", "0.5"])
            .process_group(0);
        let serve = common::serve::Serve::spawn(command);
        let mut events = serve.stream("/api/v1/stream");
        events.next_event().unwrap().expect("a first snapshot");
        assert!(common::netto_programs_loaded() > before);
        // A large host's file limit: the soft one raised to the hard one.
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", serve.pid())).unwrap();
        let files: Vec<&str> = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(files[3], files[4], "{limits}");
        let server = serve.server_pid() as libc::pid_t;
        signal(-(serve.pid() as libc::pid_t), stop);
        signal(server, stop);
        let (status, lines) = serve.wait_exit();
        assert!(status.success(), "signal {stop}: {status}: {lines:?}");
        // The one error form; a budget step's line may say "errors".
        assert!(
            !lines.iter().any(|l| l.contains("error:")),
            "signal {stop}: {lines:?}"
        );
        assert!(!std::path::Path::new(&format!("/proc/{server}")).exists());
        // The kernel frees a program once its last reference goes, after
        // an RCU grace period: moments after netto's exit.
        let deadline = Instant::now() + Duration::from_secs(5);
        while common::netto_programs_loaded() != before && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(common::netto_programs_loaded(), before, "signal {stop}");
    }
}
