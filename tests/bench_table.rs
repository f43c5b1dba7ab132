//! scripts/bench-table.sh, through which every benchmark rewrites its own
//! table in docs/src/performance.md: the table goes between its two
//! markers under a `Run:` line, everything else stays byte for byte, and a
//! page it cannot rewrite is a one-line error that leaves it as it was.
//! Runs on copies of the page (a test never rewrites tracked files); the
//! real page is only read, to check that each of its tables can be
//! rewritten.
//! No root.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench-table.sh");
const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/performance.md");

const BEFORE: &str = "# Page\n\nintro\n\n<!-- bench:demo:start -->\nRun: old\n\n| a |\n| --- |\n| 1 |\n<!-- bench:demo:end -->\n\nafter\n<!-- bench:other:start -->\nkept\n<!-- bench:other:end -->\n";

/// A page of `text` in a directory of its own, removed by the caller.
fn page(tag: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bench-table-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("performance.md");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(args: &[&str], page: &Path, stdin: &str) -> Output {
    let mut child = Command::new(SCRIPT)
        .args(args)
        .arg("--page")
        .arg(page)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn cleanup(page: &Path) {
    std::fs::remove_dir_all(page.parent().unwrap()).unwrap();
}

#[test]
fn a_table_replaces_the_one_between_its_markers_and_nothing_else() {
    let path = page("rewrite", BEFORE);
    let table = "| b | c |\n| --- | --- |\n| 2 | 3 |\n";
    let out = run(
        &[
            "demo",
            "--load-before",
            "0.42",
            "--command",
            "cargo bench --bench demo",
        ],
        &path,
        table,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = after.split_once("<!-- bench:demo:start -->\n").unwrap();
    assert_eq!(head, "# Page\n\nintro\n\n");
    let (block, tail) = rest.split_once("<!-- bench:demo:end -->\n").unwrap();
    assert_eq!(
        tail,
        "\nafter\n<!-- bench:other:start -->\nkept\n<!-- bench:other:end -->\n"
    );
    let mut lines = block.lines();
    let caption = lines.next().unwrap();
    assert!(caption.starts_with("Run: "), "{caption}");
    assert!(
        caption.contains("; load average 0.42 before, "),
        "{caption}"
    );
    assert!(
        caption.ends_with("after; `cargo bench --bench demo`"),
        "{caption}"
    );
    // The date, in UTC, first.
    let date = &caption[5..15];
    assert!(
        date.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 {
            c == '-'
        } else {
            c.is_ascii_digit()
        }),
        "{caption}"
    );
    assert_eq!(lines.next(), Some(""));
    assert_eq!(lines.collect::<Vec<_>>().join("\n") + "\n", table);
    // Again: the table is replaced, not appended to.
    let out = run(
        &["demo", "--load-before", "1", "--command", "x"],
        &path,
        "| d |\n",
    );
    assert!(out.status.success());
    let again = std::fs::read_to_string(&path).unwrap();
    assert_eq!(again.matches("| d |").count(), 1);
    assert!(!again.contains("| b | c |"));
    assert_eq!(again.matches("Run: ").count(), 1);
    cleanup(&path);
}

#[test]
fn a_page_it_cannot_rewrite_is_a_one_line_error_and_stays_as_it_was() {
    let cases: [(&str, &[&str], &str); 6] = [
        (
            BEFORE,
            &["missing", "--load-before", "1", "--command", "x"],
            "| t |\n",
        ),
        (
            &BEFORE.replace("<!-- bench:other:start -->", "<!-- bench:demo:start -->"),
            &["demo", "--load-before", "1", "--command", "x"],
            "| t |\n",
        ),
        (
            "<!-- bench:demo:end -->\n<!-- bench:demo:start -->\n",
            &["demo", "--load-before", "1", "--command", "x"],
            "| t |\n",
        ),
        (
            BEFORE,
            &["demo", "--load-before", "1", "--command", "x"],
            " \n",
        ),
        (
            BEFORE,
            &["demo", "--load-before", "busy", "--command", "x"],
            "| t |\n",
        ),
        (BEFORE, &["demo", "--load-before", "1"], "| t |\n"),
    ];
    for (i, (text, args, stdin)) in cases.into_iter().enumerate() {
        let path = page(&format!("bad{i}"), text);
        let out = run(args, &path, stdin);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{args:?}");
        // Nothing left beside the page.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
        cleanup(&path);
    }
}

#[test]
fn every_table_on_the_page_can_be_rewritten() {
    // Each start marker's table: its markers once each and in order, and a
    // `Run:` line right after the start (what the script writes).
    let page = std::fs::read_to_string(PAGE).unwrap();
    let lines: Vec<&str> = page.lines().collect();
    let mut names = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = line
            .strip_prefix("<!-- bench:")
            .and_then(|l| l.strip_suffix(":start -->"))
        {
            assert!(
                lines[i + 1].starts_with("Run: ")
                    || lines[i + 1].starts_with("No run recorded yet"),
                "{name}: {}",
                lines[i + 1]
            );
            names.push(name);
        }
    }
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let out = Command::new(SCRIPT)
            .args([name, "--check", "--page", PAGE])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
