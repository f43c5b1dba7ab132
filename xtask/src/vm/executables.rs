//! What the guests run: netto and the integration tests the matrix names,
//! built by cargo with the test profile of `cargo test`, in the workspace's
//! target directory. The tests' file names carry a hash cargo chooses, so
//! cargo itself says where each one is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::host;

/// netto's binary and the executable of each integration test asked for.
pub struct Executables {
    pub netto: PathBuf,
    pub tests: BTreeMap<String, PathBuf>,
}

/// Variables `cargo run` sets for the program it runs (this xtask), which
/// a cargo started from here must not see: build scripts that watch one of
/// them (ring's watches `CARGO_PKG_NAME`) would run again, and everything
/// above them be rebuilt, here and once more by the next cargo run from a
/// shell.
fn set_by_cargo_run(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
            "OUT_DIR",
        ]
        .contains(&name)
}

/// The workspace's root: where cargo runs.
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ is in the workspace's root")
}

/// Builds netto and the integration tests `tests` (nothing, when the test
/// suite was just built), and says where they are.
pub fn build(tests: &[&str]) -> Result<Executables> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["test", "--package", "netto", "--no-run"])
        .args(["--message-format=json", "--quiet"])
        .current_dir(workspace());
    for test in tests {
        command.args(["--test", test]);
    }
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(name);
        }
    }
    let listing = host::stdout(&mut command)?;
    let artifacts: Vec<Value> = listing
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .collect();
    // netto's library and binary share a name: only executables count.
    let executable = |test: bool, name: &str| {
        artifacts
            .iter()
            .filter(|m| m["profile"]["test"] == test && m["target"]["name"] == name)
            .find_map(|m| m["executable"].as_str())
            .map(PathBuf::from)
    };
    let netto = executable(false, "netto").context("cargo built no netto binary")?;
    let mut found = BTreeMap::new();
    for test in tests {
        let Some(path) = executable(true, test) else {
            bail!("cargo built no executable for test {test}");
        };
        found.insert(test.to_string(), path);
    }
    Ok(Executables {
        netto,
        tests: found,
    })
}

#[test]
fn only_what_cargo_run_sets_is_left_out() {
    for name in [
        "CARGO_PKG_NAME",
        "CARGO_MANIFEST_DIR",
        "OUT_DIR",
        "CARGO_BIN_NAME",
    ] {
        assert!(set_by_cargo_run(name), "{name}");
    }
    for name in [
        "CARGO_TARGET_DIR",
        "CARGO_HOME",
        "CARGO",
        "RUSTFLAGS",
        "PATH",
    ] {
        assert!(!set_by_cargo_run(name), "{name}");
    }
}
