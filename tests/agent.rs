//! netto as a node agent: the systemd unit passes `systemd-analyze verify`
//! and its capabilities, given to an unprivileged user, are enough for
//! `netto serve` and each one is needed; the shell completions and manual
//! pages generated from the command line's definitions name every command
//! and pass bash's and man's own checks.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use common::serve::Serve;
use common::{netto, NETTO};

const UNIT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/netto.service");
const INSTALLED: &str = "/usr/local/bin/netto";

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
    for needed in [
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

#[test]
fn the_units_capabilities_are_enough_and_each_is_needed() {
    let caps = unit_capabilities();
    assert_eq!(caps, ["bpf", "perfmon", "syslog"]);

    let (_dir, binary) = netto_for_nobody();
    let serve = Serve::spawn(serve_as_nobody(&binary, &caps));
    let deadline = Instant::now() + Duration::from_secs(20);
    while serve.get("/api/v1/source").json()["snapshots"].as_u64() < Some(2) {
        assert!(Instant::now() < deadline, "no snapshots as nobody");
        std::thread::sleep(Duration::from_millis(100));
    }
    let source = serve.get("/api/v1/source").json();
    assert_eq!(source["source"]["origin"], "live");
    let snapshot = serve.get("/api/v1/snapshot").json();
    assert_eq!(snapshot["sampling"]["frequency_hz"], 99, "{snapshot}");
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
        let fewer: Vec<String> = caps.iter().filter(|c| *c != missing).cloned().collect();
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
