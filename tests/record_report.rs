//! `netto record` and `netto report` as a user runs them: a recording made
//! under load renders again offline to the same counts, and in exact time
//! to every nanosecond of each context, as a well-formed flame graph, and
//! against itself as an all-zero diff; no file carries a kernel address;
//! bad input is one line and a non-zero exit. Recording needs root and
//! BPF; reporting needs neither.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{has_kernel_address, netto, recording_json, RECORDING};
use netto::frontends::flame::readback::parse_folded;
use netto::model::{Recording, SampleContext};

fn path_in(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn assert_one_line_failure(out: &Output, mentions: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded: {stderr}");
    assert_ne!(out.status.code(), Some(101), "panicked: {stderr}");
    // One error line; a usage error's tips (clap's possible values, the
    // usage) follow on indented lines.
    let errors: Vec<&str> = stderr.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("netto: error: "), "{stderr}");
    assert!(
        stderr.contains(mentions),
        "{stderr:?} does not mention {mentions:?}"
    );
}

#[test]
fn record_then_report_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let json = path_in(dir.path(), "run.json");
    let out = netto(&[
        "record",
        "--demo",
        "--demo-rate",
        "max",
        "--duration",
        "3",
        "-o",
        s(&json),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(
        !has_kernel_address(&text),
        "a kernel address in the recording"
    );
    let recording: Recording = serde_json::from_str(&text).unwrap();
    assert!(recording.snapshots.len() >= 3);
    assert!(recording.stacks().iter().map(|s| s.count).sum::<u64>() > 100);
    assert!(recording.snapshots.iter().any(|s| !s.breakdown.is_empty()));

    // Folded stacks in samples parse back to the recording's counts.
    let folded = path_in(dir.path(), "run.folded");
    let out = netto(&["report", s(&json), "--weight", "samples", "-o", s(&folded)]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(!has_kernel_address(&text));
    let parsed = parse_folded(text.as_bytes()).unwrap();
    let mut expected: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for stack in &recording.stacks() {
        let mut frames = vec![stack.context.name().to_owned()];
        frames.extend(stack.frames.iter().cloned());
        *expected.entry(frames).or_default() += stack.count;
    }
    let got: BTreeMap<Vec<String>, u64> = parsed.into_iter().map(|f| (f.frames, f.count)).collect();
    assert_eq!(got, expected);

    // In exact time (the default) each context adds up to its event's
    // exact time over the whole recording, to the nanosecond.
    let timed = path_in(dir.path(), "time.folded");
    assert!(netto(&["report", s(&json), "-o", s(&timed)])
        .status
        .success());
    let parsed = parse_folded(std::fs::read(&timed).unwrap().as_slice()).unwrap();
    for context in SampleContext::ALL {
        let folded: u64 = parsed
            .iter()
            .filter(|f| f.frames[0] == context.name())
            .map(|f| f.count)
            .sum();
        let exact: u64 = recording
            .snapshots
            .iter()
            .map(|s| s.event(context.event()).total_ns)
            .sum();
        assert_eq!(folded, exact, "{}", context.name());
    }
    let net_rx: u64 = parsed
        .iter()
        .filter(|f| f.frames[0] == "net_rx" && f.frames[1] != "[not sampled]")
        .map(|f| f.count)
        .sum();
    assert!(net_rx > 0, "no sampled NET_RX time");

    // The flame graph is well-formed and shows the kernel's receive path.
    let svg = path_in(dir.path(), "run.svg");
    assert!(netto(&["report", s(&json), "-o", s(&svg)]).status.success());
    let text = std::fs::read_to_string(&svg).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(&text, options).expect("well-formed SVG");
    assert!(text.contains("net_rx_action"), "no net_rx_action frame");
    assert!(
        text.contains(&recording.header.kernel),
        "no kernel in the subtitle"
    );
    assert!(!has_kernel_address(&text));

    // A recording against itself differs nowhere.
    let diff = path_in(dir.path(), "diff.folded");
    let out = netto(&["report", "--diff", s(&json), s(&json), "-o", s(&diff)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in std::fs::read_to_string(&diff).unwrap().lines() {
        let mut counts = line.rsplit(' ');
        let after = counts.next().unwrap();
        let before = counts.next().unwrap();
        assert_eq!(before, after, "diff line {line}");
    }
    let diff_svg = path_in(dir.path(), "diff.svg");
    assert!(
        netto(&["report", "--diff", s(&json), s(&json), "-o", s(&diff_svg)])
            .status
            .success()
    );

    // An unwritable destination is one clear line.
    assert_one_line_failure(
        &netto(&["report", s(&json), "-o", "/nonexistent/dir/out.svg"]),
        "/nonexistent/dir",
    );

    // Existing output is kept unless --force.
    let before = std::fs::read(&svg).unwrap();
    assert_one_line_failure(&netto(&["report", s(&json), "-o", s(&svg)]), "--force");
    assert_eq!(std::fs::read(&svg).unwrap(), before);
    assert!(netto(&["report", s(&json), "-o", s(&svg), "--force"])
        .status
        .success());
}

#[test]
fn bad_input_is_one_line_and_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = path_in(dir.path(), "out.svg");
    let malformed = path_in(dir.path(), "bad.json");
    std::fs::write(&malformed, "{\"header\": 1}").unwrap();
    for (args, mentions) in [
        (
            vec![
                "record",
                "--duration",
                "1",
                "-o",
                s(&out),
                "--format",
                "png",
            ],
            "png",
        ),
        (
            vec![
                "record",
                "--duration",
                "1",
                "-o",
                s(&out),
                "--frequency",
                "0",
            ],
            "--frequency",
        ),
        (
            vec![
                "record",
                "--duration",
                "1",
                "-o",
                s(&out),
                "--frequency",
                "1000000",
            ],
            "--frequency",
        ),
        (
            vec!["record", "--duration", "-1", "-o", s(&out)],
            "--duration",
        ),
        (
            vec!["report", "/nonexistent/run.json", "-o", s(&out)],
            "cannot read",
        ),
        (
            vec!["report", s(&malformed), "-o", s(&out)],
            "not a netto recording",
        ),
        (
            vec![
                "report",
                "--diff",
                s(&malformed),
                s(&malformed),
                "-o",
                s(&out),
            ],
            "not a netto recording",
        ),
    ] {
        assert_one_line_failure(&netto(&args), mentions);
    }
    assert!(!out.exists(), "a failed run left a file behind");
}

/// The recorded demo as if recorded with `--by cgroup`: half of every
/// event's time for cgroup `/a`, sampled for it alone, the rest
/// unattributed. Returns the path and `/a`'s time.
fn attributed_demo(dir: &Path) -> (PathBuf, u64) {
    let mut recording = recording_json();
    let mut own = 0;
    for snapshot in recording["snapshots"].as_array_mut().unwrap() {
        let (mut mine, mut rest) = (serde_json::Map::new(), serde_json::Map::new());
        for (key, time) in snapshot["events"].as_object().unwrap() {
            let total = time["total_ns"].as_u64().unwrap();
            own += total / 2;
            mine.insert(key.clone(), (total / 2).into());
            rest.insert(key.clone(), (total - total / 2).into());
        }
        snapshot["attribution"] = serde_json::json!({
            "by": "cgroup",
            "on": true,
            "groups": [{"name": "/a", "label": "a", "events": mine}],
            "unattributed": rest,
        });
        for stack in snapshot["stacks"].as_array_mut().unwrap() {
            stack["group"] = "/a".into();
        }
    }
    let path = path_in(dir, "attributed.json");
    std::fs::write(&path, recording.to_string()).unwrap();
    (path, own)
}

#[test]
fn a_groups_graph_of_a_recording_needs_no_root() {
    let dir = tempfile::tempdir().unwrap();
    let (json, own) = attributed_demo(dir.path());
    let folded = path_in(dir.path(), "a.folded");
    let out = netto(&["report", s(&json), "--cgroup", "/a", "-o", s(&folded)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed = parse_folded(std::fs::read(&folded).unwrap().as_slice()).unwrap();
    assert_eq!(parsed.iter().map(|f| f.count).sum::<u64>(), own);
    let svg = path_in(dir.path(), "a.svg");
    assert!(netto(&["report", s(&json), "--group", "/a", "-o", s(&svg)])
        .status
        .success());
    assert!(std::fs::read_to_string(&svg).unwrap().contains(" for /a"));
}

#[test]
fn bad_group_flags_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (json, _) = attributed_demo(dir.path());
    let out = path_in(dir.path(), "out.svg");
    let json_out = path_in(dir.path(), "out.json");
    for (args, mentions, code) in [
        (
            vec!["report", RECORDING, "--cgroup", "/a", "-o", s(&out)],
            "recorded without --by",
            2,
        ),
        (
            vec!["report", RECORDING, "--group-frames", "-o", s(&out)],
            "recorded without --by",
            2,
        ),
        (
            vec!["report", s(&json), "--cgroup", "/nope", "-o", s(&out)],
            "no group \"/nope\" (by cgroup); groups: /a",
            2,
        ),
        (
            vec![
                "report",
                "--diff",
                s(&json),
                RECORDING,
                "--group",
                "/a",
                "-o",
                s(&out),
            ],
            "demo.json: recorded without --by",
            2,
        ),
        (
            vec![
                "report",
                s(&json),
                "--group",
                "/a",
                "--group-frames",
                "-o",
                s(&out),
            ],
            "--group-frames",
            2,
        ),
        (
            vec!["report", s(&json), "--group", "/a", "-o", s(&json_out)],
            "written whole",
            1,
        ),
        (
            vec!["report", s(&json), "--group", "-o", s(&out)],
            "--group",
            2,
        ),
    ] {
        let done = netto(&args);
        assert_one_line_failure(&done, mentions);
        assert_eq!(done.status.code(), Some(code), "{args:?}");
    }
    assert!(
        !out.exists() && !json_out.exists(),
        "a failed run left a file behind"
    );
}

#[test]
fn kernel_addresses_are_found_however_they_are_written() {
    for leak in [
        "0xffffffff81000000",
        "0XFFFFFFFF81000000",
        "at ffffffff81000000+0x10",
        "ip=ffff888012345678",
        "\"frames\":[\"ffffffff8100\"]",
        "cut short: ffffffff8100",
        "glued: 1ffffffff81000000",
        "sym_ffffffff81000000",
    ] {
        assert!(has_kernel_address(leak), "{leak}");
    }
    for clean in [
        "",
        "tcp_sendmsg+0x2b",
        "0xffffffff",
        "ffffffff810",
        "ffff ffff 8100 0000",
        "1844674407370955161",
        "rgb(255,255,255) #ffffff",
        "sock_send 0.42",
    ] {
        assert!(!has_kernel_address(clean), "{clean}");
    }
}
