//! `serve --otlp-endpoint` against a reference receiver that is not
//! netto's code (tests/otlp/receiver.py: the pinned PyPI
//! opentelemetry-proto's generated modules, grpcio, the standard library's
//! HTTP server): over both protocols its exports add up to the folded
//! stacks' exact time and samples, to the nanosecond; they carry the
//! resource and sample attributes and no address. A receiver that is
//! gone, hangs or comes back costs the snapshots nothing: the windows it
//! misses are counted, and sending resumes. A replay needs no root.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::serve::Serve;
use common::{has_kernel_address, netto, recording, Guarded, RECORDING};
use netto::frontends::web::otlp::Dropped;
use serde_json::Value;

const PINS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/otlp-receiver.txt"
);
const RECEIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/receiver.py");
const PROTOCOLS: [&str; 2] = ["grpc", "http/protobuf"];

fn python() -> PathBuf {
    static VENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    VENV.get_or_init(|| common::venv::pinned("otlp-receiver", PINS))
        .join("bin/python")
}

/// The reference receiver, killed on drop.
struct Receiver {
    _child: Guarded,
    grpc: u16,
    http: u16,
    exports: mpsc::Receiver<Value>,
}

impl Receiver {
    /// Listening on ports it picks, or on `ports` (a receiver started
    /// again where the last one was).
    fn start(extra: &[&str], ports: Option<(u16, u16)>) -> Receiver {
        let mut command = Command::new(python());
        command
            .arg(RECEIVER)
            .args(extra)
            .env("GRPC_VERBOSITY", "ERROR");
        if let Some((grpc, http)) = ports {
            command.args(["--ports", &grpc.to_string(), &http.to_string()]);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the receiver");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let child = Guarded(child);
        let first = lines.next().expect("the receiver said nothing").unwrap();
        let ports: Vec<u16> = first
            .strip_prefix("ports ")
            .unwrap_or_else(|| panic!("not ports: {first}"))
            .split(' ')
            .map(|p| p.parse().unwrap())
            .collect();
        let (tx, exports) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    break;
                }
            }
        });
        Receiver {
            _child: child,
            grpc: ports[0],
            http: ports[1],
            exports,
        }
    }

    fn endpoint(&self, protocol: &str) -> String {
        let port = if protocol == "grpc" {
            self.grpc
        } else {
            self.http
        };
        format!("http://127.0.0.1:{port}")
    }

    /// Exports received until `done` says they are enough, within `wait`.
    fn until(&self, wait: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + wait;
        let mut got = Vec::new();
        while !done(&got) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.exports.recv_timeout(left) {
                Ok(export) => got.push(export),
                Err(_) => panic!("{} exports in {wait:?}, not enough: {got:#?}", got.len()),
            }
        }
        got
    }
}

/// The total of the profiles of `kind` (`cpu` or `samples`) in `exports`.
fn total(exports: &[Value], kind: &str) -> u64 {
    exports
        .iter()
        .flat_map(|e| e["profiles"].as_array().unwrap())
        .filter(|p| p["type"] == kind)
        .map(|p| p["total"].as_u64().unwrap())
        .sum()
}

/// What the recording's folded stacks add up to in `weight`, the frame
/// that stands for time no sample saw left out: a profile has samples only.
fn folded_total(weight: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stacks.folded");
    let run = netto(&[
        "report",
        RECORDING,
        "--format",
        "folded",
        "--weight",
        weight,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{run:?}");
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .filter(|line| !line.contains("[not sampled]"))
        .map(|line| line.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

/// `serve --replay` pushing 1 s windows to `to`; every window whatever it
/// costs (`--otlp-budget 100`) unless `extra` says otherwise: these tests
/// are about what arrives, and in the test build drawing a window of the
/// replay at speed can take more than the default 1 % of a 1 s window.
fn serve_pushing(to: &str, protocol: &str, extra: &[&str]) -> Serve {
    let mut args = vec![
        "--replay",
        RECORDING,
        "--otlp-endpoint",
        to,
        "--otlp-protocol",
        protocol,
        "--otlp-interval",
        "1s",
    ];
    if !extra.contains(&"--otlp-budget") {
        args.extend(["--otlp-budget", "100"]);
    }
    args.extend_from_slice(extra);
    Serve::start(&args)
}

/// A series of `/metrics`, 0 when absent.
fn metric(serve: &Serve, series: &str) -> f64 {
    serve
        .get("/metrics")
        .body
        .lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Windows dropped, for any reason.
fn dropped(serve: &Serve) -> f64 {
    Dropped::ALL
        .iter()
        .map(|r| {
            metric(
                serve,
                &format!(
                    "netto_otlp_windows_dropped_total{{reason=\"{}\"}}",
                    r.name()
                ),
            )
        })
        .sum()
}

#[test]
fn both_protocols_deliver_every_exact_nanosecond_by_name() {
    let (ns, samples) = (folded_total("time"), folded_total("samples"));
    assert!(ns > 0 && samples > 0);
    let header = recording().header;
    for protocol in PROTOCOLS {
        let receiver = Receiver::start(&[], None);
        let serve = serve_pushing(&receiver.endpoint(protocol), protocol, &["--speed", "4"]);
        let exports = receiver.until(Duration::from_secs(60), |got| {
            total(got, "samples") >= samples
        });
        assert_eq!(total(&exports, "samples"), samples, "{protocol}");
        assert_eq!(total(&exports, "cpu"), ns, "{protocol}: every exact ns");
        for export in &exports {
            assert_eq!(export["protocol"], protocol);
            let kinds: Vec<(&str, &str)> = export["profiles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p["type"].as_str().unwrap(), p["unit"].as_str().unwrap()))
                .collect();
            assert_eq!(kinds, [("samples", "count"), ("cpu", "nanoseconds")]);
            let resource = &export["resource"];
            assert_eq!(resource["host.name"], header.host.as_str());
            assert_eq!(resource["os.type"], "linux");
            assert_eq!(resource["os.version"], header.kernel.as_str());
            assert_eq!(resource["service.name"], "netto");
            assert_eq!(resource["service.version"], env!("CARGO_PKG_VERSION"));
            assert_eq!(export["addresses"], 0, "an address: {export}");
            let functions = export["functions"].as_array().unwrap();
            for text in functions
                .iter()
                .chain(export["attribute_values"].as_array().unwrap())
            {
                assert!(!has_kernel_address(text.as_str().unwrap()), "{text}");
            }
            if export["profiles"][0]["samples"].as_u64() > Some(0) {
                assert_eq!(
                    export["attribute_keys"],
                    serde_json::json!(["category", "context"])
                );
                assert!(functions.iter().any(|f| f == "net_rx_action"));
            }
        }
        // Counted once the answer is back, a moment after the receiver
        // printed the export.
        let deadline = Instant::now() + Duration::from_secs(10);
        while metric(&serve, "netto_otlp_windows_sent_total") < exports.len() as f64 {
            assert!(Instant::now() < deadline, "{protocol}: sends not counted");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(dropped(&serve), 0.0, "{protocol}");
        let (status, _) = serve.interrupt();
        assert!(status.success());
    }
}

/// `--otlp-headers-file`'s headers arrive with every push, in lower case,
/// over both protocols; the secret is on no process's command line (the
/// serving process's included) and in nothing netto prints.
#[test]
fn headers_from_the_file_reach_the_receiver_and_no_command_line() {
    const TOKEN: &str = "netto-test-token-5b1f";
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(
        file,
        "# the collector's\nAuthorization: Bearer {TOKEN}\nX-Scope-OrgID: tenant-7"
    )
    .unwrap();
    let path = file.path().to_str().unwrap();
    for protocol in PROTOCOLS {
        let receiver = Receiver::start(&[], None);
        let serve = serve_pushing(
            &receiver.endpoint(protocol),
            protocol,
            &["--otlp-headers-file", path],
        );
        let exports = receiver.until(Duration::from_secs(30), |got| !got.is_empty());
        assert_eq!(
            exports[0]["headers"],
            serde_json::json!({
                "authorization": format!("Bearer {TOKEN}"),
                "x-scope-orgid": "tenant-7",
            }),
            "{protocol}"
        );
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
                assert!(
                    !String::from_utf8_lossy(&cmdline).contains(TOKEN),
                    "{protocol}: the token on {:?}'s command line",
                    entry.path()
                );
            }
        }
        let (status, stderr) = serve.interrupt();
        assert!(status.success());
        assert!(!stderr.iter().any(|l| l.contains(TOKEN)), "{stderr:?}");
    }
}

/// `--otlp-budget`: a window after one that cost the exporter more CPU
/// than the budget allows is dropped (`over_budget`) instead of drawn, and
/// the one after that is sent again. At the lowest budget, 0.1 % of a 1 s
/// window (1 ms), drawing and sending a window here costs more than that.
#[test]
fn a_window_past_the_exporters_budget_is_dropped_not_drawn() {
    let receiver = Receiver::start(&[], None);
    let serve = serve_pushing(
        &receiver.endpoint("grpc"),
        "grpc",
        &["--otlp-budget", "0.1", "--speed", "4"],
    );
    let over = "netto_otlp_windows_dropped_total{reason=\"over_budget\"}";
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&serve, over) < 2.0 || metric(&serve, "netto_otlp_windows_sent_total") < 2.0 {
        assert!(
            Instant::now() < deadline,
            "{} over budget, {} sent",
            metric(&serve, over),
            metric(&serve, "netto_otlp_windows_sent_total")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, _) = serve.interrupt();
    assert!(status.success());
}

/// A CA and a certificate for `localhost` it signed (rustls takes no CA
/// as a server's own certificate), made with openssl in `dir`: (the CA's
/// certificate, the server's certificate, its key).
fn certificates(dir: &Path) -> [PathBuf; 3] {
    let [ca_key, ca, key, request, cert, extensions] = [
        "ca.key",
        "ca.pem",
        "server.key",
        "server.csr",
        "server.pem",
        "server.ext",
    ]
    .map(|name| dir.join(name));
    let openssl = |args: &[&str]| {
        common::venv::run_ok(Command::new("openssl").args(args).current_dir(dir));
    };
    let path = |p: &PathBuf| p.to_str().unwrap().to_owned();
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=netto test CA",
        "-keyout",
        &path(&ca_key),
        "-out",
        &path(&ca),
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        &path(&key),
        "-out",
        &path(&request),
    ]);
    std::fs::write(&extensions, "subjectAltName=DNS:localhost\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        &path(&request),
        "-CA",
        &path(&ca),
        "-CAkey",
        &path(&ca_key),
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        &path(&extensions),
        "-out",
        &path(&cert),
    ]);
    [ca, cert, key]
}

/// https:// with --otlp-ca-file: the receiver gets the same profiles over
/// TLS, by either protocol; a receiver whose certificate that CA did not
/// sign gets nothing (the windows are dropped as rejected or unreachable).
#[test]
fn https_checks_the_receiver_against_the_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key] = certificates(dir.path());
    let receiver = Receiver::start(
        &["--tls", cert.to_str().unwrap(), key.to_str().unwrap()],
        None,
    );
    let samples = folded_total("samples");
    for protocol in PROTOCOLS {
        let port = if protocol == "grpc" {
            receiver.grpc
        } else {
            receiver.http
        };
        let to = format!("https://localhost:{port}");
        let serve = serve_pushing(
            &to,
            protocol,
            &["--speed", "4", "--otlp-ca-file", ca.to_str().unwrap()],
        );
        let exports = receiver.until(Duration::from_secs(60), |got| {
            total(got, "samples") >= samples
        });
        assert_eq!(total(&exports, "samples"), samples, "{protocol}");
        assert!(exports.iter().all(|e| e["protocol"] == protocol));
        let (status, _) = serve.interrupt();
        assert!(status.success());
        // Another CA (the server's own certificate is no CA) trusts nothing.
        let serve = serve_pushing(&to, protocol, &["--otlp-ca-file", cert.to_str().unwrap()]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while dropped(&serve) < 1.0 {
            assert!(Instant::now() < deadline, "{protocol}: nothing dropped");
            std::thread::sleep(Duration::from_millis(250));
        }
        assert_eq!(metric(&serve, "netto_otlp_windows_sent_total"), 0.0);
        let (status, _) = serve.interrupt();
        assert!(status.success());
    }
    assert!(
        receiver.exports.try_recv().is_err(),
        "an export past a bad certificate"
    );
}

/// `report --format otlp` writes what a push holds, for the whole
/// recording: the receiver's decoding of the file adds up to the folded
/// stacks exactly.
#[test]
fn report_format_otlp_is_the_folded_stacks_in_otlp() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.otlp");
    let run = netto(&["report", RECORDING, "-o", file.to_str().unwrap()]);
    assert!(run.status.success(), "{run:?}");
    let out = common::venv::run_ok(
        Command::new(python())
            .arg(RECEIVER)
            .args(["--decode", file.to_str().unwrap()]),
    );
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    let exports = [export];
    assert_eq!(total(&exports, "cpu"), folded_total("time"));
    assert_eq!(total(&exports, "samples"), folded_total("samples"));
    assert_eq!(exports[0]["addresses"], 0);
    assert_eq!(
        exports[0]["resource"]["host.name"],
        recording().header.host.as_str()
    );
}

/// A port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_receiver_gone_or_hung_costs_the_snapshots_nothing() {
    let hung = Receiver::start(&["--stall"], None);
    for (to, protocol, reason) in [
        (
            format!("http://127.0.0.1:{}", closed_port()),
            "grpc",
            "unreachable",
        ),
        (
            hung.endpoint("http/protobuf"),
            "http/protobuf",
            "queue_full",
        ),
        (hung.endpoint("grpc"), "grpc", "queue_full"),
    ] {
        let started = Instant::now();
        // The recording's 6 s at its own pace: every snapshot on time.
        let serve = serve_pushing(&to, protocol, &[]);
        serve.wait_ended();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(12), "{to} {protocol}: {took:?}");
        assert_eq!(metric(&serve, "netto_intervals_total"), 6.0);
        let series = format!("netto_otlp_windows_dropped_total{{reason=\"{reason}\"}}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while metric(&serve, &series) < 1.0 {
            assert!(Instant::now() < deadline, "{to} {protocol}: no {series}");
            std::thread::sleep(Duration::from_millis(500));
        }
        assert_eq!(metric(&serve, "netto_otlp_windows_sent_total"), 0.0);
        let (status, _) = serve.interrupt();
        assert!(status.success(), "{to} {protocol}");
    }
}

#[test]
fn sending_resumes_when_the_receiver_comes_back() {
    for protocol in PROTOCOLS {
        let receiver = Receiver::start(&[], None);
        let ports = (receiver.grpc, receiver.http);
        let serve = serve_pushing(&receiver.endpoint(protocol), protocol, &["--speed", "0.5"]);
        receiver.until(Duration::from_secs(20), |got| !got.is_empty());
        drop(receiver);
        let unreachable = "netto_otlp_windows_dropped_total{reason=\"unreachable\"}";
        let deadline = Instant::now() + Duration::from_secs(20);
        while metric(&serve, unreachable) < 1.0 {
            assert!(Instant::now() < deadline, "{protocol}: nothing dropped");
            std::thread::sleep(Duration::from_millis(250));
        }
        let sent = metric(&serve, "netto_otlp_windows_sent_total");
        let again = Receiver::start(&[], Some(ports));
        again.until(Duration::from_secs(30), |got| !got.is_empty());
        // Counted once the receiver's answer is in, a moment after it has
        // the window.
        let deadline = Instant::now() + Duration::from_secs(10);
        while metric(&serve, "netto_otlp_windows_sent_total") <= sent {
            assert!(Instant::now() < deadline, "{protocol}: nothing sent again");
            std::thread::sleep(Duration::from_millis(100));
        }
        let (status, _) = serve.interrupt();
        assert!(status.success());
    }
}

#[test]
fn bad_otlp_options_are_one_line_and_exit_2() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut bad_headers = tempfile::NamedTempFile::new().unwrap();
    writeln!(bad_headers, "x-tenant: 7\nauthorization Bearer secret").unwrap();
    let missing = Path::new("/nonexistent/ca.pem");
    for (args, says) in [
        (vec!["--otlp-endpoint", "localhost:4317"], "not an http"),
        (vec!["--otlp-endpoint", "ftp://x:1"], "not an http"),
        (vec!["--otlp-endpoint", "http://x:99999"], "port"),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4317",
                "--otlp-interval",
                "0",
            ],
            "between",
        ),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4317",
                "--otlp-protocol",
                "udp",
            ],
            "udp",
        ),
        (vec!["--otlp-interval", "5"], "--otlp-endpoint"),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4317",
                "--otlp-interval",
                "600",
            ],
            "longer than --history",
        ),
        (
            vec!["--otlp-endpoint", "http://no-such-host.invalid:4317"],
            "cannot resolve",
        ),
        (
            vec![
                "--otlp-endpoint",
                "https://127.0.0.1:4317",
                "--otlp-ca-file",
                missing.to_str().unwrap(),
            ],
            "--otlp-ca-file",
        ),
        (
            vec![
                "--otlp-endpoint",
                "https://127.0.0.1:4317",
                "--otlp-ca-file",
                file.path().to_str().unwrap(),
            ],
            "no certificate",
        ),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4317",
                "--otlp-headers-file",
                "/nonexistent/headers",
            ],
            "--otlp-headers-file /nonexistent/headers: No such file",
        ),
        (
            vec![
                "--otlp-endpoint",
                "http://127.0.0.1:4317",
                "--otlp-headers-file",
                bad_headers.path().to_str().unwrap(),
            ],
            "line 2 is not `name: value`",
        ),
        (
            vec!["--otlp-headers-file", "/nonexistent/headers"],
            "--otlp-endpoint",
        ),
    ] {
        let mut all = vec!["serve", "--replay", RECORDING, "--listen", "127.0.0.1:0"];
        all.extend(&args);
        let out = netto(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(
            errors[0].starts_with("netto: error: "),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    }
}

/// Measuring for real (root, BPF): a receiver that is gone or hangs
/// never makes measuring step down, leaves it within its 1 % budget for
/// most intervals, with a snapshot every
/// interval and no step down on the exporter's account; the exporter's
/// CPU is exporting's (`export_percent`), apart from serving's and within
/// its 1 %; its windows are counted as dropped.
#[test]
fn live_measuring_pays_nothing_for_a_receiver_gone_or_hung() {
    let hung = Receiver::start(&["--stall"], None);
    for (to, protocol) in [
        (format!("http://127.0.0.1:{}", closed_port()), "grpc"),
        (hung.endpoint("http/protobuf"), "http/protobuf"),
    ] {
        let serve = Serve::start(&[
            "--interval",
            "1",
            "--otlp-endpoint",
            &to,
            "--otlp-protocol",
            protocol,
            "--otlp-interval",
            "1",
        ]);
        std::thread::sleep(Duration::from_secs(14));
        let lost = dropped(&serve);
        assert!(lost >= 3.0, "{protocol}: {lost} dropped");
        assert_eq!(metric(&serve, "netto_otlp_windows_sent_total"), 0.0);
        let history = serve.get("/api/v1/history").json();
        let snapshots = history.as_array().unwrap();
        // The page's cost table reads them from each snapshot.
        let pushed = &snapshots.last().unwrap()["overhead"]["otlp"];
        assert_eq!(pushed["sent_windows"], 0, "{pushed}");
        assert!(pushed["dropped_windows"].as_u64() >= Some(1), "{pushed}");
        // The first intervals pay for loading and verifying the programs.
        let judged = &snapshots[2..];
        assert!(judged.len() >= 10, "{} snapshots", snapshots.len());
        let figure = |s: &Value, field: &str| s["overhead"][field].as_f64().unwrap();
        // None lost, none late: each interval is the time since the last,
        // about the 1 s asked for.
        for pair in judged.windows(2) {
            let gap = pair[1]["ts"].as_f64().unwrap() - pair[0]["ts"].as_f64().unwrap();
            let interval = pair[1]["interval_s"].as_f64().unwrap();
            assert!(
                (gap - interval).abs() < 0.01,
                "{interval} s over a {gap} s gap"
            );
            assert!(interval < 1.5, "{interval} s");
        }
        let mut measuring: Vec<f64> = judged
            .iter()
            .map(|s| figure(s, "measuring_percent"))
            .collect();
        let serving: Vec<f64> = judged
            .iter()
            .map(|s| figure(s, "serving_percent"))
            .collect();
        let export: Vec<f64> = judged.iter().map(|s| figure(s, "export_percent")).collect();
        eprintln!(
            "{protocol}: measuring {measuring:.2?} %; serving {serving:.2?} %; \
             exporting {export:.3?} %"
        );
        // The exporter's thread is told apart from serving: drawing and
        // sending every window costs it something, within its 1 %.
        assert!(export.iter().sum::<f64>() > 0.0, "{export:?}");
        let mean = export.iter().sum::<f64>() / export.len() as f64;
        assert!(mean <= 1.0, "exporting {export:?}");
        assert!(metric(&serve, "netto_export_cpu_seconds_total") > 0.0);
        for s in judged {
            // A step down only ever answers measuring over its budget (on
            // a shared host, others' work runs the exact hooks too); the
            // exporter's cost, serving's, never takes one.
            if s["budget"]["change"]["kind"] == "down" {
                let budget = s["budget"]["percent"].as_f64().unwrap();
                assert!(figure(s, "measuring_percent") > budget, "{}", s["overhead"]);
            }
        }
        measuring.sort_by(f64::total_cmp);
        assert!(
            measuring[measuring.len() / 2] <= 1.0,
            "measuring {measuring:?}"
        );
        let mean = serving.iter().sum::<f64>() / serving.len() as f64;
        assert!(mean <= 2.5, "serving {serving:?}");
        let (status, lines) = serve.signal(libc::SIGTERM);
        assert!(status.success(), "{status}: {lines:?}");
    }
}
