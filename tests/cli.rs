//! netto as a user runs it: `check` on this kernel, bad input, missing
//! privileges, and being killed. Needs root and BPF (CI runs it for real).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{
    assert_clean_failure, netto, netto_links, netto_programs_loaded, wait_for_line, NETTO,
};
use serde_json::Value;

#[test]
fn check_reports_this_kernel_and_picks_the_tracepoint_backend() {
    let out = netto(&["check", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["backend"], "tracepoint");
    assert_eq!(report["can_run"], true);
    // auto wanted fentry and could not have it: every run says so
    // briefly, check gives the cause.
    let why = report["why"].as_str().unwrap();
    assert!(
        why.contains("backend tracepoint: fentry/fexit unavailable here (`netto check` says why)"),
        "{why}"
    );
    let problem = report["fentry_problem"].as_str().unwrap();
    assert!(
        problem.contains("not permitted")
            && problem.contains("the function tracer (ftrace) is locked down here"),
        "{problem}"
    );
    // The tracepoint backend saw each of netto's own loopback socket calls.
    let calls = report["self_check"]["calls"].as_array().unwrap();
    let names: Vec<&str> = calls.iter().map(|c| c["call"].as_str().unwrap()).collect();
    for call in [
        "sendto", "sendmsg", "sendmmsg", "write", "writev", "sendfile", "recvfrom", "recvmsg",
        "recvmmsg", "read", "readv",
    ] {
        assert!(names.contains(&call), "{call} not checked: {names:?}");
    }
    assert!(calls.iter().all(|c| c["seen"] == true), "{calls:?}");
    let features = &report["features"];
    // ftrace is locked down on this machine: function hooks are refused.
    assert_eq!(features["fentry_fexit"]["ok"], false, "{features}");
    let detail = features["fentry_fexit"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("not permitted") && detail.contains("locked down"),
        "{detail}"
    );
    for present in [
        "privileges",
        "btf",
        "task_storage",
        "tracepoints",
        "perf_events",
        "xdp",
        "bpf_stats",
        "kallsyms",
        "attribution",
    ] {
        assert_eq!(
            features[present]["ok"], true,
            "{present}: {}",
            features[present]
        );
    }

    // Every delivery point is here, so nothing is left out for lack of one.
    let attribution = features["attribution"]["detail"].as_str().unwrap();
    assert!(
        attribution.contains("cgroup v2 at /sys/fs/cgroup")
            && attribution.contains(&format!(
                "all {} delivery points present",
                netto::kernel::tracepoints::POINTS.len()
            )),
        "{attribution}"
    );

    let text = netto(&["check"]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("fentry_fexit   no"), "{text}");
    assert!(
        text.contains("backend tracepoint: fentry/fexit unavailable here"),
        "{text}"
    );
    // The cause, and what the fallback costs, said here and nowhere else.
    assert!(
        text.contains("no fentry      fentry/fexit: load refused: Operation not permitted")
            && text.contains("cost           the tracepoint backend runs on every system call"),
        "{text}"
    );
    assert!(
        text.contains("self-check     tracepoint: saw 13 of 13 kinds of socket call"),
        "{text}"
    );

    // Whether pods and containers get their names here, and why not.
    let logs = tempfile::tempdir().unwrap();
    let kubelet_names = |root: &std::path::Path| {
        let root = root.to_str().unwrap();
        let out = netto(&["check", "--json", "--kubelet-logs", root]);
        assert!(out.status.success());
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names = &report["kubelet_names"];
        (
            names["ok"].as_bool().unwrap(),
            names["detail"].as_str().unwrap().to_owned(),
        )
    };
    let (ok, why) = kubelet_names(&logs.path().join("absent"));
    assert!(!ok);
    assert!(
        why.contains("absent/containers: No such file")
            && why.contains("--by cgroup shows pods by uid and containers by id"),
        "{why}"
    );
    let uid = "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";
    let pod = logs.path().join(format!("pods/shop_web-1_{uid}/nginx"));
    std::fs::create_dir_all(&pod).unwrap();
    std::fs::create_dir(logs.path().join("containers")).unwrap();
    std::os::unix::fs::symlink(
        pod.join("0.log"),
        logs.path().join(format!(
            "containers/web-1_shop_nginx-{}.log",
            "a".repeat(64)
        )),
    )
    .unwrap();
    let (ok, detail) = kubelet_names(logs.path());
    assert!(ok, "{detail}");
    assert!(detail.ends_with(": 1 containers, 1 pods"), "{detail}");
}

#[test]
fn bad_input_is_one_line_and_non_zero() {
    for (args, mentions) in [
        (&["stat", "--backend", "fentry"][..], "fentry"),
        (&["stat", "--backend", "nope"], "nope"),
        (&["stat", "--interval", "0"], "--interval"),
        (&["stat", "--interval", "-1"], "--interval"),
        (&["stat", "--duration", "-3"], "--duration"),
        (&["stat", "--duration", "1e15"], "--duration"),
        (&["stat", "--duration", "soon"], "--duration"),
        (&["stat", "--budget", "0"], "--budget"),
        (&["serve", "--budget", "101"], "--budget"),
        (
            &[
                "record",
                "--budget",
                "x",
                "--duration",
                "1",
                "-o",
                "/tmp/x.svg",
            ],
            "--budget",
        ),
        (&["stat", "--tier", "nosuch"], "nosuch"),
        (&["stat", "--tier", "sampled", "--by", "cgroup"], "--tier"),
        (&["stat", "--calibrate-every", "0"], "--calibrate-every"),
        (&["stat", "--calibrate-every", "soon"], "--calibrate-every"),
        (&["bogus"], "bogus"),
    ] {
        assert_clean_failure(&netto(args), mentions);
    }
    assert_eq!(netto(&["stat", "--budget", "0"]).status.code(), Some(2));
    // Every error netto prints has one form; a tip and the commands there
    // are go on lines of their own.
    let stderr = |args: &[&str]| String::from_utf8(netto(args).stderr).unwrap();
    assert_eq!(
        stderr(&["frobnicate"]),
        "netto: error: unrecognized subcommand 'frobnicate'\n  \
         commands: stat, check, record, report, top, serve, sketch, completions, man\n"
    );
    assert_eq!(
        stderr(&["stat", "--interva", "1"]),
        "netto: error: unexpected argument '--interva' found\n  \
         tip: a similar argument exists: '--interval'\n"
    );
    assert_eq!(
        stderr(&["report", "/nonexistent.json", "-o", "/tmp/x.svg"]),
        "netto: error: cannot read /nonexistent.json: No such file or directory (os error 2)\n"
    );
}

#[test]
fn unprivileged_user_gets_an_explanation() {
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .args([NETTO, "stat", "--duration", "1"])
        .output()
        .expect("setpriv (util-linux)");
    assert_clean_failure(&out, "needs root");
    let check = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .args([NETTO, "check"])
        .output()
        .unwrap();
    assert!(
        !check.status.success(),
        "check must fail when netto cannot run"
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("needs root"));
}

#[test]
fn stat_runs_for_its_duration_and_exits_zero() {
    let started = Instant::now();
    let out = netto(&["stat", "--interval", "0.5", "--duration", "1.2", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "0.5 + 0.5 + a final 0.2 s interval");
    assert!((lines[2]["interval_s"].as_f64().unwrap() - 0.2).abs() < 0.1);
    for line in &lines {
        assert_eq!(line["backend"], "tracepoint");
        assert!(line["overhead"]["bpf_stats"].as_bool().unwrap());
        assert!(!line["overhead"]["programs"].as_array().unwrap().is_empty());
    }
    assert!(started.elapsed() < Duration::from_secs(30));

    let off = netto(&["stat", "--duration", "0.3", "--json", "--no-bpf-stats"]);
    assert!(off.status.success());
    let line: Value =
        serde_json::from_slice(off.stdout.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(line["overhead"]["bpf_stats"], false);
    assert!(line["overhead"]["programs"].as_array().unwrap().is_empty());
    // The cost is then the processes' alone, and no estimate.
    assert!(line["overhead"]["cost_percent"].as_f64().unwrap() > 0.0);
    assert_eq!(line["overhead"]["estimated"], false);
}

/// A reader that goes away (`netto stat | head -1`) ends the run as a stop
/// does: quietly, exit 0, nothing left attached.
#[test]
fn a_reader_that_goes_away_ends_stat_quietly() {
    wait_until_no_netto_programs("before the test");
    let mut child = Command::new(NETTO)
        .args(["stat", "--json", "--interval", "0.2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = common::forward_lines(child.stderr.take().unwrap());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut child = common::Guarded(child);
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let _: Value = serde_json::from_str(&first).expect("a JSON snapshot");
    drop(stdout);
    let status = common::exit_within(
        &mut child.0,
        Duration::from_secs(10),
        "netto still runs with no reader",
    );
    let said: Vec<String> = stderr.iter().collect();
    assert!(status.success(), "{status}: {said:?}");
    assert!(
        said.iter().all(|line| !line.starts_with("netto: error")),
        "{said:?}"
    );
    wait_until_no_netto_programs("after its reader left");
}

#[test]
fn sigkill_leaves_nothing_attached() {
    // The kernel frees a previous test's programs shortly after it exits.
    wait_until_no_netto_programs("before the test");
    let mut child = start_measuring(&["stat", "--json"]);
    let programs = netto_programs_loaded();
    assert!(programs >= 20, "netto's programs are not loaded");
    assert_eq!(
        netto_links(),
        programs,
        "every program attached through a link"
    );
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    wait_until_no_netto_programs("after SIGKILL");
}

/// netto running in the background, once its programs are attached.
/// Killed on drop, so a failed assertion leaves no netto running.
fn start_measuring(args: &[&str]) -> common::Guarded {
    let mut child = Command::new(NETTO)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    wait_for_line(stderr, "netto: measuring", Duration::from_secs(30));
    common::Guarded(child)
}

fn wait_until_no_netto_programs(when: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while netto_programs_loaded() > 0 {
        assert!(
            Instant::now() < deadline,
            "netto programs still loaded {when}"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

fn demo_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with("netto-demo-"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn demo_load_shows_network_time_and_is_removed_on_exit() {
    let out = netto(&[
        "stat",
        "--demo",
        "--duration",
        "3",
        "--json",
        "--by",
        "process",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("demo traffic: TCP") && stderr.contains("paced to 1 Gbit/s"),
        "{stderr}"
    );
    let snapshots: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    // The demo's process has a name of its own (not `exe`), and at its
    // default rate it takes a modest share of a CPU (flat out, it took
    // more than one).
    let demo_ns: Vec<f64> = snapshots
        .iter()
        .map(|v| {
            let groups = v["attribution"]["groups"].as_array().unwrap();
            let ns: u64 = groups
                .iter()
                .filter(|g| g["label"] == "netto-demo")
                .flat_map(|g| g["events"].as_object().unwrap().values())
                .map(|ns| ns.as_u64().unwrap())
                .sum();
            ns as f64 / v["interval_s"].as_f64().unwrap()
        })
        .collect();
    assert!(
        demo_ns.iter().any(|&ns| ns > 0.0),
        "no group named netto-demo: {snapshots:?}"
    );
    assert!(
        demo_ns.iter().all(|&ns| ns < 0.5e9),
        "the demo's network time per second: {demo_ns:?}"
    );
    let busiest = snapshots
        .iter()
        .map(|v| {
            (
                v["events"]["net_rx_softirq"]["total_ns"].as_u64().unwrap(),
                v["events"]["sock_send"]["total_ns"].as_u64().unwrap(),
            )
        })
        .max()
        .unwrap();
    assert!(busiest.0 > 5_000_000, "demo NET_RX only {} ns", busiest.0);
    assert!(
        busiest.1 > 5_000_000,
        "demo sock_send only {} ns",
        busiest.1
    );
    assert!(demo_namespaces().is_empty(), "left {:?}", demo_namespaces());
}

#[test]
fn demo_auto_runs_only_when_the_host_network_is_idle() {
    let idle = netto(&["stat", "--demo=auto", "--duration", "1"]);
    assert!(idle.status.success());
    let stderr = String::from_utf8_lossy(&idle.stderr);
    assert!(
        stderr.contains("demo traffic: TCP"),
        "idle host, no demo:\n{stderr}"
    );

    // UDP on loopback: its sends alone are far above the idle threshold.
    let quiet =
        |mut command: Command| common::Guarded(command.stdout(Stdio::null()).spawn().unwrap());
    let _sink = quiet(common::loadgen(
        "discard --proto udp --listen 127.0.0.1:47011 --duration 10",
    ));
    let _busy = quiet(common::loadgen(
        "send --proto udp --syscall sendto --dest 127.0.0.1:47011 --duration 10",
    ));
    thread::sleep(Duration::from_millis(300));
    let busy = netto(&["stat", "--demo=auto", "--duration", "1"]);
    assert!(busy.status.success());
    let stderr = String::from_utf8_lossy(&busy.stderr);
    assert!(
        !stderr.contains("demo traffic"),
        "demo on a busy host:\n{stderr}"
    );
    assert!(demo_namespaces().is_empty(), "left {:?}", demo_namespaces());
}

#[test]
fn sigkill_with_demo_still_removes_the_namespace() {
    let before = demo_namespaces().len();
    let mut child = start_measuring(&["stat", "--demo"]);
    assert_eq!(demo_namespaces().len(), before + 1);
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !demo_namespaces().is_empty() || netto_programs_loaded() > 0 {
        assert!(
            Instant::now() < deadline,
            "left {:?} after SIGKILL",
            demo_namespaces()
        );
        thread::sleep(Duration::from_millis(100));
    }
}
