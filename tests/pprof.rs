//! Every pprof profile netto writes or serves, read by `go tool pprof`
//! itself: its totals are the folded stacks' samples and the exact event
//! times, its top functions are the folded stacks' leaves, and no address
//! appears. `report` and `serve --replay` need no root; `record` does.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::serve::Serve;
use common::{has_kernel_address, netto, recording, RECORDING};
use netto::frontends::flame::readback::{parse_folded, FoldedStack};
use netto::model::Recording;

/// Go ships in /usr/local/go here; Debian's golang-go (install-deps) puts
/// `go` on PATH.
fn go() -> PathBuf {
    let local = Path::new("/usr/local/go/bin/go");
    if local.exists() {
        local.to_owned()
    } else {
        PathBuf::from("go")
    }
}

/// `go tool pprof ARGS`, offline: the local toolchain only, its build
/// cache kept under the target directory so only the first run compiles
/// pprof (fetched profiles land in that HOME too).
fn pprof(args: &[&str]) -> String {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(go())
        .args(["tool", "pprof"])
        .args(args)
        .env("HOME", &home)
        .env("GOCACHE", home.join("cache"))
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env_remove("GOFLAGS")
        .output()
        .expect("running go tool pprof");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "go tool pprof {args:?}: {stderr}");
    assert!(!has_kernel_address(&stdout), "an address in {stdout}");
    assert!(!has_kernel_address(&stderr), "an address in {stderr}");
    stdout
}

/// What `-raw` shows: samples and cpu nanoseconds per context, and every
/// location's address.
#[derive(Debug, Default)]
struct Raw {
    samples: BTreeMap<String, u64>,
    cpu_ns: BTreeMap<String, u64>,
    addresses: Vec<String>,
    /// The `cpu` labels seen, and how many samples had none.
    cpus: BTreeSet<u32>,
    without_cpu: usize,
    period: u64,
    duration_s: f64,
}

fn raw(profile: &str) -> Raw {
    let text = pprof(&["-raw", profile]);
    let mut raw = Raw::default();
    let mut values: Option<(u64, u64)> = None;
    let mut section = "";
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(period) = line.strip_prefix("Period: ") {
            raw.period = period.parse().unwrap();
        } else if let Some(duration) = line.strip_prefix("Duration: ") {
            raw.duration_s = duration.parse().unwrap();
        } else if ["Samples:", "Locations", "Mappings"].contains(&trimmed) {
            section = trimmed;
        } else if section == "Samples:" && trimmed.starts_with(|c: char| c.is_ascii_digit()) {
            let (numbers, _) = trimmed.split_once(':').unwrap();
            let mut numbers = numbers.split_whitespace().map(|n| n.parse().unwrap());
            values = Some((numbers.next().unwrap(), numbers.next().unwrap()));
        } else if section == "Samples:" && trimmed.contains("context:[") {
            let context = trimmed.split("context:[").nth(1).unwrap();
            let context = context.split(']').next().unwrap().to_owned();
            assert!(trimmed.contains("category:["), "{trimmed}");
            match trimmed.split("cpu:[").nth(1) {
                Some(cpu) => {
                    raw.cpus
                        .insert(cpu.split(']').next().unwrap().parse().unwrap());
                }
                None => raw.without_cpu += 1,
            }
            let (samples, cpu_ns) = values.take().expect("values before labels");
            *raw.samples.entry(context.clone()).or_default() += samples;
            *raw.cpu_ns.entry(context).or_default() += cpu_ns;
        } else if section == "Locations" && !trimmed.is_empty() {
            raw.addresses
                .push(trimmed.split_whitespace().nth(1).unwrap().to_owned());
        }
    }
    assert!(values.is_none(), "a sample without labels in {text}");
    raw
}

/// `-top` by samples: the total and (flat, function) of the top rows.
fn top(profile: &str, rows: usize) -> (u64, Vec<(u64, String)>) {
    let text = pprof(&[
        "-top",
        "-sample_index=samples",
        &format!("-nodecount={rows}"),
        "-nodefraction=0",
        profile,
    ]);
    let total = text
        .lines()
        .find_map(|l| l.split("Total samples = ").nth(1))
        .expect("a total")
        .trim()
        .parse()
        .unwrap();
    let table = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields[0].parse().unwrap(), fields[5..].join(" "))
        })
        .collect();
    (total, table)
}

/// `-top` by cpu in nanoseconds: the total.
fn cpu_total_ns(profile: &str) -> u64 {
    let text = pprof(&["-top", "-sample_index=cpu", "-unit=ns", profile]);
    let total = text
        .lines()
        .find_map(|l| l.split("Total samples = ").nth(1))
        .expect("a total");
    total.split("ns").next().unwrap().parse().unwrap()
}

/// Samples per context and per leaf function of folded stacks whose root
/// frame is the context.
fn folded_totals(folded: &[FoldedStack]) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let (mut by_context, mut by_leaf) = (BTreeMap::new(), BTreeMap::new());
    for stack in folded {
        *by_context.entry(stack.frames[0].clone()).or_default() += stack.count;
        *by_leaf
            .entry(stack.frames.last().unwrap().clone())
            .or_default() += stack.count;
    }
    (by_context, by_leaf)
}

/// Each context's exact time, as the breakdown shares it out.
fn exact_ns(recording: &Recording) -> BTreeMap<String, u64> {
    let mut exact = BTreeMap::new();
    for breakdown in recording.snapshots.iter().flat_map(|s| &s.breakdown) {
        let ns: u64 = breakdown.categories.iter().map(|c| c.cpu_ns).sum();
        *exact
            .entry(breakdown.context.name().to_owned())
            .or_default() += ns;
    }
    exact
}

/// The profile at `profile` (a file or URL) against the folded stacks and
/// exact times of the same window.
fn assert_profile_matches(profile: &str, folded: &[FoldedStack], exact: &BTreeMap<String, u64>) {
    let (by_context, by_leaf) = folded_totals(folded);
    let samples: u64 = by_context.values().sum();
    assert!(samples > 0);

    let raw = raw(profile);
    assert_eq!(raw.samples, by_context, "samples per context");
    assert_eq!(&raw.cpu_ns, exact, "cpu nanoseconds per context");
    assert!(!raw.addresses.is_empty());
    assert!(
        raw.addresses.iter().all(|a| a == "0x0"),
        "{:?}",
        raw.addresses
    );

    let rows = 10;
    let (total, table) = top(profile, rows);
    assert_eq!(total, samples);
    assert_eq!(table.len(), rows.min(by_leaf.len()));
    let mut leaves: Vec<u64> = by_leaf.values().copied().collect();
    leaves.sort_unstable_by(|a, b| b.cmp(a));
    let flats: Vec<u64> = table.iter().map(|&(flat, _)| flat).collect();
    assert_eq!(flats, leaves[..table.len()], "{table:?}");
    for (flat, function) in &table {
        assert_eq!(by_leaf.get(function), Some(flat), "{function}");
    }
    assert_eq!(cpu_total_ns(profile), exact.values().sum::<u64>());
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn report_writes_a_profile_pprof_reads_with_the_folded_totals() {
    let dir = tempfile::tempdir().unwrap();
    let (profile, folded) = (dir.path().join("r.pb.gz"), dir.path().join("r.folded"));
    // Folded in samples, to hold the profile's sample counts against.
    for (path, weight) in [(&profile, "time"), (&folded, "samples")] {
        let out = netto(&["report", RECORDING, "--weight", weight, "-o", s(path)]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // --format picks it whatever the name.
    let named = dir.path().join("profile.bin");
    let out = netto(&["report", RECORDING, "--format", "pprof", "-o", s(&named)]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(&named).unwrap(),
        std::fs::read(&profile).unwrap()
    );
    assert_eq!(std::fs::read(&profile).unwrap()[..2], [0x1f, 0x8b], "gzip");

    let folded = parse_folded(std::fs::read(&folded).unwrap().as_slice()).unwrap();
    let recording = recording();
    assert_profile_matches(s(&profile), &folded, &exact_ns(&recording));
    let raw = raw(s(&profile));
    assert_eq!(raw.period, 1_000_000, "1 s / 1000 Hz");
    let recorded: f64 = recording.snapshots.iter().map(|s| s.interval_s).sum();
    assert!(
        (raw.duration_s - recorded).abs() < 0.01,
        "{}",
        raw.duration_s
    );
}

#[test]
fn a_differential_report_refuses_pprof() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["-o", "diff.pb.gz"],
        vec!["--format", "pprof", "-o", "diff.svg"],
    ] {
        let out = dir.path().join(args.last().unwrap());
        let mut full = vec!["report", "--diff", RECORDING, RECORDING];
        full.extend(&args[..args.len() - 1]);
        full.push(s(&out));
        let result = netto(&full);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("not pprof"), "{stderr}");
        assert!(!out.exists());
    }
}

#[test]
fn serve_gives_the_same_profile_on_both_endpoints() {
    let serve = Serve::start(&["--replay", RECORDING, "--speed", "inf"]);
    serve.wait_ended();
    let folded = serve.get("/api/v1/flame/folded?seconds=300&weight=samples");
    let folded = parse_folded(folded.body.as_bytes()).unwrap();
    let exact = exact_ns(&recording());

    let dir = tempfile::tempdir().unwrap();
    let mut bodies = Vec::new();
    for path in ["/debug/pprof/profile", "/api/v1/flame/pprof"] {
        let url = format!("{}{path}?seconds=300", serve.base);
        let reply = serve.get(&format!("{path}?seconds=300"));
        assert_eq!(
            (reply.status, reply.content_type.as_str()),
            (200, "application/octet-stream")
        );
        let body = reply.bytes;
        let file = dir.path().join("served.pb.gz");
        std::fs::write(&file, &body).unwrap();
        assert_profile_matches(s(&file), &folded, &exact);
        // pprof fetching the URL itself, as a scraper would.
        assert_profile_matches(&url, &folded, &exact);
        bodies.push(body);
    }
    assert_eq!(bodies[0], bodies[1]);

    // The default window and a short one: the folded stacks of the same
    // window, never more.
    for query in ["", "?seconds=10"] {
        let weight = if query.is_empty() { "?" } else { "&" };
        let folded = serve.get(&format!(
            "/api/v1/flame/folded{query}{weight}weight=samples"
        ));
        let folded = parse_folded(folded.body.as_bytes()).unwrap();
        let url = format!("{}/debug/pprof/profile{query}", serve.base);
        let raw = raw(&url);
        assert_eq!(raw.samples, folded_totals(&folded).0, "{query}");
    }

    for path in ["/debug/pprof/profile", "/api/v1/flame/pprof"] {
        for query in [
            "seconds=abc",
            "seconds=-1",
            "seconds=0",
            "seconds=nan",
            "seconds=",
            "seconds=301",
        ] {
            let reply = serve.get(&format!("{path}?{query}"));
            assert_eq!(reply.status, 400, "{path}?{query}");
            assert_eq!(reply.content_type, "application/json");
            assert!(reply.json()["error"].is_string(), "{}", reply.body);
        }
        assert_eq!(serve.status_of("POST", path), 405);
    }
}

#[test]
fn record_writes_a_profile_pprof_reads_live() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("live.pb.gz");
    let out = netto(&[
        "record",
        "--demo",
        "--demo-rate",
        "max",
        "--duration",
        "3",
        "--frequency",
        "499",
        "-o",
        s(&profile),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = raw(s(&profile));
    let samples: u64 = raw.samples.values().sum();
    assert!(samples > 100, "{:?}", raw.samples);
    assert!(raw.samples.contains_key("net_rx"), "{:?}", raw.samples);
    assert!(raw.cpu_ns["net_rx"] > 0);
    assert!(raw.addresses.iter().all(|a| a == "0x0"));
    // Every sample of a live run carries the CPU it was taken on.
    assert_eq!(raw.without_cpu, 0);
    let cpus = std::thread::available_parallelism().unwrap().get() as u32;
    assert!(
        !raw.cpus.is_empty() && raw.cpus.iter().all(|&cpu| cpu < cpus),
        "{:?}",
        raw.cpus
    );
    assert_eq!(raw.period, 1_000_000_000 / 499);
    assert!((2.5..4.5).contains(&raw.duration_s), "{}", raw.duration_s);
    let (total, table) = top(s(&profile), 5);
    assert_eq!(total, samples);
    assert_eq!(table.len(), 5);
    let text = pprof(&["-traces", s(&profile)]);
    assert!(text.contains("net_rx_action"), "no receive path");
}
