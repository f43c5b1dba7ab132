//! Debian kernel images for the guests: the newest package of a series is
//! downloaded once with `apt-get download`, and its vmlinuz plus the few
//! modules the guest needs are kept in the cache. The package has no
//! modules.dep (depmod runs at install time), so the harness runs depmod on
//! the unpacked tree to learn the load order.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};

use super::host;

/// A kernel series of the matrix: an apt-cache name pattern (POSIX regular
/// expression) whose newest match is used.
pub struct Series {
    pub name: &'static str,
    pub package_pattern: &'static str,
}

/// A kernel ready to boot: its image and its modules in load order.
pub struct Kernel {
    pub package: String,
    pub release: String,
    pub vmlinuz: PathBuf,
    /// Uncompressed `.ko` files, dependencies before their users.
    pub modules: Vec<PathBuf>,
}

/// The kept part of a package, in `<cache>/<package>/`: vmlinuz, the
/// modules and `release`, plus `roots` naming the module set they were
/// resolved for (a different set re-extracts).
const PREPARED: &str = "prepared";

impl Series {
    /// The newest package of the series that apt knows of.
    pub fn newest_package(&self) -> Result<String> {
        let listing = host::stdout(Command::new("apt-cache").args([
            "search",
            "--names-only",
            self.package_pattern,
        ]))?;
        listing
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .max_by_key(|name| version_key(name))
            .map(str::to_owned)
            .with_context(|| {
                format!(
                    "apt knows no package matching {} (kernel {}): run apt-get update",
                    self.package_pattern, self.name
                )
            })
    }

    /// Downloads (once) and prepares the newest kernel of the series with
    /// `module_roots` and everything they depend on.
    pub fn prepare(&self, cache: &Path, module_roots: &[&str]) -> Result<Kernel> {
        let package = self.newest_package()?;
        let dir = cache.join(&package);
        let prepared = dir.join(PREPARED);
        let roots = module_roots.join("\n");
        if fs::read_to_string(prepared.join("roots")).ok().as_deref() != Some(&roots) {
            let deb = download(&package, &dir)?;
            extract(&deb, &prepared, module_roots)?;
            fs::write(prepared.join("roots"), &roots)?;
        }
        let read = |name: &str| {
            fs::read_to_string(prepared.join(name))
                .with_context(|| format!("reading {name} of {}", prepared.display()))
        };
        let release = read("release")?;
        let modules = read("modules/order")?
            .lines()
            .map(|name| prepared.join("modules").join(name))
            .collect();
        Ok(Kernel {
            package,
            release: release.trim().to_owned(),
            vmlinuz: prepared.join("vmlinuz"),
            modules,
        })
    }
}

/// The numbers in a package name, in order: within one series the names
/// differ only in them, and `6.1.0-56` must sort after `6.1.0-9`.
fn version_key(name: &str) -> Vec<u64> {
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or(u64::MAX))
        .collect()
}

/// The package's .deb in `dir`, downloaded unless already there.
fn download(package: &str, dir: &Path) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let find = || -> Result<Option<PathBuf>> {
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "deb") {
                return Ok(Some(path));
            }
        }
        Ok(None)
    };
    if let Some(deb) = find()? {
        return Ok(deb);
    }
    eprintln!("vm: downloading {package}");
    host::run(
        Command::new("apt-get")
            .args(["download", "-q", package])
            .current_dir(dir),
    )?;
    find()?.with_context(|| format!("apt-get download {package} left no .deb in {dir:?}"))
}

/// Unpacks `deb` into a scratch directory and keeps vmlinuz and the closure
/// of `roots` (uncompressed, for busybox insmod) in `prepared`.
fn extract(deb: &Path, prepared: &Path, roots: &[&str]) -> Result<()> {
    let scratch = tempfile::tempdir_in(deb.parent().context("a .deb in a directory")?)?;
    let tree = scratch.path();
    host::run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(tree))?;
    let release = only_entry(&tree.join("lib/modules"))?;
    let modules_dir = tree.join("lib/modules").join(&release);
    host::run(
        Command::new(host::find_tool("depmod", "kmod")?)
            .arg("-b")
            .arg(tree)
            .arg(&release),
    )?;
    let order = load_order(
        &fs::read_to_string(modules_dir.join("modules.dep"))
            .context("depmod wrote no modules.dep")?,
        &fs::read_to_string(modules_dir.join("modules.builtin")).unwrap_or_default(),
        roots,
    )?;

    let _ = fs::remove_dir_all(prepared);
    fs::create_dir_all(prepared.join("modules"))?;
    let image = tree.join("boot").join(format!("vmlinuz-{release}"));
    fs::copy(&image, prepared.join("vmlinuz"))
        .with_context(|| format!("copying {}", image.display()))?;
    let mut names = Vec::new();
    for module in &order {
        let source = modules_dir.join(module);
        let name = module_name(module);
        let target = prepared.join("modules").join(format!("{name}.ko"));
        if module.ends_with(".xz") {
            let out = host::run(Command::new("xz").arg("-dc").arg(&source))?;
            fs::write(&target, out.stdout)?;
        } else {
            fs::copy(&source, &target).with_context(|| format!("copying {module}"))?;
        }
        names.push(format!("{name}.ko"));
    }
    fs::write(prepared.join("modules/order"), names.join("\n"))?;
    fs::write(prepared.join("release"), &release)?;
    Ok(())
}

fn only_entry(dir: &Path) -> Result<String> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        entries.push(entry?.file_name().to_string_lossy().into_owned());
    }
    match <[String; 1]>::try_from(entries) {
        Ok([only]) => Ok(only),
        Err(entries) => bail!("expected one kernel in {dir:?}: {entries:?}"),
    }
}

/// `kernel/fs/9p/9p.ko.xz` -> `9p`.
fn module_name(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file)
}

/// The module files (paths as in modules.dep) to insmod, in order, so that
/// each of `roots` loads with its dependencies. modules.dep lists a
/// module's dependencies so that loading them last to first works. Roots
/// built into this kernel need nothing; a root that is neither is an error.
fn load_order(modules_dep: &str, builtin: &str, roots: &[&str]) -> Result<Vec<String>> {
    let mut order: Vec<String> = Vec::new();
    for root in roots {
        let line = modules_dep.lines().find(|line| {
            line.split(':')
                .next()
                .is_some_and(|m| module_name(m) == *root)
        });
        let Some((module, deps)) = line.and_then(|line| line.split_once(':')) else {
            ensure!(
                builtin.lines().any(|m| module_name(m) == *root),
                "module {root} is neither in modules.dep nor built in"
            );
            continue;
        };
        for file in deps.split_whitespace().rev().chain([module]) {
            if !order.iter().any(|m| m == file) {
                order.push(file.to_owned());
            }
        }
    }
    Ok(order)
}

#[test]
fn newest_package_compares_numbers_as_numbers() {
    let mut names = [
        "linux-image-6.1.0-56-amd64-unsigned",
        "linux-image-6.1.0-9-amd64-unsigned",
        "linux-image-6.1.0-47-amd64-unsigned",
    ];
    names.sort_by_key(|name| version_key(name));
    assert_eq!(names[2], "linux-image-6.1.0-56-amd64-unsigned");
    assert_eq!(names[0], "linux-image-6.1.0-9-amd64-unsigned");
}

#[test]
fn load_order_puts_dependencies_first_and_skips_builtins() {
    let dep = "kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz\n\
               kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz\n\
               kernel/drivers/net/veth.ko.xz:\n";
    let builtin = "kernel/drivers/virtio/virtio_pci.ko\n";
    let order = load_order(dep, builtin, &["virtio_pci", "9pnet_virtio", "9p", "veth"]).unwrap();
    assert_eq!(
        order,
        [
            "kernel/fs/netfs/netfs.ko.xz",
            "kernel/net/9p/9pnet.ko.xz",
            "kernel/net/9p/9pnet_virtio.ko.xz",
            "kernel/fs/9p/9p.ko.xz",
            "kernel/drivers/net/veth.ko.xz",
        ]
    );
}

#[test]
fn load_order_rejects_unknown_modules() {
    let error = load_order("", "", &["no_such_module"]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "module no_such_module is neither in modules.dep nor built in"
    );
}
