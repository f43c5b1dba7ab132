//! `netto serve` as a client sees it: start it on a free loopback port,
//! make requests, read its event stream.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{forward_lines, Guarded, NETTO};

pub struct Serve {
    child: Guarded,
    pub base: String,
    stderr: mpsc::Receiver<String>,
    agent: ureq::Agent,
}

/// A complete response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub headers: ureq::http::HeaderMap,
    pub body: String,
    pub bytes: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

impl Serve {
    /// `netto serve ARGS --listen 127.0.0.1:0`, once it says where it
    /// listens.
    pub fn start(args: &[&str]) -> Serve {
        let mut command = Command::new(NETTO);
        command.arg("serve").args(args);
        Serve::spawn(command)
    }

    /// `command` (a `netto serve` however started) with `--listen
    /// 127.0.0.1:0` added, once it says where it listens.
    pub fn spawn(mut command: Command) -> Serve {
        let mut child = command
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning netto serve");
        let stderr = forward_lines(child.stderr.take().unwrap());
        let child = Guarded(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        let base = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match stderr.recv_timeout(left) {
                Ok(line) => match line.strip_prefix("netto: serving on ") {
                    Some(rest) => break rest.split_whitespace().next().unwrap().to_owned(),
                    None => seen.push(line),
                },
                Err(_) => panic!("netto serve never said where it listens; got {seen:?}"),
            }
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        Serve {
            child,
            base: base.trim_end_matches('/').to_owned(),
            stderr,
            agent,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// The HTTP server process (`netto serve-http`), netto's child.
    pub fn server_pid(&self) -> u32 {
        children(self.pid())
            .into_iter()
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == b"serve-http"))
            })
            .expect("netto serve has no HTTP server process")
    }

    /// Sends `signal` to netto, then waits for it to exit.
    pub fn signal(self, signal: i32) -> (std::process::ExitStatus, Vec<String>) {
        let signal = nix::sys::signal::Signal::try_from(signal).expect("a signal");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid() as i32), signal)
            .expect("signalling netto");
        self.wait_exit()
    }

    /// Waits (at most 20 s) for netto to exit; returns its status and
    /// what it printed on stderr.
    pub fn wait_exit(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let status = super::exit_within(
            &mut self.child.0,
            Duration::from_secs(20),
            "netto did not exit",
        );
        let mut lines = Vec::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(1)) {
            lines.push(line);
        }
        (status, lines)
    }

    pub fn get(&self, path: &str) -> Reply {
        let response = self
            .agent
            .get(format!("{}{path}", self.base))
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        reply(response)
    }

    /// Status of a request with another method and an empty body.
    pub fn status_of(&self, method: &str, path: &str) -> u16 {
        let url = format!("{}{path}", self.base);
        let response = match method {
            "POST" => self.agent.post(url).send_empty(),
            "PUT" => self.agent.put(url).send_empty(),
            "PATCH" => self.agent.patch(url).send_empty(),
            "DELETE" => self.agent.delete(url).call(),
            other => panic!("no {other} here"),
        };
        response
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
            .status()
            .as_u16()
    }

    /// Waits until a replay has played out.
    pub fn wait_ended(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.get("/api/v1/source").json()["ended"]
            .as_bool()
            .unwrap()
        {
            assert!(Instant::now() < deadline, "the replay never ended");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens the event stream at `path` (e.g. `/api/v1/stream?since=0`).
    pub fn stream(&self, path: &str) -> Events {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_per_read(Some(Duration::from_secs(15)))
            .build()
            .into();
        let response = agent
            .get(format!("{}{path}", self.base))
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Events {
            reader: BufReader::new(response.into_body().into_reader()),
        }
    }

    /// SIGINT; returns the exit status and what it printed on stderr.
    pub fn interrupt(self) -> (std::process::ExitStatus, Vec<String>) {
        self.signal(libc::SIGINT)
    }
}

fn reply(mut response: ureq::http::Response<ureq::Body>) -> Reply {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .map_or("", |v| v.to_str().unwrap())
        .to_owned();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()
        .unwrap();
    Reply {
        status,
        content_type,
        headers,
        // Empty for a binary body (a pprof profile): read `bytes` there.
        body: String::from_utf8(bytes.clone()).unwrap_or_default(),
        bytes,
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: String,
    pub data: String,
}

pub struct Events {
    reader: BufReader<ureq::BodyReader<'static>>,
}

impl Events {
    /// The next event; `Ok(None)` when the server ended the stream
    /// cleanly, `Err` when the connection broke or timed out.
    pub fn next_event(&mut self) -> std::io::Result<Option<Event>> {
        let (mut kind, mut data) = (String::new(), String::new());
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if !data.is_empty() || !kind.is_empty() {
                    return Ok(Some(Event { kind, data }));
                }
            } else if let Some(value) = line.strip_prefix("event: ") {
                kind = value.to_owned();
            } else if let Some(value) = line.strip_prefix("data: ") {
                data.push_str(value);
            }
        }
    }
}

/// The children of process `pid`, started by any of its threads.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The `Name:\tvalue` lines of /proc/PID/status.
pub fn status(pid: u32) -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// Where each open file of process `pid` points (`socket:[...]`,
/// `anon_inode:bpf-map`, a path...).
pub fn open_files(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|target| target.display().to_string())
        .collect()
}

/// Resident memory of a process, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// A recording of `count` copies of `snapshot`, `interval_s` apart from
/// unix time 1000 on, in a temporary directory (removed when dropped).
pub fn repeated(
    snapshot: &netto::model::Snapshot,
    count: usize,
    interval_s: f64,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut recording = super::recording();
    recording.snapshots = (0..count)
        .map(|i| netto::model::Snapshot {
            ts: 1000.0 + i as f64 * interval_s,
            interval_s,
            ..snapshot.clone()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.json");
    std::fs::write(&path, serde_json::to_vec(&recording).unwrap()).unwrap();
    (dir, path)
}

/// `netto serve` replaying the recording at `path` at once, keeping an
/// hour of it, with room for taking it in; returns once it has all.
pub fn replay_whole(path: &std::path::Path) -> Serve {
    let serve = Serve::start(&[
        "--replay",
        path.to_str().unwrap(),
        "--speed",
        "inf",
        "--history",
        "3600",
        // Taking in thousands of snapshots at once is serving's CPU too.
        "--serve-budget",
        "100",
    ]);
    serve.wait_ended();
    serve
}
