//! The guest's initramfs: busybox for the init script, the host's own
//! `ip`, `taskset` and `bpftool` (the tests need features busybox's applets
//! lack, such as `ip netns`), `tmux` and `bash` (the terminal the tests
//! read `netto top` in), the kernel's modules, and every shared
//! library that those tools and the test binaries on the share load, at
//! the same paths as on the host.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{ensure, Context, Result};

use super::host::{self, shell_quote};
use super::kernel::Kernel;

/// Host programs copied into the guest: (program, Debian package).
const TOOLS: &[(&str, &str)] = &[
    ("busybox", "busybox-static"),
    ("ip", "iproute2"),
    ("taskset", "util-linux"),
    ("bpftool", "bpftool"),
    ("tmux", "tmux"),
    ("bash", "bash"),
];

/// Host directories copied whole, at the same paths: tmux refuses to
/// start without a UTF-8 locale, and glibc reads C.UTF-8 from here.
const DATA: &[&str] = &["/usr/lib/locale/C.utf8"];

/// The guest's PID 1.
const INIT: &str = include_str!("init.sh");

/// What the guest is told: where the share is mounted and where its jobs are.
pub struct GuestConfig<'a> {
    pub share: &'a Path,
    pub results: &'a Path,
}

/// Writes a newc cpio archive for `kernel` to `archive`. `executables` are
/// the files on the share the guest runs; only their libraries are copied.
pub fn build(
    kernel: &Kernel,
    config: &GuestConfig,
    executables: &[PathBuf],
    archive: &Path,
) -> Result<()> {
    let stage = tempfile::tempdir()?;
    let root = stage.path();
    let mut libraries = BTreeSet::new();
    for (program, package) in TOOLS {
        let path = host::find_tool(program, package)?;
        let dest = if *program == "busybox" {
            PathBuf::from("/bin/busybox")
        } else {
            path.clone()
        };
        copy_into(root, &path, &dest)?;
        libraries.extend(host::shared_libraries(&path)?);
    }
    for executable in executables {
        libraries.extend(host::shared_libraries(executable)?);
    }
    for library in &libraries {
        copy_into(root, library, library)?;
    }
    for dir in DATA {
        copy_tree(root, Path::new(dir))?;
    }

    fs::write(root.join("init"), INIT)?;
    fs::set_permissions(root.join("init"), fs::Permissions::from_mode(0o755))?;
    fs::create_dir_all(root.join("modules"))?;
    let mut order = Vec::new();
    for module in &kernel.modules {
        let name = module.file_name().context("a module file")?;
        fs::copy(module, root.join("modules").join(name))
            .with_context(|| format!("copying {}", module.display()))?;
        order.push(name.to_string_lossy().into_owned());
    }
    fs::write(root.join("modules/order"), order.join("\n"))?;
    fs::create_dir_all(root.join("etc"))?;
    fs::write(
        root.join("etc/netto-vm.conf"),
        format!(
            "SHARE={}\nRESULTS={}\n",
            shell_quote(&config.share.to_string_lossy()),
            shell_quote(&config.results.to_string_lossy())
        ),
    )?;
    write_cpio(root, archive)
}

/// Copies host file `source` (following links) to `dest` inside `root`,
/// keeping its permissions.
fn copy_into(root: &Path, source: &Path, dest: &Path) -> Result<()> {
    let target = root.join(dest.strip_prefix("/").unwrap_or(dest));
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::copy(source, &target).with_context(|| format!("copying {}", source.display()))?;
    Ok(())
}

/// Copies host directory `dir` and everything under it into `root`.
fn copy_tree(root: &Path, dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            copy_tree(root, &path)?;
        } else {
            copy_into(root, &path, &path)?;
        }
    }
    Ok(())
}

fn write_cpio(root: &Path, archive: &Path) -> Result<()> {
    let mut entries = Vec::new();
    collect(root, root, &mut entries)?;
    let mut cpio = Command::new(host::find_tool("cpio", "cpio")?)
        .args(["--create", "--format=newc", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(fs::File::create(archive)?)
        .spawn()
        .context("starting cpio")?;
    cpio.stdin
        .take()
        .context("cpio's stdin")?
        .write_all(entries.join("\n").as_bytes())?;
    ensure!(cpio.wait()?.success(), "cpio failed");
    Ok(())
}

/// Every path under `dir`, relative to `root`, directories first.
fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let relative = path.strip_prefix(root)?;
        out.push(relative.to_string_lossy().into_owned());
        if path.is_dir() {
            collect(root, &path, out)?;
        }
    }
    Ok(())
}
