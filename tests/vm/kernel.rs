//! Debian kernel images for the guests: the newest package of a series is
//! downloaded once with `apt-get download`, and its vmlinuz plus the few
//! modules the guest needs are kept in the cache. The package has no
//! modules.dep (depmod runs at install time), so the harness runs depmod on
//! the unpacked tree to learn the load order.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    pub fn newest_package(&self) -> String {
        let listing = host::stdout(Command::new("apt-cache").args([
            "search",
            "--names-only",
            self.package_pattern,
        ]));
        listing
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .max_by_key(|name| version_key(name))
            .unwrap_or_else(|| {
                panic!(
                    "apt knows no package matching {} (kernel {}): run apt-get update",
                    self.package_pattern, self.name
                )
            })
            .to_owned()
    }

    /// Downloads (once) and prepares the newest kernel of the series with
    /// `module_roots` and everything they depend on.
    pub fn prepare(&self, cache: &Path, module_roots: &[&str]) -> Kernel {
        let package = self.newest_package();
        let dir = cache.join(&package);
        let prepared = dir.join(PREPARED);
        let roots = module_roots.join("\n");
        if fs::read_to_string(prepared.join("roots")).ok().as_deref() != Some(&roots) {
            let deb = download(&package, &dir);
            extract(&deb, &prepared, module_roots);
            fs::write(prepared.join("roots"), &roots).unwrap();
        }
        let release = fs::read_to_string(prepared.join("release")).unwrap();
        let modules = fs::read_to_string(prepared.join("modules/order"))
            .unwrap()
            .lines()
            .map(|name| prepared.join("modules").join(name))
            .collect();
        Kernel {
            package,
            release: release.trim().to_owned(),
            vmlinuz: prepared.join("vmlinuz"),
            modules,
        }
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
fn download(package: &str, dir: &Path) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let find = || {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "deb"))
    };
    if let Some(deb) = find() {
        return deb;
    }
    eprintln!("vm: downloading {package}");
    host::run(
        Command::new("apt-get")
            .args(["download", "-q", package])
            .current_dir(dir),
    );
    find().unwrap_or_else(|| panic!("apt-get download {package} left no .deb in {dir:?}"))
}

/// Unpacks `deb` into a scratch directory and keeps vmlinuz and the closure
/// of `roots` (uncompressed, for busybox insmod) in `prepared`.
fn extract(deb: &Path, prepared: &Path, roots: &[&str]) {
    let scratch = tempfile::tempdir_in(deb.parent().unwrap()).unwrap();
    let tree = scratch.path();
    host::run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(tree));
    let release = only_entry(&tree.join("lib/modules"));
    let modules_dir = tree.join("lib/modules").join(&release);
    host::run(
        Command::new(host::find_tool("depmod", "kmod"))
            .arg("-b")
            .arg(tree)
            .arg(&release),
    );
    let order = load_order(
        &fs::read_to_string(modules_dir.join("modules.dep")).unwrap(),
        &fs::read_to_string(modules_dir.join("modules.builtin")).unwrap_or_default(),
        roots,
    );

    let _ = fs::remove_dir_all(prepared);
    fs::create_dir_all(prepared.join("modules")).unwrap();
    let image = tree.join("boot").join(format!("vmlinuz-{release}"));
    fs::copy(&image, prepared.join("vmlinuz")).unwrap();
    let mut names = Vec::new();
    for module in &order {
        let source = modules_dir.join(module);
        let name = module_name(module);
        let target = prepared.join("modules").join(format!("{name}.ko"));
        if module.ends_with(".xz") {
            let out = host::run(Command::new("xz").arg("-dc").arg(&source));
            fs::write(&target, out.stdout).unwrap();
        } else {
            fs::copy(&source, &target).unwrap();
        }
        names.push(format!("{name}.ko"));
    }
    fs::write(prepared.join("modules/order"), names.join("\n")).unwrap();
    fs::write(prepared.join("release"), &release).unwrap();
}

fn only_entry(dir: &Path) -> String {
    let entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "expected one kernel in {dir:?}: {entries:?}"
    );
    entries.into_iter().next().unwrap()
}

/// `kernel/fs/9p/9p.ko.xz` -> `9p`.
fn module_name(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap();
    file.split(".ko").next().unwrap()
}

/// The module files (paths as in modules.dep) to insmod, in order, so that
/// each of `roots` loads with its dependencies. modules.dep lists a
/// module's dependencies so that loading them last to first works. Roots
/// built into this kernel need nothing; a root that is neither is an error.
fn load_order(modules_dep: &str, builtin: &str, roots: &[&str]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for root in roots {
        let line = modules_dep.lines().find(|line| {
            line.split(':')
                .next()
                .is_some_and(|m| module_name(m) == *root)
        });
        let Some(line) = line else {
            assert!(
                builtin.lines().any(|m| module_name(m) == *root),
                "module {root} is neither in modules.dep nor built in"
            );
            continue;
        };
        let (module, deps) = line.split_once(':').unwrap();
        for file in deps.split_whitespace().rev().chain([module]) {
            if !order.iter().any(|m| m == file) {
                order.push(file.to_owned());
            }
        }
    }
    order
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
    let order = load_order(dep, builtin, &["virtio_pci", "9pnet_virtio", "9p", "veth"]);
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
#[should_panic(expected = "neither in modules.dep nor built in")]
fn load_order_rejects_unknown_modules() {
    load_order("", "", &["no_such_module"]);
}
