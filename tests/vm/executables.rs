//! The test binaries the guests run. Their file names carry a hash cargo
//! chooses, so cargo itself is asked (building them if needed, with the
//! profile and target directory of this run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::host;

/// Executable of each integration test in `tests`, built by cargo for the
/// profile `netto` was built with.
pub fn integration_tests(netto: &Path, tests: &[&str]) -> BTreeMap<String, PathBuf> {
    let profile = netto
        .parent()
        .and_then(Path::file_name)
        .and_then(|p| p.to_str())
        .expect("netto lives in <target>/<profile>/");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut command = Command::new(cargo);
    command
        .args(["test", "--no-run", "--message-format=json", "--quiet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    for test in tests {
        command.args(["--test", test]);
    }
    let listing = host::stdout(&mut command);
    let found: BTreeMap<String, PathBuf> = listing
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| {
            let name = m["target"]["name"].as_str()?.to_owned();
            let executable = m["executable"].as_str()?;
            Some((name, PathBuf::from(executable)))
        })
        .filter(|(name, _)| tests.contains(&name.as_str()))
        .collect();
    for test in tests {
        assert!(
            found.contains_key(*test),
            "cargo built no executable for test {test}"
        );
    }
    found
}
