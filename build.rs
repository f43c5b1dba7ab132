//! Compiles every `bpf/*.bpf.c` into a libbpf-rs skeleton and turns the
//! shared ABI headers (`bpf/netto.h`, `bpf/sketch.h`) into Rust, so both
//! sides use one definition.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=bpf");

    generate_vmlinux_h(&out);
    for abi in ABIS {
        generate_abi(abi, &out);
    }
    for source in bpf_sources() {
        build_skeleton(&source, &out);
    }
}

/// vmlinux.h is generated from the build host's BTF rather than committed: it
/// is large, and CO-RE relocations make the objects portable anyway.
fn generate_vmlinux_h(out: &Path) {
    let header = out.join("vmlinux.h");
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file", VMLINUX_BTF, "format", "c"])
        .output()
        .unwrap_or_else(|e| panic!("running bpftool (Debian package `bpftool`): {e}"));
    assert!(
        dump.status.success(),
        "bpftool btf dump {VMLINUX_BTF} failed: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    fs::write(&header, dump.stdout).expect("writing vmlinux.h");
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
            "netto_event|netto_task_window|netto_syscall_kind|netto_sample_context|netto_transport|netto_hook|netto_tier",
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

fn build_skeleton(source: &Path, out: &Path) {
    let stem = source
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".bpf.c"))
        .expect("bpf source named *.bpf.c");
    SkeletonBuilder::new()
        .source(source)
        .obj(out.join(format!("{stem}.bpf.o")))
        .clang_args([
            "-I".into(),
            out.as_os_str().to_owned(),
            "-I".into(),
            "bpf".into(),
            "-Wall".into(),
            "-Werror".into(),
        ])
        .build_and_generate(out.join(format!("{stem}.skel.rs")))
        .unwrap_or_else(|e| panic!("building {}: {e:#}", source.display()));
}
