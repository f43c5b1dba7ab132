//! Malformed recordings, as a user might hand them to `report` and `serve
//! --replay` (`top --replay` is in tests/top.rs): each is refused with one
//! line naming what is wrong and where, exit 2, and nothing written or
//! served. Each case is the recorded demo with one thing broken. No root.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::NETTO;
use serde_json::{json, Value};

const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/recordings/demo.json"
);

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
        "snapshots[2].interval_s: 10000000000000000000 is above 4500",
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
    let original: Value =
        serde_json::from_str(&std::fs::read_to_string(RECORDING).unwrap()).unwrap();
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
            "is not a netto recording: the file: EOF while parsing a value",
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
