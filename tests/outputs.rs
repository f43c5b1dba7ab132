//! Where `record` and `report` write (`-o`): only regular files, never
//! through or over a symbolic link, a FIFO, a socket or a device, even with
//! --force, and without blocking on any of them; `-o -` is standard output;
//! the format comes from a known extension or --format, and an unknown one
//! is refused; every output is checked before anything is measured.
//! Reporting needs neither root nor BPF; the `record` test measures nothing
//! when it passes but loads BPF when it does not, so the file runs under the
//! machine lock.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{exit_within, Guarded, NETTO, RECORDING};
use netto::model::Recording;

/// netto with `args`, in `dir`; fails the test if it has not exited within
/// 20 s (a FIFO that blocks it must fail the test, not hang it).
fn netto_in(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(NETTO)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running netto");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stderr.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let mut child = Guarded(child);
    let status = exit_within(&mut child.0, Duration::from_secs(20), "netto did not exit");
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Failed with exit 1 and exactly `line` on stderr.
fn assert_refused(out: &Output, line: &str) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end(), line);
    assert!(out.stdout.is_empty());
}

fn report_to(dir: &Path, output: &str, extra: &[&str]) -> Output {
    let mut args = vec!["report", RECORDING, "-o", output];
    args.extend_from_slice(extra);
    netto_in(dir, &args)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_symbolic_link_is_neither_followed_nor_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("kept.svg");
    fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink("kept.svg", dir.path().join("out.svg")).unwrap();
    std::os::unix::fs::symlink("nowhere.svg", dir.path().join("dangling.svg")).unwrap();
    for name in ["out.svg", "dangling.svg"] {
        for force in [&[][..], &["--force"][..]] {
            assert_refused(
                &report_to(dir.path(), name, force),
                &format!(
                    "netto: error: {name} is a symbolic link; netto writes only regular files \
                     (use -o - for standard output)"
                ),
            );
        }
    }
    assert!(fs::symlink_metadata(dir.path().join("out.svg"))
        .unwrap()
        .is_symlink());
    assert!(fs::symlink_metadata(dir.path().join("dangling.svg"))
        .unwrap()
        .is_symlink());
    assert_eq!(fs::read_to_string(&target).unwrap(), "kept");
    assert_eq!(
        names_in(dir.path()),
        ["dangling.svg", "kept.svg", "out.svg"]
    );
}

#[test]
fn a_fifo_is_refused_at_once_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.svg");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for force in [&[][..], &["--force"][..]] {
        let started = Instant::now();
        let out = report_to(dir.path(), "out.svg", force);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_refused(
            &out,
            "netto: error: out.svg is a FIFO; netto writes only regular files \
             (use -o - for standard output)",
        );
    }
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names_in(dir.path()), ["out.svg"]);
}

#[test]
fn a_device_is_never_replaced() {
    // A node like /dev/null (character device 1:3), made here: a test never
    // risks a real /dev path.
    let dir = tempfile::tempdir().unwrap();
    let device = dir.path().join("null");
    nix::sys::stat::mknod(
        &device,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    )
    .expect("the tests run as root");
    let path = device.to_str().unwrap();
    assert_refused(
        &report_to(dir.path(), path, &["--force", "--format", "svg"]),
        &format!(
            "netto: error: {path} is a character device; netto writes only regular files \
             (use -o - for standard output)"
        ),
    );
    let kind = fs::symlink_metadata(&device).unwrap().file_type();
    assert!(kind.is_char_device());
    // A socket is refused the same way.
    let socket_path = dir.path().join("out.svg");
    let _socket = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    assert_refused(
        &report_to(dir.path(), "out.svg", &["--force"]),
        "netto: error: out.svg is a socket; netto writes only regular files \
         (use -o - for standard output)",
    );
    assert!(fs::symlink_metadata(&socket_path)
        .unwrap()
        .file_type()
        .is_socket());
}

#[test]
fn dash_is_standard_output_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let svg = report_to(dir.path(), "-", &[]);
    assert!(svg.status.success(), "{}", stderr_of(&svg));
    let text = String::from_utf8(svg.stdout.clone()).unwrap();
    assert!(
        text.starts_with("<?xml"),
        "{}",
        &text[..text.len().min(200)]
    );
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(&text, options).expect("well-formed SVG");
    assert_eq!(stderr_of(&svg).trim_end(), "netto: wrote standard output");

    let folded = report_to(dir.path(), "-", &["--format", "folded"]);
    assert!(folded.status.success(), "{}", stderr_of(&folded));
    let stacks = netto::frontends::flame::readback::parse_folded(&folded.stdout[..]).unwrap();
    assert!(!stacks.is_empty());

    let json = report_to(dir.path(), "-", &["--format", "json"]);
    assert!(json.status.success(), "{}", stderr_of(&json));
    let recording: Recording = serde_json::from_slice(&json.stdout).unwrap();
    let fixture = common::recording();
    assert_eq!(recording.snapshots.len(), fixture.snapshots.len());

    let pprof = report_to(dir.path(), "-", &["--format", "pprof"]);
    assert!(pprof.status.success(), "{}", stderr_of(&pprof));
    assert_eq!(pprof.stdout[..2], [0x1f, 0x8b], "gzip");

    // Nothing was written in the directory, least of all a file named `-`.
    assert!(
        names_in(dir.path()).is_empty(),
        "{:?}",
        names_in(dir.path())
    );
    // --force is harmless with standard output.
    assert!(report_to(dir.path(), "-", &["--force"]).status.success());
}

#[test]
fn a_diff_goes_to_standard_output_too() {
    let dir = tempfile::tempdir().unwrap();
    let out = netto_in(
        dir.path(),
        &[
            "report", "--diff", RECORDING, RECORDING, "-o", "-", "--format", "folded",
        ],
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!out.stdout.is_empty());
    assert!(names_in(dir.path()).is_empty());
}

#[test]
fn the_format_comes_from_a_known_extension_or_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, starts) in [
        ("run.svg", &b"<?xml"[..]),
        ("RUN.SVG", &b"<?xml"[..]),
        ("run.json", &b"{"[..]),
        ("run.folded", &b""[..]),
        ("run.txt", &b""[..]),
        ("run.pb.gz", &[0x1f, 0x8b][..]),
        ("run.pprof", &[0x1f, 0x8b][..]),
    ] {
        let out = report_to(dir.path(), name, &[]);
        assert!(out.status.success(), "{name}: {}", stderr_of(&out));
        let bytes = fs::read(dir.path().join(name)).unwrap();
        assert!(bytes.starts_with(starts), "{name}");
    }
    let folded = fs::read(dir.path().join("run.folded")).unwrap();
    assert!(
        !netto::frontends::flame::readback::parse_folded(&folded[..])
            .unwrap()
            .is_empty()
    );
    let before = names_in(dir.path());
    for name in ["r.html", "run", "run.gz", "run.svg.bak"] {
        assert_refused(
            &report_to(dir.path(), name, &[]),
            &format!(
                "netto: error: cannot tell the format of {name} from its name: use .svg, \
                 .folded or .txt, .json, .pprof or .pb.gz, .otlp, or pass --format"
            ),
        );
    }
    assert_eq!(names_in(dir.path()), before);
    // --format names the format whatever the name.
    let out = report_to(dir.path(), "r.html", &["--format", "svg"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(fs::read(dir.path().join("r.html"))
        .unwrap()
        .starts_with(b"<?xml"));
}

#[test]
fn pprof_is_not_written_to_a_terminal() {
    // A pseudo-terminal as standard output, through script(1).
    let dir = tempfile::tempdir().unwrap();
    let command = format!("{NETTO} report {RECORDING} -o - --format pprof");
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("script(1) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.trim_end().ends_with(
            "netto: error: a pprof profile is binary: redirect standard output to a file or \
             a pipe, or use -o FILE"
        ),
        "{text:?}"
    );
    assert!(!text.contains('\u{fffd}'), "binary reached the terminal");
}

/// `record` needs root and BPF and samples for its whole duration: an output
/// it cannot write must stop it before either.
#[test]
fn record_checks_its_output_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("sub", dir.path().join("link.svg")).unwrap();
    fs::write(dir.path().join("kept.json"), "kept").unwrap();
    let not_regular = "netto writes only regular files (use -o - for standard output)";
    for (output, extra, expected) in [
        (
            "sub",
            &["--force", "--format", "json"][..],
            "cannot write sub: it is a directory".to_owned(),
        ),
        (
            "link.svg",
            &["--force"][..],
            format!("link.svg is a symbolic link; {not_regular}"),
        ),
        (
            "run.html",
            &[][..],
            "cannot tell the format of run.html from its name: use .svg, .folded or .txt, \
             .json, .pprof or .pb.gz, .otlp, or pass --format"
                .to_owned(),
        ),
        (
            "missing/out.svg",
            &[][..],
            "cannot write missing/out.svg: directory missing does not exist".to_owned(),
        ),
        (
            "kept.json",
            &[][..],
            "kept.json already exists; pass --force to overwrite it".to_owned(),
        ),
        (
            "/proc/out.svg",
            &["--force"][..],
            "cannot write /proc/out.svg: ".to_owned(),
        ),
    ] {
        let mut args = vec!["record", "--duration", "30", "-o", output];
        args.extend_from_slice(extra);
        let started = Instant::now();
        let out = netto_in(dir.path(), &args);
        let took = started.elapsed();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(1), "{output}: {stderr}");
        let line = stderr.trim_end();
        assert!(
            line.starts_with(&format!("netto: error: {expected}")) && !line.contains('\n'),
            "{line:?} is not {expected:?}"
        );
        // Refused before anything is loaded, let alone measured for 30 s.
        assert!(took < Duration::from_secs(5), "{output} took {took:?}");
    }
    assert!(names_in(&dir.path().join("sub")).is_empty());
    assert_eq!(
        fs::read_to_string(dir.path().join("kept.json")).unwrap(),
        "kept"
    );
}
