//! netto as a node agent: the systemd unit passes `systemd-analyze verify`
//! and its capabilities, given to an unprivileged user, are enough for
//! `netto serve` and each one is needed; the Kubernetes manifests pass
//! `kubernetes-validate --strict` and grant the unit's privileges and no
//! more, the image's way of granting them (file capabilities) works; the
//! shell completions and manual pages generated from the command line's
//! definitions name every command and pass bash's and man's own checks.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};
use common::serve::Serve;
use common::venv::run_ok;
use common::{netto, NETTO};

const UNIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/netto.service");
const INSTALLED: &str = "/usr/local/bin/netto";
const DAEMONSET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/dist/kubernetes/daemonset.yaml"
);
const NETWORK_POLICY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/dist/kubernetes/networkpolicy.yaml"
);
const CONTAINERFILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/kubernetes/Containerfile");
const AGENT_PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/agent.md");
/// kubernetes-validate and what it imports, pinned.
const VALIDATE_PINS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/kubernetes-validate.txt"
);
/// The Kubernetes version the manifests are validated against: the
/// newest whose schemas the pinned kubernetes-validate bundles.
const KUBERNETES_VERSION: &str = "1.37.0";

fn stdout_of(args: &[&str]) -> String {
    let out = netto(args);
    assert!(
        out.status.success(),
        "netto {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The commands a user can name (not the demo traffic's hidden child).
fn commands() -> Vec<String> {
    netto::cli::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_owned())
        .collect()
}

fn unit_setting<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .flat_map(str::split_whitespace)
        .collect()
}

/// The unit's capabilities as setpriv names them (`bpf`, `perfmon`, ...).
fn unit_capabilities() -> Vec<String> {
    let unit = std::fs::read_to_string(UNIT).unwrap();
    let ambient = unit_setting(&unit, "AmbientCapabilities");
    assert_eq!(ambient, unit_setting(&unit, "CapabilityBoundingSet"));
    ambient
        .iter()
        .map(|c| c.strip_prefix("CAP_").unwrap().to_ascii_lowercase())
        .collect()
}

/// The unit's ExecStart arguments after the binary.
fn unit_arguments() -> Vec<String> {
    let unit = std::fs::read_to_string(UNIT).unwrap();
    let exec = unit_setting(&unit, "ExecStart");
    assert_eq!(exec[0], INSTALLED);
    exec[1..].iter().map(|&a| a.to_owned()).collect()
}

#[test]
fn the_unit_passes_systemd_analyze_verify() {
    let dir = tempfile::tempdir().unwrap();
    // verify runs the ExecStart binary's existence check and `man` on
    // Documentation=: point both at what this build makes.
    let unit = std::fs::read_to_string(UNIT)
        .unwrap()
        .replace(INSTALLED, NETTO);
    let path = dir.path().join("netto.service");
    std::fs::write(&path, unit).unwrap();
    let man1 = dir.path().join("man/man1");
    std::fs::create_dir_all(&man1).unwrap();
    std::fs::write(man1.join("netto.1"), stdout_of(&["man"])).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .env("MANPATH", dir.path().join("man"))
        .output()
        .expect("running systemd-analyze");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "{stderr}");

    // Without the man page, verify fails: the check above is a real one.
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .env("MANPATH", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());

    let text = std::fs::read_to_string(UNIT).unwrap();
    assert!(!unit_arguments().contains(&"--no-bpf-stats".to_owned()));
    for needed in [
        "SystemCallFilter=~@mount @swap @reboot @module @raw-io",
        "RestrictNamespaces=yes",
        "LimitNOFILE=1048576",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
    ] {
        assert!(text.lines().any(|l| l == needed), "{needed}");
    }
    // Either would take what netto needs: /proc/kallsyms, CAP_SYSLOG.
    for refused in [
        "ProtectKernelTunables=yes",
        "ProtectKernelLogs=yes",
        "User=root",
    ] {
        assert!(!text.lines().any(|l| l == refused), "{refused}");
    }
}

/// The netto binary where user nobody can run it: the build's own path
/// may be under a directory only root can enter (a clone in /root).
fn netto_for_nobody() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let binary = dir.path().join("netto");
    std::fs::copy(NETTO, &binary).unwrap();
    (dir, binary)
}

/// Whether /proc/kallsyms shows addresses only with CAP_SYSLOG
/// (kptr_restrict 1, or 0 with perf_event_paranoid above 1).
fn kallsyms_needs_syslog() -> bool {
    let sysctl = |name: &str| -> i64 {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (kptr_restrict, paranoid) = (sysctl("kptr_restrict"), sysctl("perf_event_paranoid"));
    kptr_restrict == 1 || (kptr_restrict == 0 && paranoid > 1)
}

/// `netto serve` as the unit runs it, as user nobody with only `caps`.
fn serve_as_nobody(binary: &Path, caps: &[String]) -> Command {
    let set = caps.iter().map(|c| format!(",+{c}")).collect::<String>();
    let mut command = Command::new("setpriv");
    command
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--no-new-privs",
        ])
        .arg(format!("--inh-caps=-all{set}"))
        .arg(format!("--ambient-caps=-all{set}"))
        .arg(format!("--bounding-set=-all{set}"))
        .arg(binary)
        .args(unit_arguments());
    command
}

/// [`serve_as_nobody`] once it has delivered two snapshots.
fn serve_until_snapshots(binary: &Path, caps: &[String]) -> Serve {
    let serve = Serve::spawn(serve_as_nobody(binary, caps));
    let deadline = Instant::now() + Duration::from_secs(20);
    while serve.get("/api/v1/source").json()["snapshots"].as_u64() < Some(2) {
        assert!(
            Instant::now() < deadline,
            "no snapshots as nobody with {caps:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    serve
}

#[test]
fn the_units_capabilities_are_enough_and_each_is_needed() {
    let caps = unit_capabilities();
    assert_eq!(caps, ["bpf", "perfmon", "syslog", "sys_admin"]);

    let (_dir, binary) = netto_for_nobody();
    let serve = serve_until_snapshots(&binary, &caps);
    let source = serve.get("/api/v1/source").json();
    assert_eq!(source["source"]["origin"], "live");
    let snapshot = serve.get("/api/v1/snapshot").json();
    assert_eq!(snapshot["sampling"]["frequency_hz"], 99, "{snapshot}");
    // The unit's budget prices netto's own programs.
    assert_eq!(snapshot["overhead"]["bpf_stats"], true, "{snapshot}");
    let knobs = snapshot["budget"]["knobs"].as_array().unwrap();
    assert!(
        knobs.iter().any(|k| k["knob"] == "exact_hooks"),
        "{snapshot}"
    );
    assert_eq!(serve.get("/debug/pprof/profile?seconds=5").status, 200);
    let status = std::fs::read_to_string(format!("/proc/{}/status", serve.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.contains("65534")),
        "{status}"
    );
    drop(serve);

    for missing in &caps {
        if missing == "syslog" && !kallsyms_needs_syslog() {
            continue; // this host shows kallsyms addresses to anyone
        }
        // The kernel takes CAP_SYS_ADMIN for CAP_BPF and CAP_PERFMON: those
        // two are what netto needs once it is gone.
        let implied = ["bpf", "perfmon"].contains(&missing.as_str());
        let fewer: Vec<String> = caps
            .iter()
            .filter(|c| *c != missing && !(implied && *c == "sys_admin"))
            .cloned()
            .collect();
        if missing == "sys_admin" {
            // Measures and serves, but cannot price its programs.
            let serve = serve_until_snapshots(&binary, &fewer);
            let snapshot = serve.get("/api/v1/snapshot").json();
            assert_eq!(snapshot["overhead"]["bpf_stats"], false, "{snapshot}");
            let knobs = &snapshot["budget"]["knobs"];
            assert!(
                knobs.as_array().is_none_or(Vec::is_empty),
                "no prices: {snapshot}"
            );
            continue;
        }
        let mut command = serve_as_nobody(&binary, &fewer);
        let child = command
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = common::Guarded(child);
        let status = common::exit_within(
            &mut child.0,
            Duration::from_secs(20),
            &format!("serve ran without CAP_{missing}"),
        );
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(!status.success(), "without CAP_{missing}: {stderr}");
        let last = stderr.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("netto: error: "),
            "without CAP_{missing}: {stderr}"
        );
    }
}

#[test]
fn completions_name_every_command_and_bash_parses_them() {
    let commands = commands();
    assert!(commands.len() >= 9, "{commands:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {script}");
        for command in &commands {
            assert!(script.contains(command.as_str()), "{shell} lacks {command}");
        }
        assert!(
            script.contains("--format"),
            "{shell} lacks record's options"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let bash = dir.path().join("netto.bash");
    std::fs::write(&bash, stdout_of(&["completions", "bash"])).unwrap();
    let out = Command::new("bash").arg("-n").arg(&bash).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Loaded into a shell, it completes `netto rec` to `record`.
    let probe = format!(
        "source {}; COMP_WORDS=(netto rec); COMP_CWORD=1; _netto netto rec netto; echo \"${{COMPREPLY[@]}}\"",
        bash.display()
    );
    let out = Command::new("bash").arg("-c").arg(probe).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "record");

    let out = netto(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `man -l` of a page: its text, with groff's warnings as a failure.
fn render(page: &str, dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, page).unwrap();
    let out = Command::new("man")
        .arg("-l")
        .arg(&path)
        .env("MANWIDTH", "100")
        .output()
        .expect("running man");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&path)
        .output()
        .expect("running groff");
    let warnings = String::from_utf8_lossy(&groff.stderr);
    assert!(
        groff.status.success() && warnings.is_empty(),
        "{name}: {warnings}"
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn manual_pages_name_every_command_and_render() {
    let dir = tempfile::tempdir().unwrap();
    let main = render(&stdout_of(&["man"]), dir.path(), "netto.1");
    for section in ["NAME", "SYNOPSIS", "OPTIONS", "SUBCOMMANDS"] {
        assert!(main.contains(section), "{section} missing from {main}");
    }
    for command in commands() {
        assert!(main.contains(&format!("netto-{command}(1)")), "{command}");
        let page = render(&stdout_of(&["man", &command]), dir.path(), "page.1");
        assert!(page.contains(&format!("netto-{command}")), "{page}");
        assert!(
            page.contains("OPTIONS") || command == "man",
            "{command}: {page}"
        );
    }
    let record = render(&stdout_of(&["man", "record"]), dir.path(), "record.1");
    assert!(record.contains("pprof"), "{record}");

    let out = netto(&["man", "nonesuch"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nonesuch"));
}

/// A virtual environment holding the pinned kubernetes-validate (from
/// PyPI; its schemas are in the package, so it validates offline); once
/// per run of the tests, whichever asks first.
fn kubernetes_validate() -> &'static Path {
    static VENV: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    VENV.get_or_init(|| common::venv::pinned("kubernetes-validate", VALIDATE_PINS))
}

fn validate_strict(venv: &Path, files: &[&Path]) -> std::process::Output {
    Command::new(venv.join("bin/kubernetes-validate"))
        .args(["--strict", "--kubernetes-version", KUBERNETES_VERSION])
        .args(files)
        .output()
        .expect("running kubernetes-validate")
}

/// The documents of a YAML file as JSON, read by the environment's
/// PyYAML.
fn yaml_documents(venv: &Path, file: &str) -> Vec<serde_json::Value> {
    let out = run_ok(Command::new(venv.join("bin/python")).args([
        "-c",
        "import json, sys, yaml; json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)",
        file,
    ]));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_manifests_pass_kubernetes_validate_strict() {
    let venv = kubernetes_validate();
    let out = validate_strict(venv, &[Path::new(DAEMONSET), Path::new(NETWORK_POLICY)]);
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    for resource in [
        "namespace/netto",
        "serviceaccount/netto",
        "daemonset/netto",
        "networkpolicy/netto",
    ] {
        assert!(
            said.contains(&format!("passed for resource {resource}")),
            "{said}"
        );
    }
    // A misspelt field fails: the check is a real one.
    let dir = tempfile::tempdir().unwrap();
    let misspelt = dir.path().join("daemonset.yaml");
    let text = std::fs::read_to_string(DAEMONSET).unwrap();
    assert!(text.contains("hostPID: true"));
    std::fs::write(&misspelt, text.replace("hostPID: true", "hostPid: true")).unwrap();
    let out = validate_strict(venv, &[&misspelt]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("hostPid"));
}

/// The DaemonSet grants what the unit grants (its capabilities, its
/// arguments) and no more: not privileged, not root, no host network,
/// only read-only mounts of what netto reads; the NetworkPolicy covers
/// its pods and port; the image sets the same capabilities; the docs'
/// table says what each is for.
#[test]
fn the_manifest_holds_the_units_privileges_and_no_more() {
    let venv = kubernetes_validate();
    let documents = yaml_documents(venv, DAEMONSET);
    let kinds: Vec<&str> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Namespace", "ServiceAccount", "DaemonSet"]);
    let daemonset = &documents[2];
    let pod = &daemonset["spec"]["template"]["spec"];
    assert_eq!(pod["hostPID"], true);
    assert!(pod["hostNetwork"] != true && pod["hostIPC"] != true);
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(documents[1]["automountServiceAccountToken"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 65534);
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let security = &container["securityContext"];
    assert_eq!(security["privileged"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    let added: Vec<String> = security["capabilities"]["add"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_ascii_lowercase())
        .collect();
    let caps = unit_capabilities();
    assert_eq!(added, caps);
    // The image's binary carries the same ones.
    let containerfile = std::fs::read_to_string(CONTAINERFILE).unwrap();
    let setcap: Vec<String> = caps.iter().map(|c| format!("cap_{c}")).collect();
    assert!(
        containerfile.contains(&format!("setcap {}+ep", setcap.join(","))),
        "{containerfile}"
    );
    // One table in the docs says what each is for.
    let page = std::fs::read_to_string(AGENT_PAGE).unwrap();
    for cap in &caps {
        let row = format!("| `CAP_{}` |", cap.to_ascii_uppercase());
        assert!(page.contains(&row), "{row} missing from the agent page");
    }

    // serve as the unit runs it, listening on the pod's port.
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "serve");
    for arg in unit_arguments() {
        assert!(args.contains(&arg.as_str()), "{arg} missing from {args:?}");
    }
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert!(
        args.contains(&format!("--listen=0.0.0.0:{port}").as_str()),
        "{args:?}"
    );
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(container[probe]["httpGet"]["path"], "/healthz");
        assert_eq!(
            container[probe]["httpGet"]["port"],
            container["ports"][0]["name"]
        );
    }
    // The CPU request is serve's default budget (percent of one CPU).
    let netto::cli::Command::Serve(serve) = netto::cli::Cli::try_parse_from(["netto", "serve"])
        .unwrap()
        .into_command()
    else {
        unreachable!()
    };
    let budget = serve.source.measure.budget.0.unwrap();
    assert_eq!(
        container["resources"]["requests"]["cpu"],
        format!("{}m", budget * 10.0)
    );

    // Read-only mounts of what netto reads, and nothing else of the host.
    let mounts = container["volumeMounts"].as_array().unwrap();
    assert!(mounts.iter().all(|m| m["readOnly"] == true), "{mounts:?}");
    let host_paths: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["hostPath"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        host_paths,
        ["/sys/kernel/btf", "/sys/fs/cgroup", "/var/log/containers"]
    );

    // The NetworkPolicy: netto's pods, its port only, nothing out.
    let policies = yaml_documents(venv, NETWORK_POLICY);
    assert_eq!(policies.len(), 1);
    let policy = &policies[0]["spec"];
    assert_eq!(policy["podSelector"], daemonset["spec"]["selector"]);
    assert_eq!(
        policies[0]["metadata"]["namespace"],
        daemonset["metadata"]["namespace"]
    );
    assert_eq!(
        policy["policyTypes"],
        serde_json::json!(["Ingress", "Egress"])
    );
    assert_eq!(policy["egress"], serde_json::json!([]));
    let ingress = policy["ingress"].as_array().unwrap();
    assert_eq!(ingress.len(), 1);
    assert_eq!(
        ingress[0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": port}])
    );
}

/// What the image does: netto's binary with the unit's capabilities as
/// file capabilities, run by user nobody under a bounding set of just
/// those (what the DaemonSet's securityContext makes of `drop: [ALL]`,
/// `add: [...]` for a non-root user), measures and serves; its serving
/// process holds none of them.
#[test]
fn file_capabilities_as_the_image_sets_them_are_enough() {
    let caps = unit_capabilities();
    let (_dir, binary) = netto_for_nobody();
    let set: Vec<String> = caps.iter().map(|c| format!("cap_{c}")).collect();
    run_ok(
        Command::new("setcap")
            .arg(format!("{}+ep", set.join(",")))
            .arg(&binary),
    );
    let bounding: String = caps.iter().map(|c| format!(",+{c}")).collect();
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--inh-caps=-all", "--ambient-caps=-all"])
        .arg(format!("--bounding-set=-all{bounding}"))
        .arg(&binary)
        .args(unit_arguments());
    let serve = Serve::spawn(command);
    let deadline = Instant::now() + Duration::from_secs(20);
    while serve.get("/api/v1/source").json()["snapshots"].as_u64() < Some(2) {
        assert!(Instant::now() < deadline, "no snapshots as nobody");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(serve.get("/healthz").json()["status"], "ok");
    let snapshot = serve.get("/api/v1/snapshot").json();
    assert_eq!(snapshot["overhead"]["bpf_stats"], true, "{snapshot}");
    assert_eq!(serve.get("/debug/pprof/profile?seconds=5").status, 200);
    let status = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let netto = status(serve.pid());
    assert!(
        netto
            .lines()
            .any(|l| l.starts_with("Uid:") && l.contains("65534")),
        "{netto}"
    );
    let server = status(serve.server_pid());
    for field in ["CapEff", "CapPrm", "CapAmb"] {
        let line = server.lines().find(|l| l.starts_with(field)).unwrap();
        assert!(
            line.ends_with("0000000000000000"),
            "serving process: {line}"
        );
    }
}
