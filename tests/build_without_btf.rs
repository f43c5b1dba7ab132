//! The build never reads the build host's kernel: netto's build script,
//! run again with /sys/kernel/btf hidden (a tmpfs over it in a private
//! mount namespace), makes byte for byte the BPF objects, skeletons and ABI
//! bindings this build made. Only the build script runs again (the one this
//! build compiled, into a directory of its own), not a clean build, so the
//! test costs seconds. Needs root (unshare, mount).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

/// What this build's build script wrote.
const OUT_DIR: &str = env!("OUT_DIR");
/// The build script that wrote it (build.rs says where it is).
const BUILD_SCRIPT: &str = env!("NETTO_BUILD_SCRIPT");
const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");

/// File names in `dir`.
fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn the_build_makes_the_same_objects_without_the_hosts_btf() {
    let fresh = tempfile::tempdir().unwrap();
    // The environment the script reads; cargo gives it more.
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(
            "mount -t tmpfs none /sys/kernel/btf && \
             ! test -e /sys/kernel/btf/vmlinux && exec \"$0\"",
        )
        .arg(BUILD_SCRIPT)
        .env("OUT_DIR", fresh.path())
        .env("CARGO_MANIFEST_DIR", CHECKOUT)
        .env("CARGO_CFG_TARGET_ARCH", std::env::consts::ARCH)
        .current_dir(CHECKOUT)
        .output()
        .expect("running unshare");
    assert!(
        out.status.success(),
        "the build script failed with /sys/kernel/btf hidden: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let made = names(fresh.path());
    let sources: Vec<String> = names(&Path::new(CHECKOUT).join("bpf"))
        .into_iter()
        .filter_map(|n| n.strip_suffix(".bpf.c").map(str::to_owned))
        .collect();
    assert!(!sources.is_empty());
    for stem in &sources {
        for made_from in [format!("{stem}.bpf.o"), format!("{stem}.skel.rs")] {
            assert!(made.contains(&made_from), "no {made_from} in {made:?}");
        }
    }
    let differ: Vec<&String> = made
        .iter()
        .filter(|name| {
            fs::read(fresh.path().join(name)).unwrap()
                != fs::read(Path::new(OUT_DIR).join(name)).unwrap_or_default()
        })
        .collect();
    assert!(
        differ.is_empty(),
        "built without the host's BTF, these differ from this build's ({OUT_DIR}): {differ:?}"
    );
}
