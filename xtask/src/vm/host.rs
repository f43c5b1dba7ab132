//! Host commands the harness depends on. A missing tool or a failing
//! command is a set-up error, which says what to install or what the
//! command said.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{bail, Context, Result};

/// `program` on `PATH`, or an error naming the package that provides it.
pub fn find_tool(program: &str, package: &str) -> Result<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .with_context(|| {
            format!("{program} is missing: install {package} (scripts/install-deps.sh does)")
        })
}

/// Runs `command` to completion; an error with its stderr unless it
/// succeeds.
pub fn run(command: &mut Command) -> Result<Output> {
    let out = command
        .output()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !out.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out)
}

/// The stdout of [`run`] as text.
pub fn stdout(command: &mut Command) -> Result<String> {
    let out = run(command)?;
    String::from_utf8(out.stdout).with_context(|| format!("{command:?} printed non-UTF-8"))
}

/// Shared libraries `elf` loads (with the loader itself), as ldd resolves
/// them on the host. Statically linked files need none.
pub fn shared_libraries(elf: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(elf)
        .output()
        .context("cannot run ldd")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let path = match line.split_once("=>") {
                Some((_, resolved)) => resolved.trim(),
                None => line.trim(),
            };
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

/// Quotes `word` for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[test]
fn shell_quote_survives_quotes() {
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
}
