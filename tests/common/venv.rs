//! Python from PyPI for the tests that check netto against someone else's
//! code: a virtual environment per pins file, in the build directory.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A virtual environment named `name` holding exactly the packages the
/// pins file `pins` lists (`pip --no-deps`: every import is pinned there).
/// Made once per build directory, and again when the pins change.
pub fn pinned(name: &str, pins: &str) -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let pinned = std::fs::read_to_string(pins).unwrap();
    let stamp = venv.join("netto-pins.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(pinned.as_str()) {
        let _ = std::fs::remove_dir_all(&venv);
        run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run_ok(Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--requirement",
            pins,
        ]));
        std::fs::write(&stamp, pinned).unwrap();
    }
    venv
}

/// `command`'s output, which must be a success.
pub fn run_ok(command: &mut Command) -> std::process::Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
