#!/usr/bin/env bash
# Regenerates the committed vmlinux.h that the BPF programs are compiled
# against (bpf/vmlinux/<arch>/vmlinux.h; build.rs picks it by the target's
# architecture and never reads the build host's kernel).
#
#   scripts/refresh-vmlinux.sh [BTF] [ARCH]
#
# BTF is any file bpftool reads BTF from: a running kernel's
# /sys/kernel/btf/vmlinux (the default) or a vmlinux ELF image with a .BTF
# section. ARCH is the Rust name of the architecture that kernel runs on
# (x86_64, aarch64, ...); by default this machine's.
#
# The header only names types, fields and functions: CO-RE relocations fit
# the programs to whatever kernel loads them. So refresh it when a program
# needs something the header lacks, from a kernel at least as new as that;
# then build, run the tests, and commit the header with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
btf="${1:-/sys/kernel/btf/vmlinux}"
arch="${2:-$(uname -m)}"
case "$arch" in
  x86_64 | aarch64 | riscv64 | s390x | powerpc64 | loongarch64) ;;
  *) echo "refresh-vmlinux: unknown architecture $arch (a Rust target_arch: x86_64, aarch64, ...)" >&2; exit 2 ;;
esac
[ -r "$btf" ] || { echo "refresh-vmlinux: cannot read BTF from $btf" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "refresh-vmlinux: bpftool is missing (Debian package bpftool)" >&2; exit 1; }
out="bpf/vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
tmp="$(mktemp "$out.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
bpftool btf dump file "$btf" format c >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "refresh-vmlinux: wrote $out ($(wc -l <"$out") lines) from $btf"
