//! Compiles every `bpf/*.bpf.c` into a libbpf-rs skeleton and turns the
//! shared ABI headers (`bpf/netto.h`, `bpf/sketch.h`) into Rust, so both
//! sides use one definition.
//!
//! The kernel's types come from the committed `bpf/vmlinux/<arch>/vmlinux.h`
//! (`scripts/refresh-vmlinux.sh` regenerates it), never from the build
//! host's own kernel: a host without BTF, or a container, builds the same
//! objects, and CO-RE relocations fit them to the kernel that loads them.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use libbpf_cargo::SkeletonBuilder;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=bpf");
    // What tests/build_without_btf.rs runs again, with the host's BTF hidden.
    let script = env::current_exe().expect("the build script's own path");
    println!("cargo:rustc-env=NETTO_BUILD_SCRIPT={}", script.display());

    let vmlinux = vmlinux_dir();
    for abi in ABIS {
        generate_abi(abi, &out);
    }
    for source in bpf_sources() {
        build_skeleton(&source, &vmlinux, &out);
    }
}

/// The directory of the target architecture's committed vmlinux.h, or a
/// build error that says how to make one.
fn vmlinux_dir() -> PathBuf {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets CARGO_CFG_TARGET_ARCH");
    let dir = Path::new("bpf/vmlinux").join(&arch);
    if !dir.join("vmlinux.h").is_file() {
        eprintln!(
            "error: netto has no vmlinux.h for target architecture {arch}: on a kernel of that \
             architecture with BTF, run `scripts/refresh-vmlinux.sh /sys/kernel/btf/vmlinux {arch}` \
             and commit {}",
            dir.join("vmlinux.h").display()
        );
        std::process::exit(1);
    }
    dir
}

/// An ABI header and what bindgen takes from it.
struct Abi {
    header: &'static str,
    items: &'static str,
    enums: &'static str,
    output: &'static str,
}

const ABIS: &[Abi] = &[
    Abi {
        header: "bpf/netto.h",
        items: "netto_.*|NETTO_.*",
        enums:
            "netto_event|netto_task_window|netto_syscall_kind|netto_sample_context|netto_transport|netto_hook|netto_tier|netto_no_conn",
        output: "netto_abi.rs",
    },
    Abi {
        header: "bpf/sketch.h",
        items: "sketch_.*|SKETCH_.*",
        enums: "sketch_protocol",
        output: "sketch_abi.rs",
    },
];

fn generate_abi(abi: &Abi, out: &Path) {
    bindgen::Builder::default()
        .header(abi.header)
        .allowlist_item(abi.items)
        .rustified_enum(abi.enums)
        .derive_default(true)
        // Every byte a field: what makes the structs plain data (abi::Plain).
        .explicit_padding(true)
        .generate()
        .unwrap_or_else(|e| panic!("bindgen on {}: {e}", abi.header))
        .write_to_file(out.join(abi.output))
        .unwrap_or_else(|e| panic!("writing {}: {e}", abi.output));
}

fn bpf_sources() -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = fs::read_dir("bpf")
        .expect("reading bpf/")
        .map(|entry| entry.expect("bpf/ entry").path())
        .filter(|path| path.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    sources.sort();
    sources
}

/// Compiles `source` against the committed vmlinux.h. The objects' BTF
/// line info names each source file; named relative to the checkout
/// (`-fdebug-prefix-map`), the objects do not depend on where it is.
fn build_skeleton(source: &Path, vmlinux: &Path, out: &Path) {
    let stem = source
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".bpf.c"))
        .expect("bpf source named *.bpf.c");
    let checkout = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    SkeletonBuilder::new()
        .source(source)
        .obj(out.join(format!("{stem}.bpf.o")))
        .clang_args([
            "-I".into(),
            vmlinux.as_os_str().to_owned(),
            "-I".into(),
            "bpf".into(),
            "-Wall".into(),
            "-Werror".into(),
            format!("-fdebug-prefix-map={checkout}=.").into(),
        ])
        .build_and_generate(out.join(format!("{stem}.skel.rs")))
        .unwrap_or_else(|e| panic!("building {}: {e:#}", source.display()));
}
