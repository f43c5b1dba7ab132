//! `netto serve` measuring for real (root, BPF) under the demo traffic (TCP
//! through a veth pair into a namespace): the stream delivers a snapshot
//! per interval from a serving process that holds neither privileges nor
//! BPF objects, 50 stream clients at once neither slow the collector down
//! nor grow its memory, the recording endpoint gives back the history with
//! its stacks, and the serving process's end ends everything.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::median;
use common::serve::{children, open_files, rss_kib, status, Events, Serve};
use serde_json::Value;

const INTERVAL_S: f64 = 0.5;

/// What one stream client saw.
struct Followed {
    snapshots: Vec<Value>,
    ts: Vec<f64>,
    /// Seconds from the end of each interval to its arrival here.
    latency: Vec<f64>,
    /// Whether the server ended the stream (cleanly) before the deadline.
    ended: bool,
}

/// Reads snapshot events until `deadline`; a broken stream panics.
fn follow(mut events: Events, deadline: Instant) -> Followed {
    let mut seen = Followed {
        snapshots: Vec::new(),
        ts: Vec::new(),
        latency: Vec::new(),
        ended: false,
    };
    while Instant::now() < deadline {
        match events.next_event() {
            Ok(Some(event)) if event.kind == "snapshot" => {
                let snapshot: Value = serde_json::from_str(&event.data).unwrap();
                let ts = snapshot["ts"].as_f64().unwrap();
                seen.latency.push(common::now_unix() - ts);
                seen.ts.push(ts);
                seen.snapshots.push(snapshot);
            }
            Ok(Some(event)) => panic!("unexpected {} event", event.kind),
            Ok(None) => {
                seen.ended = true;
                break;
            }
            Err(e) => panic!("the stream broke: {e}"),
        }
    }
    seen
}

/// Consecutive snapshots cover time without a hole: each one's measured
/// interval is exactly the time since the one before. So none was lost,
/// even when a busy machine made the collector late (it then catches up).
fn assert_tiles(snapshots: &[Value]) {
    for pair in snapshots.windows(2) {
        let gap = pair[1]["ts"].as_f64().unwrap() - pair[0]["ts"].as_f64().unwrap();
        let interval = pair[1]["interval_s"].as_f64().unwrap();
        assert!(
            (gap - interval).abs() < 0.01,
            "{interval} s measured over a {gap} s gap"
        );
    }
}

fn gaps(ts: &[f64]) -> Vec<f64> {
    ts.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn the_stream_delivers_a_snapshot_per_interval_under_load() {
    let serve = Serve::start(&[
        "--demo",
        "--demo-rate",
        "max",
        "--interval",
        "0.5",
        "--frequency",
        "199",
        "--budget",
        "off",
    ]);
    let mut events = serve.stream("/api/v1/stream");
    let mut snapshots = Vec::new();
    let started = Instant::now();
    while snapshots.len() < 13 {
        let event = events.next_event().unwrap().expect("stream ended");
        assert_eq!(event.kind, "snapshot");
        snapshots.push(serde_json::from_str::<Value>(&event.data).unwrap());
    }
    // The first was the latest already measured; 12 more arrived since,
    // no faster than the schedule allows.
    let took = started.elapsed().as_secs_f64();
    assert!(
        (5.0..=15.0).contains(&took),
        "12 intervals of {INTERVAL_S} s took {took} s"
    );
    assert_tiles(&snapshots);
    let longest = snapshots
        .iter()
        .map(|s| s["interval_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    eprintln!("13 snapshots in {took:.2} s, longest interval {longest:.3} s");
    // The demo traffic shows: receive softirq time, samples, a breakdown.
    let busy = snapshots
        .iter()
        .filter(|s| s["events"]["net_rx_softirq"]["total_ns"].as_u64().unwrap() > 1_000_000)
        .count();
    assert!(busy >= 10, "{busy} of 13 snapshots with NET_RX time");
    let samples: u64 = snapshots
        .iter()
        .map(|s| s["sampling"]["samples"].as_u64().unwrap())
        .sum();
    assert!(samples > 100, "{samples} samples");
    assert!(snapshots
        .iter()
        .any(|s| !s["breakdown"].as_array().unwrap().is_empty()));

    // The BPF objects are netto's; the serving process has no privilege
    // and none of them.
    let server = serve.server_pid();
    let seen = status(server);
    for field in ["CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"] {
        assert_eq!(seen[field], "0000000000000000", "{field}");
    }
    assert_eq!(
        (seen["NoNewPrivs"].as_str(), seen["Seccomp"].as_str()),
        ("1", "2")
    );
    let is_bpf = |f: &String| f.starts_with("anon_inode:bpf");
    assert!(open_files(serve.pid()).iter().any(is_bpf));
    let files = open_files(server);
    assert!(!files.iter().any(is_bpf), "{files:?}");

    let svg = serve.get("/api/v1/flame/svg?seconds=10");
    assert_eq!(
        (svg.status, svg.content_type.as_str()),
        (200, "image/svg+xml")
    );
    let backend = serve.get("/api/v1/source").json()["source"]["backend"].clone();
    let metrics = serve.get("/metrics").body;
    assert!(metrics.contains(&format!("netto_info{{backend={backend}")));

    let (status, _) = serve.interrupt();
    assert!(status.success(), "{status}");
}

#[test]
fn fifty_stream_clients_for_30_s() {
    const CLIENTS: usize = 50;
    const RUN: Duration = Duration::from_secs(30);
    // A short history fills before the memory baseline is taken.
    let serve = Serve::start(&["--demo", "--interval", "0.5", "--history", "5"]);
    thread::sleep(Duration::from_secs(6));

    // One client that asks for the stream and then never reads.
    let mut stalled = TcpStream::connect(serve.base.trim_start_matches("http://")).unwrap();
    stalled
        .write_all(b"GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();

    let deadline = Instant::now() + RUN;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let events = serve.stream("/api/v1/stream");
            thread::spawn(move || follow(events, deadline))
        })
        .collect();
    thread::sleep(Duration::from_secs(5));
    // netto and its serving process.
    let rss = || rss_kib(serve.pid()) + rss_kib(serve.server_pid());
    let rss_before = rss();
    let connected = serve.get("/metrics").body;
    let results: Vec<Followed> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let rss_after = rss();

    assert!(
        connected.contains(&format!("netto_stream_clients {}", CLIENTS + 1)),
        "not every client counted"
    );
    // Every client that stayed saw the same snapshots, none missing; one
    // that left did so cleanly (a broken stream panics in follow()).
    let longest = results.iter().max_by_key(|f| f.ts.len()).unwrap();
    let reference = &longest.ts;
    let mut clean_ends = 0;
    for seen in &results {
        let first = reference.iter().position(|t| *t == seen.ts[0]).unwrap();
        assert_eq!(
            &reference[first..first + seen.ts.len()],
            &seen.ts[..],
            "a client missed updates"
        );
        if seen.ended {
            clean_ends += 1;
        } else {
            assert!(reference.len() - (first + seen.ts.len()) <= 1);
        }
    }
    // The collector kept its pace: about 60 intervals in 30 s, none lost.
    // On a machine shared with other work an interval can be late (the
    // schedule then catches up), so single gaps are only reported.
    assert_tiles(&longest.snapshots);
    let gaps = gaps(reference);
    let late = gaps.iter().filter(|g| **g > INTERVAL_S * 1.5).count();
    let median_gap = median(&gaps);
    let latency: Vec<f64> = results.iter().flat_map(|f| f.latency.clone()).collect();
    let median_latency = median(&latency);
    eprintln!(
        "{CLIENTS} clients (+1 stalled) for {RUN:?}: {} snapshots each, median gap \
         {median_gap:.3} s, {late} gaps over {:.2} s, median delivery latency \
         {:.1} ms, {clean_ends} clean ends; RSS {rss_before} KiB -> {rss_after} KiB",
        reference.len(),
        INTERVAL_S * 1.5,
        median_latency * 1e3,
    );
    assert!(
        (52..=75).contains(&reference.len()),
        "{} snapshots in {RUN:?}, gaps {gaps:?}",
        reference.len()
    );
    // Clients get a snapshot as soon as it is measured.
    assert!(median_latency < 0.25, "median latency {median_latency} s");
    // Flat memory: no growth beyond allocator noise.
    assert!(
        rss_after <= rss_before + rss_before / 10 + 2048,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );
    drop(stalled);
    let (status, _) = serve.interrupt();
    assert!(status.success(), "{status}");
}

/// The namespaces netto's demo traffic made (`netto-demo-PID-N`).
fn demo_namespaces(pid: u32) -> Vec<String> {
    let listing = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with(&format!("netto-demo-{pid}-")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_serving_process_ending_ends_a_live_netto_cleanly() {
    let serve = Serve::start(&["--demo", "--interval", "0.5"]);
    let mut events = serve.stream("/api/v1/stream");
    events.next_event().unwrap().expect("a first snapshot");
    let server = serve.server_pid();
    let demo = children(serve.pid())
        .into_iter()
        .find(|pid| *pid != server)
        .expect("the demo traffic process");
    assert_eq!(demo_namespaces(demo).len(), 1);
    common::kill(server as i32, libc::SIGKILL);
    let started = Instant::now();
    let netto = serve.pid();
    let (exit, lines) = serve.wait_exit();
    eprintln!(
        "netto ended {:.2} s after its server",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(exit.code(), Some(1), "{lines:?}");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("netto: error: the HTTP server process ended: signal: 9 (SIGKILL)")
    );
    // The stream's connection went with the server.
    assert!(!matches!(events.next_event(), Ok(Some(_))));
    // The demo traffic and its namespace are gone, and so is netto.
    assert!(children(netto).is_empty());
    assert!(!std::path::Path::new(&format!("/proc/{demo}")).exists());
    assert_eq!(demo_namespaces(demo), Vec::<String>::new());
}

/// A snapshot's JSON as the history endpoint sends it: without its
/// stacks and their modules.
fn without_stacks(mut snapshot: Value) -> Value {
    let object = snapshot.as_object_mut().unwrap();
    object.remove("stacks");
    object.remove("modules");
    snapshot
}

/// Hindsight: the recording endpoint's file holds the snapshots the
/// history endpoint gives for the same seconds, with their stacks, and
/// `report` reads it into a flame graph of kernel functions.
#[test]
fn the_recording_endpoint_holds_the_history_with_its_stacks() {
    let serve = Serve::start(&[
        "--demo",
        "--demo-rate",
        "max",
        "--interval",
        "0.5",
        "--frequency",
        "199",
        "--budget",
        "off",
    ]);
    let mut events = serve.stream("/api/v1/stream");
    for _ in 0..9 {
        events.next_event().unwrap().expect("stream ended");
    }
    // A snapshot may arrive between two requests: ask again until the
    // history is the same before and after the recording.
    let (history, recording) = (0..5)
        .find_map(|_| {
            let before = serve.get("/api/v1/history?seconds=3").json();
            let recording = serve.get("/api/v1/recording?seconds=3");
            let after = serve.get("/api/v1/history?seconds=3").json();
            (before == after).then_some((before, recording))
        })
        .expect("the history kept changing between requests");
    assert_eq!(recording.status, 200, "{}", recording.body);
    assert_eq!(recording.content_type, "application/json");
    let file = recording.json();
    let snapshots = file["snapshots"].as_array().unwrap();
    let history = history.as_array().unwrap();
    assert!((5..=7).contains(&history.len()), "{}", history.len());
    assert_eq!(snapshots.len(), history.len());
    for (got, kept) in snapshots.iter().zip(history) {
        assert_eq!(&without_stacks(got.clone()), kept);
    }
    let stacks: usize = snapshots
        .iter()
        .map(|s| s["stacks"].as_array().unwrap().len())
        .sum();
    assert!(stacks > 0, "no stacks in the recording");
    assert_eq!(file["header"]["frequency_hz"], 199);

    // Beyond --history, or not a number: 400.
    for bad in ["0", "-1", "301", "nan", "soon"] {
        let reply = serve.get(&format!("/api/v1/recording?seconds={bad}"));
        assert_eq!(reply.status, 400, "{bad}: {}", reply.body);
    }
    let (status, _) = serve.interrupt();
    assert!(status.success(), "{status}");

    // report reads it: a flame graph of kernel functions, no address.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hindsight.json");
    std::fs::write(&path, &recording.bytes).unwrap();
    let out = common::netto(&[
        "report",
        path.to_str().unwrap(),
        "--format",
        "folded",
        "-o",
        "-",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folded = String::from_utf8(out.stdout).unwrap();
    let frames: std::collections::BTreeSet<&str> = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .flat_map(|(stack, _)| stack.split(';'))
        .collect();
    assert!(
        [
            "net_rx_action",
            "__netif_receive_skb_core",
            "tcp_v4_rcv",
            "tcp_sendmsg"
        ]
        .iter()
        .any(|f| frames.contains(f)),
        "{frames:?}"
    );
    // serve --replay plays it back whole.
    let replayed = Serve::start(&["--replay", path.to_str().unwrap(), "--speed", "inf"]);
    replayed.wait_ended();
    assert_eq!(
        replayed.get("/api/v1/source").json()["snapshots"],
        snapshots.len()
    );
}

/// Serving is not measuring: on an idle host, one keep-alive client asking
/// for pprof profiles 20 times a second over ever-changing windows neither
/// moves measuring out of `exact` nor costs measuring more than its 1 %
/// budget; serving pays for it, within its own bound, and over-eager
/// requests are answered 429 rather than served at measuring's expense.
/// No request can change what is measured: every endpoint only reads.
#[test]
fn a_pprof_loop_changes_nothing_measured_and_serving_keeps_its_bound() {
    const LOOP: Duration = Duration::from_secs(20);
    let serve = Serve::start(&["--interval", "1"]);
    let started = Instant::now();
    let (mut served, mut refused, mut windows) = (0, 0, 1);
    while started.elapsed() < LOOP {
        let asked = Instant::now();
        let reply = serve.get(&format!("/debug/pprof/profile?seconds={windows}"));
        match reply.status {
            200 => served += 1,
            429 => {
                refused += 1;
                let retry: u64 = reply.headers["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!((1..=10).contains(&retry), "Retry-After {retry}");
            }
            other => panic!("{other}: {}", reply.body),
        }
        windows = windows % 300 + 1;
        thread::sleep(Duration::from_millis(50).saturating_sub(asked.elapsed()));
    }
    // The loop may have spent the client's rate, or serving's allowance:
    // the history is a drawing too, served once they are back.
    let history = loop {
        let reply = serve.get("/api/v1/history");
        if reply.status != 429 {
            break reply.json();
        }
        let retry: u64 = reply.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            started.elapsed() < LOOP * 2,
            "the history was refused for long"
        );
        thread::sleep(Duration::from_secs(retry));
    };
    let snapshots = history.as_array().unwrap();
    // The first intervals pay for loading and verifying the programs.
    let judged = &snapshots[2..];
    assert!(judged.len() >= 15, "{} snapshots", snapshots.len());
    let figure = |s: &Value, field: &str| s["overhead"][field].as_f64().unwrap();
    let measuring: Vec<f64> = judged
        .iter()
        .map(|s| figure(s, "measuring_percent"))
        .collect();
    let serving: Vec<f64> = judged
        .iter()
        .map(|s| figure(s, "serving_percent"))
        .collect();
    eprintln!(
        "{served} served, {refused} refused; measuring {measuring:.2?} %; serving {serving:.2?} %"
    );
    for s in judged {
        assert_eq!(s["tier"], "exact", "{}", s["overhead"]);
        // A step down only ever answers measuring over its budget (on a
        // shared host, others' work runs the exact hooks too); serving's
        // cost never takes one.
        if s["budget"]["change"]["kind"] == "down" {
            let budget = s["budget"]["percent"].as_f64().unwrap();
            assert!(figure(s, "measuring_percent") > budget, "{}", s["overhead"]);
        }
        let whole = figure(s, "cost_percent");
        let parts = figure(s, "measuring_percent") + figure(s, "serving_percent");
        assert!((whole - parts).abs() < 1e-6, "{whole} vs {parts}");
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // Within measuring's 1 % for most intervals (the median): this debug
    // build on a shared host pays more per interval than the release
    // build, whose figures are in the performance page.
    let mut sorted = measuring.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(sorted[sorted.len() / 2] <= 1.0, "measuring {measuring:?}");
    // Serving worked (the requests cost it something) and kept its bound
    // of 2 % a second on average, a request in progress at most over.
    assert!(served >= 40, "{served} served");
    assert!(mean(&serving) > 0.0);
    assert!(mean(&serving) <= 2.5, "serving {serving:?}");
    let (status, lines) = serve.signal(libc::SIGTERM);
    assert!(status.success(), "{status}: {lines:?}");
}

/// A real Prometheus scraping `serve --demo --tier sampled`, where every
/// network event's time is an estimate: `netto_cpu_seconds_total` keeps
/// growing (its series do not go flat when the tier estimates), and
/// `sum by (event) (rate(netto_cpu_seconds_total[15s]))` is netto's own
/// history's rate over the same 15 s, within 3 %.
#[test]
fn prometheus_rates_of_estimated_events_match_nettos_history() {
    // The demo flat out: its events well above the 1 % floor below. A
    // debug build's HTTP server, scraped every second, can spend the
    // default serving budget, which this test is not about.
    let serve = Serve::start(&[
        "--demo",
        "--demo-rate",
        "max",
        "--tier",
        "sampled",
        "--interval",
        "1",
        "--serve-budget",
        "10",
    ]);
    let target = serve.base.trim_start_matches("http://").to_owned();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n  - job_name: netto\n    static_configs: [{{targets: ['{target}']}}]\n"
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prometheus = common::Guarded(
        std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("prometheus (Debian package prometheus, see scripts/install-deps.sh)"),
    );
    let query = "sum by (event) (rate(netto_cpu_seconds_total[15s]))";
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into();
    let ask = |query: &str, at: f64| -> Value {
        let Ok(mut response) = agent
            .get(format!("http://127.0.0.1:{port}/api/v1/query"))
            .query("query", query)
            .query("time", format!("{at:.3}"))
            .call()
        else {
            return Value::Null; // Not listening yet.
        };
        let text = response.body_mut().read_to_string().unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap_or_default();
        answer["data"]["result"].clone()
    };
    // Until the 15 s window is full of scrapes (Prometheus takes a few
    // seconds to start): rate() then covers all of it.
    let scrapes_query = "netto_last_snapshot_timestamp_seconds[15s]";
    let deadline = Instant::now() + Duration::from_secs(60);
    let at = loop {
        thread::sleep(Duration::from_secs(1));
        let at = common::now_unix();
        let scrapes = ask(scrapes_query, at);
        if scrapes[0]["values"]
            .as_array()
            .is_some_and(|v| v.len() >= 15)
        {
            break at;
        }
        assert!(Instant::now() < deadline, "Prometheus never scraped 15 s");
    };
    let rates = ask(query, at);
    // Which snapshots the window's first and last scrapes saw, and when
    // they were scraped: the counters grew by exactly the snapshots
    // between, over that time (rate() extrapolates the growth between its
    // first and last sample to the window's edges, the same rate).
    let scrapes = ask(scrapes_query, at);
    let samples = scrapes[0]["values"].as_array().unwrap();
    let point = |v: &Value| {
        let t = v[0].as_f64().unwrap();
        let ts: f64 = v[1].as_str().unwrap().parse().unwrap();
        (t, ts)
    };
    let (first_at, first_ts) = point(&samples[0]);
    let (last_at, last_ts) = point(&samples[samples.len() - 1]);
    // rate() extrapolates a counter's growth to the window's start, but not
    // below zero: a CPU's series still at zero when the window begins (an
    // event of a few samples a second, not yet sampled on that CPU) reads
    // a rate lower by up to a scrape interval over the window. Such an
    // event is not held to 3 %.
    let lowest: std::collections::BTreeMap<String, f64> =
        ask("min by (event) (netto_cpu_seconds_total)", first_at)
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let event = r["metric"]["event"].as_str().unwrap().to_owned();
                (event, r["value"][1].as_str().unwrap().parse().unwrap())
            })
            .collect();
    drop(prometheus);
    // The history is a drawing request, held to the serving budget: asked
    // again after the Retry-After a refusal comes with.
    let deadline = Instant::now() + Duration::from_secs(30);
    let history = loop {
        let reply = serve.get("/api/v1/history");
        if reply.status != 429 {
            break reply.json();
        }
        assert!(
            Instant::now() < deadline,
            "the history refused: {}",
            reply.body
        );
        let wait: u64 = reply.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        thread::sleep(Duration::from_secs(wait.min(5)));
    };
    let within: Vec<&Value> = history
        .as_array()
        .unwrap_or_else(|| panic!("the history is no list: {history:.300}"))
        .iter()
        .filter(|s| {
            let ts = s["ts"].as_f64().unwrap();
            ts > first_ts && ts <= last_ts
        })
        .collect();
    assert!(within.len() >= 10, "{} snapshots", within.len());
    assert!(within.iter().all(|s| s["tier"] == "sampled"));
    let mut compared = 0;
    for result in rates.as_array().unwrap() {
        let event = result["metric"]["event"].as_str().unwrap();
        let rate: f64 = result["value"][1].as_str().unwrap().parse().unwrap();
        let own_ns: f64 = within
            .iter()
            .map(|s| s["events"][event]["total_ns"].as_f64().unwrap())
            .sum();
        let own = own_ns / 1e9 / (last_at - first_at);
        eprintln!("{event}: Prometheus {rate:.5} s/s, netto {own:.5} s/s");
        // Events of under 1 % of a CPU are too few samples to hold to 3 %.
        let started = lowest.get(event).is_some_and(|&v| v > 0.0);
        if own > 0.01 && started {
            assert!(within
                .iter()
                .all(|s| s["events"][event]["estimated"] == true));
            assert!(
                (rate - own).abs() <= 0.03 * own,
                "{event}: Prometheus {rate} vs netto {own}"
            );
            compared += 1;
        }
    }
    // The demo's socket calls and softirqs, all estimated, all growing.
    assert!(compared >= 2, "{rates}");
    let (status, lines) = serve.signal(libc::SIGTERM);
    assert!(status.success(), "{status}: {lines:?}");
}
