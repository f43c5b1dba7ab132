//! The layout CONTRIBUTING promises, checked as files (no root, no build):
//! no file under src/ is over the line limit unless CONTRIBUTING names it as
//! a one-table file, and the kernel layer never reaches for the workloads
//! (src/kernel/ makes no traffic: the self-check's probe traffic is handed
//! in from the command's edge).

use std::fs;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// CONTRIBUTING's limit: a file a reader can hold, its tests included.
const MAX_LINES: usize = 600;

/// The files CONTRIBUTING names as one table, which may grow past the
/// limit. None is today; a file added here is named there too.
const ONE_TABLE_FILES: &[&str] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn files_under(dir: &str) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    rust_files(&Path::new(ROOT).join(dir), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(ROOT).unwrap().display().to_string();
            (name, fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn no_file_under_src_is_over_the_limit() {
    let contributing = fs::read_to_string(Path::new(ROOT).join("CONTRIBUTING.md")).unwrap();
    for name in ONE_TABLE_FILES {
        assert!(
            contributing.contains(name),
            "{name} is not named in CONTRIBUTING"
        );
    }
    let files = files_under("src");
    assert!(files.len() > 100, "src/ read: {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter(|(name, _)| !ONE_TABLE_FILES.contains(&name.as_str()))
        .map(|(name, text)| (name, text.lines().count()))
        .filter(|&(_, lines)| lines > MAX_LINES)
        .map(|(name, lines)| format!("{name}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines (split by concern, tests into a tests.rs beside the module):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_kernel_layer_imports_no_workload() {
    let files = files_under("src/kernel");
    assert!(!files.is_empty());
    for (name, text) in &files {
        assert!(
            !text.contains("workload::"),
            "{name} names src/workload/: the kernel layer makes no traffic"
        );
    }
}
