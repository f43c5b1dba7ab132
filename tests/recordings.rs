//! Malformed recordings, as a user might hand them to `report` and `serve
//! --replay` (`top --replay` is in tests/top.rs): each is refused with one
//! line naming what is wrong and where, exit 2, and nothing written or
//! served. Each case is the recorded demo with one thing broken. And what
//! netto's live path can write (names a process gave itself, a stall, a
//! step of the clock, a sketch's estimate above its total) replays. No
//! root.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{recording_json, NETTO, RECORDING};
use netto::model::{
    Attribution, EventKey, FiveTuple, FlowEstimate, Group, GroupBy, PacketUnit, Recording,
    SketchCost, SketchSnapshot, XdpMode,
};
use serde_json::{json, Value};

/// (what is broken, the change, what the one line must say).
type Case = (&'static str, fn(&mut Value), &'static str);

const CASES: &[Case] = &[
    (
        "an event key missing (top panicked, serve served it)",
        |r| {
            r["snapshots"][3]["events"]
                .as_object_mut()
                .unwrap()
                .remove("net_timers");
        },
        "snapshots[3].events: lacks net_timers",
    ),
    (
        "a softirq vector missing",
        |r| {
            r["snapshots"][0]["softirq"]
                .as_object_mut()
                .unwrap()
                .remove("RCU");
        },
        "snapshots[0].softirq: lacks RCU",
    ),
    (
        "an interval of 1e19 s (serve panicked)",
        |r| r["snapshots"][2]["interval_s"] = json!(1e19),
        "snapshots[2].interval_s: 10000000000000000000 is above 3155760000",
    ),
    (
        "a negative interval",
        |r| r["snapshots"][2]["interval_s"] = json!(-1.0),
        "snapshots[2].interval_s: -1 is not a finite number >= 0",
    ),
    (
        "10^12 CPUs (top hung building its grid)",
        |r| r["snapshots"][1]["cpus"] = json!(1_000_000_000_000u64),
        "snapshots[1].cpus: 1000000000000 is outside 1-8192",
    ),
    (
        "cpus as a float",
        |r| r["snapshots"][1]["cpus"] = json!(1e12),
        "snapshots[1].cpus: invalid type: floating point",
    ),
    (
        "a per-CPU array shorter than cpus",
        |r| {
            r["snapshots"][1]["events"]["sock_send"]["per_cpu_ns"]
                .as_array_mut()
                .unwrap()
                .pop();
        },
        "snapshots[1].events.sock_send.per_cpu_ns: has 1 values for 2 CPUs",
    ),
    (
        "a total that is not the sum of its CPUs",
        |r| r["snapshots"][1]["hardirq"]["total_ns"] = json!(5),
        "snapshots[1].hardirq.total_ns: 5 is not the sum of per_cpu_ns",
    ),
    (
        "more time on one CPU than the interval holds",
        |r| r["snapshots"][0]["events"]["net_rx_softirq"]["per_cpu_ns"][0] = json!(10_000_000_000u64),
        "snapshots[0].events.net_rx_softirq.per_cpu_ns[0]: 10000000000 ns is more than one CPU can spend",
    ),
    (
        "a count beyond u64",
        |r| r["snapshots"][0]["events"]["sock_recv"]["count"] = json!(1e20),
        // The map's keys are enums, whose names the path cannot hold.
        "snapshots[0].events.?.count: invalid type: floating point",
    ),
    (
        "a negative count",
        |r| r["snapshots"][0]["events"]["sock_recv"]["count"] = json!(-1),
        "snapshots[0].events.?.count: invalid value: integer `-1`",
    ),
    (
        "an exact tier's event marked as an estimate",
        |r| r["snapshots"][2]["events"]["sock_send"]["estimated"] = json!(true),
        "snapshots[2].events.sock_send.estimated: is true but the exact tier measures sock_send",
    ),
    (
        "a sampled tier's events not marked as estimates",
        |r| r["snapshots"][2]["tier"] = json!("sampled"),
        "snapshots[2].events.net_rx_softirq.estimated: is false but the sampled tier estimates",
    ),
    (
        "an estimate without its error",
        |r| {
            r["snapshots"][2]["tier"] = json!("softirq");
            for key in ["sock_send", "sock_recv"] {
                r["snapshots"][2]["events"][key]["estimated"] = json!(true);
            }
            r["snapshots"][2]["events"]["sock_send"]["error_ns"] = json!(1000);
        },
        "snapshots[2].events.sock_recv.error_ns: missing for an estimate",
    ),
    (
        "a calibration on an exact value",
        |r| {
            r["snapshots"][2]["events"]["sock_send"]["calibration"] =
                json!({"agreement": 0.9, "samples": 500, "ts": 1.0});
        },
        "snapshots[2].events.sock_send.calibration: present on an exact value",
    ),
    (
        "a negative calibration",
        |r| {
            softirq_tier(r);
            r["snapshots"][2]["events"]["sock_recv"]["calibration"] =
                json!({"agreement": -2.0, "samples": 500, "ts": 1.0});
        },
        "snapshots[2].events.sock_recv.calibration.agreement: -2 is not a finite number >= 0",
    ),
    (
        "a calibration measured after its interval",
        |r| {
            softirq_tier(r);
            r["snapshots"][2]["events"]["sock_send"]["calibration"] =
                json!({"agreement": 0.8, "samples": 500, "ts": 1e12});
        },
        "snapshots[2].events.sock_send.calibration.ts: 1000000000000 is above",
    ),
    (
        "a calibration interval in a tier that estimates",
        |r| {
            softirq_tier(r);
            r["snapshots"][2]["calibrating"] = json!("sampled");
        },
        "snapshots[2].calibrating: is sampled in the softirq tier: a calibration interval is exact",
    ),
    (
        "a calibration interval for a run in the exact tier",
        |r| r["snapshots"][2]["calibrating"] = json!("exact"),
        "snapshots[2].calibrating: is exact in the exact tier",
    ),
    (
        "a tier netto does not have",
        |r| r["snapshots"][2]["tier"] = json!("fast"),
        "unknown variant `fast`",
    ),
    (
        "time running backwards",
        |r| r["snapshots"][4]["ts"] = json!(1.0),
        "snapshots[4].ts: 1 is before the previous snapshot's",
    ),
    (
        "a breakdown share above 1",
        |r| r["snapshots"][0]["breakdown"][0]["categories"][0]["share"] = json!(1.5),
        "snapshots[0].breakdown[0].categories[0].share: 1.5 is outside [0, 1]",
    ),
    (
        "a breakdown whose categories do not add up",
        |r| r["snapshots"][0]["breakdown"][1]["samples"] = json!(1),
        "snapshots[0].breakdown[1].samples: 1 is not the sum of its categories' samples",
    ),
    (
        "categories whose samples wrap around to the context's (top --replay wrapped)",
        |r| {
            let categories = &mut r["snapshots"][0]["breakdown"][0]["categories"];
            categories[0]["samples"] = json!(u64::MAX);
            categories[1]["samples"] = json!(2);
            let rest: u64 = categories.as_array().unwrap()[2..]
                .iter()
                .map(|c| c["samples"].as_u64().unwrap())
                .sum();
            r["snapshots"][0]["breakdown"][0]["samples"] = json!(1 + rest);
        },
        "snapshots[0].breakdown[0].categories: add up to more than 2^64",
    ),
    (
        "two groups of one name",
        |r| {
            let group = json!({"name": "/a.service", "label": "a.service",
                "events": {"net_rx_softirq": 0, "net_tx_softirq": 0, "sock_send": 0,
                    "sock_recv": 0, "net_timers": 0}});
            let totals: serde_json::Map<String, Value> = r["snapshots"][0]["events"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(key, time)| (key.clone(), time["total_ns"].clone()))
                .collect();
            r["snapshots"][0]["attribution"] = json!({"by": "cgroup", "on": true,
                "groups": [group.clone(), group], "unattributed": totals});
        },
        "snapshots[0].attribution.groups[1].name: \"/a.service\" appears twice",
    ),
    (
        "a negative agreement",
        |r| r["snapshots"][0]["breakdown"][0]["agreement"] = json!(-0.5),
        "snapshots[0].breakdown[0].agreement: -0.5 is not a finite number >= 0",
    ),
    (
        "more samples left out in the softirq loop than were read",
        |r| r["snapshots"][0]["sampling"]["softirq_loop"] = json!(1_000_000),
        "snapshots[0].sampling.softirq_loop: 1000000 is above",
    ),
    (
        "a kernel address as a frame",
        |r| r["snapshots"][0]["stacks"][0]["frames"][2] = json!("0xffffffff81a0b0c0"),
        "snapshots[0].stacks[0].frames[2]: is a kernel address",
    ),
    (
        "a frame that would break the folded format",
        |r| r["snapshots"][0]["stacks"][0]["frames"][2] = json!("tcp_v4_rcv;x 1"),
        "snapshots[0].stacks[0].frames[2]: \"tcp_v4_rcv;x 1\" holds a blank",
    ),
    (
        "an unknown context",
        |r| r["snapshots"][0]["stacks"][0]["context"] = json!("bogus"),
        "snapshots[0].stacks[0].context: unknown variant `bogus`",
    ),
    (
        "netto's own cost that is no percentage",
        |r| r["snapshots"][2]["overhead"]["cost_percent"] = json!(-3.5),
        "snapshots[2].overhead.cost_percent: -3.5 is not a percentage in [0, 270]",
    ),
    (
        "a snapshot from another backend than the header's",
        |r| r["snapshots"][5]["backend"] = json!("fentry"),
        "snapshots[5].backend: \"fentry\" differs from the header's \"tracepoint\"",
    ),
    (
        "a snapshot sampled through another transport than the header's",
        |r| r["snapshots"][1]["sampling"]["transport"] = json!("ringbuf"),
        "snapshots[1].sampling.transport: \"ringbuf\" differs from the header's \"mmap\"",
    ),
    (
        "a sampling frequency netto cannot have used",
        |r| r["header"]["frequency_hz"] = json!(1_000_000),
        "header.frequency_hz: 1000000 Hz is above netto's 10000 Hz",
    ),
    (
        "no header",
        |r| {
            r.as_object_mut().unwrap().remove("header");
        },
        "missing field `header`",
    ),
];

/// The third snapshot made a valid `softirq` tier interval: its socket
/// calls estimated, each with its error.
fn softirq_tier(r: &mut Value) {
    r["snapshots"][2]["tier"] = json!("softirq");
    for key in ["sock_send", "sock_recv"] {
        r["snapshots"][2]["events"][key]["estimated"] = json!(true);
        r["snapshots"][2]["events"][key]["error_ns"] = json!(1000);
    }
}

/// Each case written to `dir`: (its path, what is broken, what to say).
fn write_cases(dir: &Path) -> Vec<(String, &'static str, &'static str)> {
    let original = recording_json();
    CASES
        .iter()
        .enumerate()
        .map(|(i, (what, change, says))| {
            let mut broken = original.clone();
            change(&mut broken);
            let path = dir.join(format!("case{i}.json"));
            std::fs::write(&path, serde_json::to_vec(&broken).unwrap()).unwrap();
            (path.to_str().unwrap().to_owned(), *what, *says)
        })
        .collect()
}

fn assert_refused(out: &Output, path: &str, says: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [stderr.trim_end()],
        "{what}: not one line"
    );
    assert!(
        stderr.starts_with(&format!("netto: error: {path}")) && stderr.contains(says),
        "{what}: {stderr:?} does not say {says:?}"
    );
}

#[test]
fn the_fixture_itself_is_valid() {
    netto::recording::load(Path::new(RECORDING)).unwrap();
}

#[test]
fn report_refuses_each_malformed_recording_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (path, what, says) in write_cases(dir.path()) {
        let svg = dir.path().join("out.svg");
        let out = Command::new(NETTO)
            .args(["report", &path, "-o", svg.to_str().unwrap()])
            .output()
            .unwrap();
        assert_refused(&out, &path, says, what);
        assert!(!svg.exists(), "{what}: an SVG was written");
    }
    // Not JSON, or cut short: where the parser stopped.
    for (text, says) in [
        (
            "",
            "is not a netto recording: not JSON: EOF while parsing a value",
        ),
        (
            "{\"header\": {\"netto_version\": \"0",
            "is not a netto recording: header.netto_version: EOF while parsing a string",
        ),
        (
            "42",
            "is not a netto recording: the file: invalid type: integer `42`, expected struct Recording",
        ),
    ] {
        let path = dir.path().join("text.json");
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        let out = Command::new(NETTO)
            .args([
                "report",
                path,
                "-o",
                dir.path().join("x.svg").to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_refused(&out, path, says, text);
    }
    // A recording against a broken one: refused too.
    let (bad, _, says) = &write_cases(dir.path())[0];
    let out = Command::new(NETTO)
        .args(["report", "--diff", RECORDING, bad, "-o"])
        .arg(dir.path().join("diff.svg"))
        .output()
        .unwrap();
    assert_refused(&out, bad, says, "diff");
}

#[test]
fn serve_refuses_each_malformed_recording_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    for (path, what, says) in write_cases(dir.path()) {
        let out = Command::new(NETTO)
            .args(["serve", "--replay", &path, "--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert_refused(&out, &path, says, what);
    }
}

/// The fixture as netto's live path writes it after `edit`, written as
/// `netto record` writes JSON, then read back: `report` draws it (an SVG,
/// valid XML with no control character in it, whatever the names) and
/// writes it again as JSON, which loads.
fn netto_reads_what_it_wrote(what: &str, edit: impl FnOnce(&mut Recording)) {
    let dir = tempfile::tempdir().unwrap();
    let mut recording = netto::recording::load(Path::new(RECORDING))
        .unwrap()
        .into_inner();
    edit(&mut recording);
    let path = dir.path().join("written.json");
    let mut bytes = serde_json::to_vec(&recording).unwrap();
    bytes.push(b'\n');
    std::fs::write(&path, bytes).unwrap();
    let grouped = recording.snapshots.iter().all(|s| s.attribution.is_some());
    let svg = dir.path().join("out.svg");
    let mut report = Command::new(NETTO);
    report.arg("report").arg(&path).arg("-o").arg(&svg);
    if grouped {
        report.arg("--group-frames");
    }
    let out = report.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(&svg, options)
        .unwrap_or_else(|e| panic!("{what}: SVG not XML: {e}"));
    assert!(
        !svg.chars().any(|c| c.is_control() && !"\n\t\r".contains(c)),
        "{what}: a control character in the SVG"
    );
    let again = dir.path().join("again.json");
    let out = Command::new(NETTO)
        .arg("report")
        .arg(&path)
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert!(out.status.success(), "{what}: {out:?}");
    assert_eq!(
        netto::recording::load(&again).unwrap().into_inner(),
        recording,
        "{what}"
    );
}

/// Every snapshot attributed by `by` to `names` (name, label), the first
/// group taking all of each event's time.
fn attributed(recording: &mut Recording, by: GroupBy, names: &[(&str, &str)]) {
    for s in &mut recording.snapshots {
        let totals: std::collections::BTreeMap<EventKey, u64> =
            s.events.iter().map(|(&k, t)| (k, t.total_ns)).collect();
        let groups = names
            .iter()
            .enumerate()
            .map(|(i, (name, label))| Group {
                name: (*name).to_owned(),
                label: (*label).to_owned(),
                events: if i == 0 {
                    totals.clone()
                } else {
                    Attribution::zero_events()
                },
                traffic: None,
            })
            .collect();
        s.attribution = Some(Attribution {
            by,
            on: true,
            groups,
            unattributed: Attribution::zero_events(),
            unattributed_why: std::collections::BTreeMap::new(),
        });
    }
}

/// Processes name themselves (`prctl(PR_SET_NAME)`): an escape sequence,
/// blanks, nothing. A delegated subtree's cgroup can be named the same.
#[test]
fn names_a_process_or_a_cgroup_can_have_replay() {
    netto_reads_what_it_wrote("process names", |r| {
        attributed(
            r,
            GroupBy::Process,
            &[
                ("4242", "\u{1b}]0;owned\u{7}\u{1b}[2J"),
                ("4243", "   "),
                ("4244", ""),
            ],
        )
    });
    netto_reads_what_it_wrote("cgroup paths", |r| {
        attributed(
            r,
            GroupBy::Cgroup,
            &[
                (
                    "/user.slice/\u{1b}[31mred\u{1b}[0m",
                    "\u{1b}[31mred\u{1b}[0m",
                ),
                ("/user.slice/a\u{202e}b", "a\u{202e}b"),
            ],
        )
    });
}

/// netto stopped (Ctrl-Z) or its host paused for three days: the interval
/// in progress lasts until it runs again.
#[test]
fn an_interval_after_a_long_stall_replays() {
    netto_reads_what_it_wrote("a stall", |r| {
        let stall = 3.0 * 86400.0;
        r.snapshots[3].interval_s += stall;
        for s in &mut r.snapshots[3..] {
            s.ts += stall;
        }
        r.header.duration_s += stall;
    });
}

/// The wall clock stepped back an hour in the middle of a run: the times
/// netto gives its snapshots go on, and the recording replays.
#[test]
fn a_step_back_of_the_wall_clock_replays() {
    netto_reads_what_it_wrote("a clock step", |r| {
        let start = std::time::Instant::now();
        let mut previous = (start, r.snapshots[0].ts);
        let mut at = start;
        for (i, s) in r.snapshots.iter_mut().enumerate().skip(1) {
            at += std::time::Duration::from_secs_f64(s.interval_s);
            let wall = if i >= 3 { s.ts - 3600.0 } else { s.ts };
            s.ts = netto::collect::clock::interval_end(previous, at, wall);
            previous = (at, s.ts);
        }
    });
}

/// A flow's share as netto wrote it before it kept the shares within the
/// total: a Count-Sketch estimate above every byte seen, on light traffic.
#[test]
fn a_sketch_flow_estimated_above_the_total_replays() {
    netto_reads_what_it_wrote("a share above 1", |r| {
        for s in &mut r.snapshots {
            s.sketch = Some(SketchSnapshot {
                ts: s.ts,
                interval_s: s.interval_s,
                iface: "veth0".into(),
                mode: XdpMode::Generic,
                probability: 0.01,
                rows: 4,
                columns: 2048,
                packet_unit: PacketUnit::GroAggregate,
                packets: 3,
                bytes: 180,
                gaps_reused: 0,
                top: vec![FlowEstimate {
                    flow: FiveTuple {
                        src: "10.0.0.1".into(),
                        dst: "10.0.0.2".into(),
                        sport: 40000,
                        dport: 5201,
                        proto: "tcp".into(),
                    },
                    packets: 100,
                    bytes: 6000,
                    share: 6000.0 / 180.0,
                    flows: Vec::new(),
                }],
                other_protocols: Default::default(),
                cost: SketchCost::default(),
            });
        }
    });
}

/// What is not a recording file is refused in one line before it is read:
/// a device (`/dev/zero` grew until the OOM killer), a FIFO (without
/// waiting for a writer), a directory; and a file beyond
/// --max-recording-size, which every command that reads one takes.
#[test]
fn only_regular_files_within_the_size_limit_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let svg = dir.path().join("out.svg");
    let svg = svg.to_str().unwrap();
    let dir_path = dir.path().to_str().unwrap();
    for (path, says) in [
        (
            "/dev/zero",
            "/dev/zero is a character device, not a regular file",
        ),
        (fifo.to_str().unwrap(), "is a FIFO, not a regular file"),
        (dir_path, "is a directory, not a regular file"),
    ] {
        let started = std::time::Instant::now();
        let out = netto_with_deadline(&["report", path, "-o", svg]);
        assert_refused(&out, path, says, path);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
    let size = std::fs::metadata(RECORDING).unwrap().len();
    let below = (size - 1).to_string();
    let out = netto_with_deadline(&[
        "report",
        RECORDING,
        "-o",
        svg,
        "--max-recording-size",
        &below,
    ]);
    assert_refused(
        &out,
        RECORDING,
        &format!("is larger than --max-recording-size ({below} bytes)"),
        "report",
    );
    let out = netto_with_deadline(&[
        "serve",
        "--replay",
        RECORDING,
        "--max-recording-size",
        &below,
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_refused(
        &out,
        RECORDING,
        "is larger than --max-recording-size",
        "serve",
    );
    let out = netto_with_deadline(&[
        "report",
        RECORDING,
        "-o",
        svg,
        "--max-recording-size",
        &size.to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let out = netto_with_deadline(&["report", RECORDING, "-o", svg, "--max-recording-size", "0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// netto with `args`, killed if it has not ended within 20 s (a read that
/// blocks or never ends fails the test instead of hanging it).
fn netto_with_deadline(args: &[&str]) -> Output {
    let child = Command::new(NETTO)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, waited) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if waited
            .recv_timeout(std::time::Duration::from_secs(20))
            .is_err()
        {
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    watchdog.join().unwrap();
    assert!(
        out.status.code().is_some(),
        "netto {args:?} did not end within 20 s"
    );
    out
}
