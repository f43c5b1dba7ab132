//! `netto serve --replay`: every endpoint over HTTP, the metrics through
//! Prometheus' own checker, the event stream, and bad input. No root.

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use common::serve::{children, open_files, repeated, replay_whole, status, Serve};
use common::{has_kernel_address, netto, recording, NETTO, RECORDING};
use netto::frontends::flame::readback::parse_folded;
use netto::model::Snapshot;

const ENDPOINTS: [&str; 12] = [
    "/",
    "/app.js",
    "/style.css",
    "/api/v1/source",
    "/api/v1/snapshot",
    "/api/v1/history",
    "/api/v1/flame/folded",
    "/api/v1/flame/svg",
    "/api/v1/recording",
    "/api/v1/stream",
    "/metrics",
    "/healthz",
];

#[test]
fn every_endpoint_of_a_replayed_recording() {
    let recording = recording();
    // A debug build draws slowly: room enough for it (serving's bound is
    // tested in tests/serve_live.rs).
    let serve = Serve::start(&[
        "--replay",
        RECORDING,
        "--speed",
        "inf",
        "--serve-budget",
        "100",
    ]);
    serve.wait_ended();

    let page = serve.get("/");
    assert_eq!(
        (page.status, page.content_type.as_str()),
        (200, "text/html; charset=utf-8")
    );
    assert!(page.body.contains("<title>netto</title>"));
    assert!(page.body.contains(r#"<script src="/app.js""#));
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("default-src 'self'"), "{policy}");
    for (path, content_type, needle) in [
        (
            "/app.js",
            "text/javascript; charset=utf-8",
            "new EventSource",
        ),
        ("/style.css", "text/css; charset=utf-8", "#flame-box"),
    ] {
        let asset = serve.get(path);
        assert_eq!(
            (asset.status, asset.content_type.as_str()),
            (200, content_type)
        );
        assert!(asset.body.contains(needle), "{path}");
    }

    let source = serve.get("/api/v1/source");
    assert_eq!(
        (source.status, source.content_type.as_str()),
        (200, "application/json")
    );
    let source = source.json();
    assert_eq!(source["source"]["host"], recording.header.host);
    assert_eq!(source["source"]["kernel"], recording.header.kernel);
    assert_eq!(source["source"]["backend"], "tracepoint");
    assert_eq!(source["source"]["origin"]["replay"], RECORDING);
    assert_eq!(source["source"]["frequency_hz"], 1000);
    // Notes in words, and each one's kind and data beside them.
    let note = source["source"]["notes"][0].as_str().unwrap();
    assert!(note.starts_with("replaying "), "{note}");
    assert_eq!(source["source"]["note_details"][0]["kind"], "replaying");
    assert_eq!(source["source"]["note_details"][0]["snapshots"], 6);
    assert_eq!(source["snapshots"], 6);
    assert_eq!(source["ended"], true);
    assert_eq!(source["settings"]["history_s"], 300.0);

    let latest = serve.get("/api/v1/snapshot");
    assert_eq!(
        (latest.status, latest.content_type.as_str()),
        (200, "application/json")
    );
    let latest: Snapshot = serde_json::from_str(&latest.body).unwrap();
    assert_eq!(&latest, recording.snapshots.last().unwrap());

    let history = serve.get("/api/v1/history");
    assert_eq!(
        (history.status, history.content_type.as_str()),
        (200, "application/json")
    );
    let history = history.json();
    let history = history.as_array().unwrap();
    let recorded_ts: Vec<f64> = recording.snapshots.iter().map(|s| s.ts).collect();
    let served_ts: Vec<f64> = history.iter().map(|s| s["ts"].as_f64().unwrap()).collect();
    assert_eq!(served_ts, recorded_ts);
    assert!(history.iter().all(|s| s.get("stacks").is_none()));
    assert_eq!(
        history[0]["events"]["net_rx_softirq"]["total_ns"],
        recording.snapshots[0].events[&netto::model::EventKey::NetRxSoftirq].total_ns
    );
    // ?seconds=2: the newest snapshots that cover 2 s, and no more.
    let window = serve.get("/api/v1/history?seconds=2").json();
    let window = window.as_array().unwrap();
    let newest = &recording.snapshots[recording.snapshots.len() - window.len()..];
    let ts: Vec<f64> = window.iter().map(|s| s["ts"].as_f64().unwrap()).collect();
    assert_eq!(ts, newest.iter().map(|s| s.ts).collect::<Vec<_>>());
    let covered: f64 = newest.iter().map(|s| s.interval_s).sum();
    assert!(
        covered >= 2.0 && covered - newest[0].interval_s < 2.0,
        "{covered}"
    );

    // The folded stacks of the whole recording add up to its samples, and
    // in exact time (the default) to its network events' time.
    let folded = serve.get("/api/v1/flame/folded?seconds=300&weight=samples");
    assert_eq!(
        (folded.status, folded.content_type.as_str()),
        (200, "text/plain; charset=utf-8")
    );
    let parsed = parse_folded(folded.body.as_bytes()).unwrap();
    let served: u64 = parsed.iter().map(|s| s.count).sum();
    let recorded: u64 = recording.stacks().iter().map(|s| s.count).sum();
    assert_eq!(served, recorded);
    assert!(parsed.iter().any(|s| s.frames[0] == "net_rx"));
    let timed = serve.get("/api/v1/flame/folded?seconds=300");
    let served: u64 = parse_folded(timed.body.as_bytes())
        .unwrap()
        .iter()
        .map(|s| s.count)
        .sum();
    let exact: u64 = recording
        .snapshots
        .iter()
        .flat_map(|s| s.events.values())
        .map(|t| t.total_ns)
        .sum();
    assert_eq!(served, exact);

    let svg = serve.get("/api/v1/flame/svg?seconds=300");
    assert_eq!(
        (svg.status, svg.content_type.as_str()),
        (200, "image/svg+xml")
    );
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&svg.body, options).unwrap();
    let frames = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.children().any(|c| c.has_tag_name("rect")))
        .count();
    assert!(frames > 20, "{frames} frames");
    assert!(svg.body.contains("Kernel network stack CPU on vm"));
    // inferno's zoom and search script comes with the picture.
    assert!(svg.body.contains("function zoom("));

    let metrics = serve.get("/metrics");
    assert_eq!(
        (metrics.status, metrics.content_type.as_str()),
        (200, "text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(metrics
        .body
        .contains("# TYPE netto_cpu_seconds_total counter"));

    for path in ENDPOINTS.iter().filter(|p| **p != "/api/v1/stream") {
        assert!(
            !has_kernel_address(&serve.get(path).body),
            "{path} shows a kernel address"
        );
    }
}

#[test]
fn read_only_bad_queries_and_unknown_paths() {
    let serve = Serve::start(&[
        "--replay",
        RECORDING,
        "--speed",
        "inf",
        "--serve-budget",
        "100",
    ]);
    serve.wait_ended();
    for path in ENDPOINTS {
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            assert_eq!(serve.status_of(method, path), 405, "{method} {path}");
        }
    }
    for path in [
        "/api/v1/history?seconds=abc",
        "/api/v1/history?seconds=-1",
        "/api/v1/history?seconds=inf",
        "/api/v1/flame/svg?seconds=0",
        "/api/v1/flame/folded?seconds=nan",
        "/api/v1/recording?seconds=0",
        "/api/v1/recording?seconds=1e9",
        "/api/v1/stream?since=yesterday",
        // Flame graphs only of the offered windows, each drawn once per
        // snapshot, not of any number a client makes up.
        "/api/v1/flame/svg?seconds=30.0000001",
        "/api/v1/flame/svg?seconds=2",
        "/api/v1/flame/folded?seconds=3600",
        "/api/v1/flame/folded?weight=ns",
        "/api/v1/flame/svg?seconds=30&weight=",
        "/api/v1/flame/pprof?weight=both",
    ] {
        let reply = serve.get(path);
        assert_eq!(
            (reply.status, reply.content_type.as_str()),
            (400, "application/json"),
            "{path}"
        );
        assert!(reply.json()["error"].is_string(), "{path}");
    }
    assert_eq!(
        serve.get("/api/v1/flame/svg?seconds=2").json()["error"],
        "seconds must be one of 10, 30, 60, 300"
    );
    assert_eq!(
        serve.get("/api/v1/flame/folded?weight=ns").json()["error"],
        "weight must be one of time, samples"
    );
    for window in ["10", "30", "60", "300", "30.0"] {
        let path = format!("/api/v1/flame/folded?seconds={window}");
        assert_eq!(serve.get(&path).status, 200, "{path}");
    }
    let missing = serve.get("/api/v2/snapshot");
    assert_eq!(
        (missing.status, missing.content_type.as_str()),
        (404, "application/json")
    );
    assert!(missing.json()["error"]
        .as_str()
        .unwrap()
        .contains("/api/v2/snapshot"));
    let (status, lines) = serve.interrupt();
    assert!(status.success(), "{status} {lines:?}");
}

/// Counter samples of one exposition text: series -> value.
fn counters(text: &str) -> BTreeMap<String, f64> {
    let counter_families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let name = series.split('{').next().unwrap();
            counter_families.contains(&name)
        })
        .map(|(series, value)| (series.to_owned(), value.parse().unwrap()))
        .collect()
}

fn promtool_check(text: &str) {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus, see scripts/install-deps.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn metrics_pass_promtool_never_decrease_and_add_up() {
    let recording = recording();
    // 6 s recorded, played in real time while being scraped; a scrape can
    // take a second on a busy machine, so scraping goes on after the end
    // until there were five.
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "1"]);
    let mut previous: BTreeMap<String, f64> = BTreeMap::new();
    let mut scrapes = 0;
    let mut distinct = std::collections::HashSet::new();
    loop {
        let ended = serve.get("/api/v1/source").json()["ended"] == true;
        let reply = serve.get("/metrics");
        assert_eq!(reply.status, 200);
        promtool_check(&reply.body);
        let now = counters(&reply.body);
        for (series, before) in &previous {
            let after = now
                .get(series)
                .unwrap_or_else(|| panic!("{series} vanished"));
            assert!(after >= before, "{series} went from {before} to {after}");
        }
        distinct.insert(now.get("netto_intervals_total").copied().unwrap_or(0.0) as u64);
        previous = now;
        scrapes += 1;
        if ended && scrapes >= 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        distinct.len() >= 3,
        "scrapes saw only {distinct:?} intervals"
    );

    // Cumulative from start: every recorded nanosecond, per event and CPU.
    assert_eq!(previous["netto_intervals_total"], 6.0);
    for key in netto::model::EventKey::ALL {
        for cpu in 0..recording.snapshots[0].cpus {
            let ns: u64 = recording
                .snapshots
                .iter()
                .map(|s| s.events[&key].per_cpu_ns[cpu])
                .sum();
            let series = format!(
                "netto_cpu_seconds_total{{cpu=\"{cpu}\",event=\"{}\"}}",
                key.name()
            );
            let served = previous[&series];
            let expected = ns as f64 / 1e9;
            assert!(
                (served - expected).abs() <= expected * 1e-9 + 1e-9,
                "{series}: {served} vs {expected}"
            );
        }
    }
    let samples: u64 = recording
        .snapshots
        .iter()
        .flat_map(|s| &s.breakdown)
        .map(|b| b.samples)
        .sum();
    let served: f64 = previous
        .iter()
        .filter(|(k, _)| k.starts_with("netto_samples_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(served, samples as f64);
    let process_ns: u64 = recording
        .snapshots
        .iter()
        .map(|s| s.overhead.process_cpu_ns)
        .sum();
    assert!((previous["netto_process_cpu_seconds_total"] - process_ns as f64 / 1e9).abs() < 1e-9);
    // A recording made before losses were counted: every kind served, at 0.
    for kind in &netto::model::Losses::KINDS {
        let series = format!("netto_losses_total{{kind=\"{}\"}}", kind.name);
        assert_eq!(previous.get(&series), Some(&0.0), "{series}");
    }
}

#[test]
fn stream_delivers_every_snapshot_in_order_then_ends() {
    let recording = recording();
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "4"]);
    // From the first snapshot on (?since=0 also sends the ones already
    // played), while the replay goes on.
    let mut events = serve.stream("/api/v1/stream?since=0");
    let mut ts = Vec::new();
    loop {
        let event = events
            .next_event()
            .expect("the stream broke")
            .expect("the stream ended before the source did");
        if event.kind == "end" {
            break;
        }
        assert_eq!(event.kind, "snapshot");
        let snapshot: serde_json::Value = serde_json::from_str(&event.data).unwrap();
        assert!(snapshot.get("stacks").is_none());
        ts.push(snapshot["ts"].as_f64().unwrap());
    }
    let recorded: Vec<f64> = recording.snapshots.iter().map(|s| s.ts).collect();
    assert_eq!(ts, recorded);
    // After the end event, a clean end of the response.
    assert!(events.next_event().unwrap().is_none());

    // A client arriving later gets the latest snapshot and the end.
    let mut late = serve.stream("/api/v1/stream");
    let first = late.next_event().unwrap().unwrap();
    let snapshot: serde_json::Value = serde_json::from_str(&first.data).unwrap();
    assert_eq!(snapshot["ts"].as_f64().unwrap(), *recorded.last().unwrap());
    assert_eq!(late.next_event().unwrap().unwrap().kind, "end");
    assert!(late.next_event().unwrap().is_none());
}

/// netto's exit code and stderr for `args`.
fn exit_and_stderr(args: &[&str]) -> (i32, String) {
    let out = netto(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn remote_addresses_need_a_flag_and_get_a_warning() {
    let (code, stderr) =
        exit_and_stderr(&["serve", "--replay", RECORDING, "--listen", "0.0.0.0:0"]);
    assert_eq!(code, 1);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "netto: error: 0.0.0.0:0 is reachable from other hosts; pass --allow-remote"
        ),
        "{stderr}"
    );

    let mut child = common::Guarded(
        Command::new(NETTO)
            .args(["serve", "--replay", RECORDING, "--speed", "inf"])
            .args(["--listen", "0.0.0.0:0", "--allow-remote"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    common::wait_for_line(
        stderr,
        "netto: warning: serving on 0.0.0.0:",
        std::time::Duration::from_secs(10),
    );
}

#[test]
fn bad_input_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("x.json");
    std::fs::write(&not_json, "{\"header\": 1}").unwrap();
    let not_json = not_json.to_str().unwrap();
    // A port that is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    // A malformed recording is bad input (2), like a bad argument.
    for (args, expected, exit) in [
        (
            vec!["serve", "--replay", "/nonexistent/r.json"],
            "netto: error: cannot read /nonexistent/r.json",
            1,
        ),
        (
            vec!["serve", "--replay", not_json],
            "is not a netto recording: header: invalid type",
            2,
        ),
        (
            vec!["serve", "--replay", RECORDING, "--listen", &taken],
            "netto: error: cannot listen on 127.0.0.1:",
            1,
        ),
        (
            vec!["serve", "--replay", RECORDING, "--user", "no-such-user"],
            "netto: error: no user named no-such-user (--user)",
            1,
        ),
    ] {
        let (code, stderr) = exit_and_stderr(&args);
        assert_eq!(code, exit, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    for args in [
        &["serve", "--listen", "nowhere"][..],
        &["serve", "--replay", RECORDING, "--speed", "-1"],
        &["serve", "--replay", RECORDING, "--frequency", "99"],
        &["serve", "--replay", RECORDING, "--allow-host", "a/b"],
    ] {
        let (code, stderr) = exit_and_stderr(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        // The error on one line; clap's tips, if any, indented below it.
        let mut lines = stderr.lines();
        assert!(
            lines
                .next()
                .is_some_and(|l| l.starts_with("netto: error: "))
                && lines.all(|l| l.starts_with("  ")),
            "{args:?}: {stderr}"
        );
    }
}

/// Every metric the dashboard names is served, counters through `rate()`
/// or `increase()`.
/// The recording ends in the `softirq` tier with a calibrated estimate, so
/// that the estimates' series exist too.
#[test]
fn the_grafana_dashboard_queries_served_metrics_with_rate() {
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/dashboards/netto.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut tiered = recording();
    let last = tiered.snapshots.last_mut().unwrap();
    common::calibrated_in_softirq_tier(last, 1_000_000, 0.9, 300, 1.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiered.json");
    std::fs::write(&path, serde_json::to_vec(&tiered).unwrap()).unwrap();
    let serve = Serve::start(&["--replay", path.to_str().unwrap(), "--speed", "inf"]);
    serve.wait_ended();
    let metrics = serve.get("/metrics").body;
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert!(exprs.len() >= 8);
    for expr in exprs {
        let names = expr
            .match_indices("netto_")
            .map(|(i, _)| {
                let name: String = expr[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                name
            })
            .collect::<Vec<_>>();
        assert!(!names.is_empty(), "{expr}");
        for name in names {
            let typed = metrics
                .lines()
                .find_map(|l| l.strip_prefix(&format!("# TYPE {name} ")))
                .unwrap_or_else(|| panic!("{expr}: {name} is not served"));
            // Counters are only meaningful through rate() or increase().
            if typed == "counter" {
                assert!(
                    expr.contains(&format!("rate({name}"))
                        || expr.contains(&format!("increase({name}")),
                    "{expr}"
                );
            }
        }
    }
}

#[test]
fn a_stalled_client_is_cut_off_cleanly_while_others_get_everything() {
    use std::io::{Read, Write};
    const SNAPSHOTS: usize = 800;
    // Large snapshots (many timer callbacks, about 15 KB each) so that
    // the stalled client's queue overflows after the kernel's socket
    // buffers are full.
    let mut snapshot = recording().snapshots[0].clone();
    snapshot.stacks.clear();
    snapshot.net_timer_callbacks = (0..400).map(|i| (format!("callback_{i:04}"), i)).collect();
    let (_dir, path) = repeated(&snapshot, SNAPSHOTS, 1.0);

    let serve = Serve::start(&["--replay", path.to_str().unwrap(), "--speed", "100"]);
    let mut follower = serve.stream("/api/v1/stream?since=0");
    let mut stalled =
        std::net::TcpStream::connect(serve.base.trim_start_matches("http://")).unwrap();
    stalled
        .write_all(b"GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();

    let mut ts = Vec::new();
    while let Some(event) = follower.next_event().expect("the follower's stream broke") {
        if event.kind == "snapshot" {
            let snapshot: serde_json::Value = serde_json::from_str(&event.data).unwrap();
            ts.push(snapshot["ts"].as_f64().unwrap());
        }
    }
    let expected: Vec<f64> = (0..SNAPSHOTS).map(|i| 1000.0 + i as f64).collect();
    assert_eq!(ts, expected, "the follower missed snapshots");
    let metrics = serve.get("/metrics").body;
    assert!(
        metrics.contains("\nnetto_stream_clients_dropped_total 1\n"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.starts_with("netto_stream"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // The stalled client now finds what fitted, then a proper end of the
    // chunked response, without the source's end event.
    let mut received = Vec::new();
    stalled
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stalled.read_to_end(&mut received).unwrap();
    let text = String::from_utf8_lossy(&received);
    let got = text.matches("event: snapshot").count();
    assert!(got < SNAPSHOTS, "the stalled client got everything");
    assert!(!text.contains("event: end"));
    assert!(
        text.ends_with("0\r\n\r\n"),
        "no clean end: {:?}",
        &text[text.len().saturating_sub(40)..]
    );
}

/// One request with the given Host header (none: no Host at all) on a
/// connection of its own; the status and the body.
fn request_with_host(
    serve: &Serve,
    path: &str,
    version: &str,
    host: Option<&str>,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut connection =
        std::net::TcpStream::connect(serve.base.trim_start_matches("http://")).unwrap();
    let host = host.map_or(String::new(), |h| format!("Host: {h}\r\n"));
    write!(
        connection,
        "GET {path} HTTP/{version}\r\n{host}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    connection.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

#[test]
fn the_host_header_must_name_this_server() {
    let serve = Serve::start(&[
        "--replay",
        RECORDING,
        "--speed",
        "inf",
        "--allow-host",
        "Node1.Example",
    ]);
    serve.wait_ended();
    let port = serve.base.rsplit(':').next().unwrap().to_owned();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
        format!("node1.example:{port}"),
    ] {
        let (code, body) = request_with_host(&serve, "/api/v1/source", "1.1", Some(&host));
        assert_eq!(code, 200, "{host}: {body}");
    }
    // A page of another site whose name was pointed at 127.0.0.1 (DNS
    // rebinding) reads nothing, on any path.
    for path in ENDPOINTS {
        for host in [format!("attacker.example:{port}"), "192.168.1.1".to_owned()] {
            let (code, body) = request_with_host(&serve, path, "1.1", Some(&host));
            assert_eq!(code, 421, "{path} with Host {host}: {body}");
            let error: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert!(
                error["error"]
                    .as_str()
                    .unwrap()
                    .contains("is not a name of this server"),
                "{body}"
            );
        }
    }
    for (version, host) in [("1.0", None), ("1.1", Some("attacker.example/x"))] {
        let (code, body) = request_with_host(&serve, "/api/v1/source", version, host);
        assert_eq!(code, 400, "HTTP/{version} Host {host:?}: {body}");
        assert!(body.contains("\"error\""), "{body}");
    }
    // HTTP/1.1 requires a Host: actix-web itself answers 400 (no body).
    let (code, _) = request_with_host(&serve, "/api/v1/source", "1.1", None);
    assert_eq!(code, 400);
}

#[test]
fn the_serving_process_holds_no_privileges() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf"]);
    serve.wait_ended();
    let server = serve.server_pid();
    let seen = status(server);
    for field in ["CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"] {
        assert_eq!(seen[field], "0000000000000000", "{field}");
    }
    assert_eq!(seen["NoNewPrivs"], "1");
    assert_eq!(seen["Seccomp"], "2");
    // Started as root, it serves as a user of its own: not nobody (whom
    // other daemons share), no user or group of the host, one id for all.
    let ids = |field: &str| -> Vec<u32> {
        seen[field]
            .split_whitespace()
            .map(|id| id.parse().unwrap())
            .collect()
    };
    let uid = ids("Uid")[0];
    assert_eq!(ids("Uid"), [uid; 4]);
    assert_eq!(ids("Gid"), [uid; 4]);
    assert!(uid != 0 && uid != 65534, "{uid}");
    assert!(netto::frontends::web::sandbox::UNUSED_IDS.contains(&uid));
    assert!(nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .unwrap()
        .is_none());
    assert!(
        nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(uid))
            .unwrap()
            .is_none()
    );
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    assert!(!passwd
        .lines()
        .any(|l| l.split(':').nth(2) == Some(&uid.to_string())));
    assert_eq!(seen["Groups"], "");
    // It holds no file: only pipes, sockets and its own event descriptors.
    let files = open_files(server);
    assert!(
        files
            .iter()
            .all(|f| !f.starts_with('/') && !f.contains("bpf")),
        "{files:?}"
    );
    // The one netto child that serves, and it still answers.
    assert_eq!(children(serve.pid()), [server]);
    assert_eq!(serve.get("/api/v1/snapshot").status, 200);
}

#[test]
fn the_serving_process_runs_as_the_user_named() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf", "--user", "nobody"]);
    serve.wait_ended();
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let seen = status(serve.server_pid());
    let first = |field: &str| -> u32 {
        seen[field]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(first("Uid"), nobody.uid.as_raw());
    assert_eq!(first("Gid"), nobody.gid.as_raw());
}

/// Whether process `pid` still exists (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap()
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn killing_the_serving_process_ends_netto() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf"]);
    serve.wait_ended();
    let server = serve.server_pid();
    common::kill(server as i32, libc::SIGKILL);
    let pid = serve.pid();
    let (exit, lines) = serve.wait_exit();
    assert_eq!(exit.code(), Some(1), "{lines:?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("netto: error: the HTTP server process ended: signal: 9 (SIGKILL)"),
        "{lines:?}"
    );
    assert!(!alive(server) && !alive(pid));
}

/// A serving process that does not stop once its pipe has closed is
/// killed when the grace period is over, through the pidfd netto holds.
#[test]
fn a_serving_process_that_will_not_stop_is_killed() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf"]);
    serve.wait_ended();
    let server = serve.server_pid();
    // Stopped, it cannot see its pipe close.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server as i32),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (exit, lines) = serve.signal(libc::SIGTERM);
    let took = started.elapsed();
    assert!(
        lines.contains(&"netto: the HTTP server process did not stop; killing it".to_owned()),
        "{lines:?}"
    );
    assert_eq!(
        lines.last().map(String::as_str),
        Some("netto: error: the HTTP server process ended: signal: 9 (SIGKILL)"),
        "{lines:?}"
    );
    assert_eq!(exit.code(), Some(1));
    // The grace period (10 s), then at once.
    assert!((10.0..15.0).contains(&took.as_secs_f64()), "{took:?}");
    assert!(!alive(server));
}

#[test]
fn sigterm_ends_netto_and_its_serving_process() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf"]);
    serve.wait_ended();
    let server = serve.server_pid();
    let address = serve.base.trim_start_matches("http://").to_owned();
    let (exit, lines) = serve.signal(libc::SIGTERM);
    assert!(exit.success(), "{exit} {lines:?}");
    assert!(!alive(server));
    // Nobody holds the port any more.
    std::net::TcpListener::bind(&address).unwrap();
}

#[test]
fn a_long_history_keeps_its_stacks_and_records_them() {
    // 400 s at 50 ms, one sample per interval, kept for 3600 s.
    const SNAPSHOTS: usize = 8000;
    let mut snapshot = recording().snapshots[0].clone();
    snapshot.stacks.truncate(1);
    snapshot.stacks[0].count = 1;
    let (_dir, path) = repeated(&snapshot, SNAPSHOTS, 0.05);

    let serve = replay_whole(&path);
    assert_eq!(serve.get("/api/v1/source").json()["snapshots"], SNAPSHOTS);
    let history = serve.get("/api/v1/history").json();
    assert_eq!(history.as_array().unwrap().len(), SNAPSHOTS);
    let samples = |window: &str| -> u64 {
        let folded = serve.get(&format!(
            "/api/v1/flame/folded?seconds={window}&weight=samples"
        ));
        parse_folded(folded.body.as_bytes())
            .unwrap()
            .iter()
            .map(|s| s.count)
            .sum()
    };
    // 10 s are 200 intervals; the longest window, 300 s, is all that is
    // left of the stacks of 400 s.
    assert!((200..=201).contains(&samples("10")), "{}", samples("10"));
    assert!(
        (6000..=6001).contains(&samples("300")),
        "{}",
        samples("300")
    );
    // The stacks are kept as long as the history: a recording of all of
    // it has every snapshot's sample, and loads.
    let recording = serve.get("/api/v1/recording");
    assert_eq!(recording.status, 200, "{}", recording.body);
    let file = netto::recording::parse(&recording.bytes).unwrap();
    netto::recording::validate(&file).unwrap();
    assert_eq!(file.snapshots.len(), SNAPSHOTS);
    assert!(file.snapshots.iter().all(|s| s.stacks.len() == 1));
    assert_eq!(serve.get("/api/v1/recording?seconds=3601").status, 400);
}

#[test]
fn killing_netto_ends_its_serving_process() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf"]);
    serve.wait_ended();
    let server = serve.server_pid();
    // SIGKILL: no clean-up in netto; the serving process sees its pipe close.
    let (exit, _) = serve.signal(libc::SIGKILL);
    assert_eq!(exit.signal(), Some(libc::SIGKILL));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(server) {
        assert!(
            std::time::Instant::now() < deadline,
            "the serving process outlived netto"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn the_api_lists_every_endpoint_and_each_answers() {
    // A debug build draws slowly: room enough for it.
    let serve = Serve::start(&[
        "--replay",
        RECORDING,
        "--speed",
        "inf",
        "--serve-budget",
        "100",
    ]);
    serve.wait_ended();
    let list = serve.get("/api").json();
    let endpoints = list["endpoints"].as_array().unwrap();
    let paths: Vec<&str> = endpoints
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for needed in [
        "/api/v1/source",
        "/api/v1/snapshot",
        "/api/v1/history",
        "/api/v1/stream",
        "/api/v1/flame/folded",
        "/api/v1/flame/svg",
        "/api/v1/flame/pprof",
        "/debug/pprof/profile",
        "/metrics",
    ] {
        assert!(paths.contains(&needed), "{needed} not in {paths:?}");
    }
    for endpoint in endpoints {
        assert!(!endpoint["about"].as_str().unwrap().is_empty());
        let path = endpoint["path"].as_str().unwrap();
        if path == "/api/v1/stream" {
            continue; // Never ends while the server runs.
        }
        let reply = serve.get(path);
        assert!(
            matches!(reply.status, 200 | 404),
            "{path}: {}",
            reply.status
        );
        assert!(!reply.body.contains("no such endpoint"), "{path}");
    }
}

/// One client asking for drawings faster than its rate is answered 429
/// with Retry-After, and is served again once it waits that long.
#[test]
fn a_client_past_its_rate_is_told_when_to_come_back() {
    // Room for the drawing itself: the client's rate is what refuses.
    let serve = Serve::start(&[
        "--replay",
        RECORDING,
        "--speed",
        "inf",
        "--serve-budget",
        "100",
    ]);
    serve.wait_ended();
    let mut refused = None;
    for _ in 0..100 {
        let reply = serve.get("/api/v1/snapshot");
        if reply.status == 429 {
            refused = Some(reply);
            break;
        }
        assert_eq!(reply.status, 200);
    }
    let refused = refused.expect("100 requests at once were all served");
    let retry: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(refused.json()["error"]
        .as_str()
        .unwrap()
        .contains("too many requests"));
    std::thread::sleep(std::time::Duration::from_secs(retry));
    assert_eq!(serve.get("/api/v1/snapshot").status, 200);
}

#[test]
fn serve_listens_on_a_bare_port_and_stops_after_its_duration() {
    let started = std::time::Instant::now();
    let out = netto(&[
        "serve",
        "--replay",
        RECORDING,
        "--listen",
        "0",
        "--duration",
        "1.5",
    ]);
    let took = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("netto: serving on http://127.0.0.1:"),
        "{stderr}"
    );
    assert!((1.5..10.0).contains(&took), "{took} s");
}
