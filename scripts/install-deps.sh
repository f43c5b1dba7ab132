#!/usr/bin/env bash
# Installs everything netto needs to build, run and test on a fresh Debian
# machine, and mounts the kernel file systems it uses. Safe to run again.
set -euo pipefail

packages=(
  clang llvm libclang-dev libelf-dev zlib1g-dev pkg-config make # BPF and bindgen toolchain
  bpftool                                                     # scripts/refresh-vmlinux.sh, test inspection
  iproute2 iperf3 util-linux procps nftables                  # namespaces, load, pinning, netfilter tests
  linux-perf                                                  # the overhead benchmark's peer
  tmux                                                        # netto top's end-to-end tests
  curl jq                                                     # benches/soak.sh: stream clients and checks
  prometheus chromium                                         # serve tests: promtool check metrics, the page in a browser
  qemu-system-x86 busybox-static cpio kmod xz-utils           # the kernel matrix (cargo xtask vm-matrix)
  systemd man-db groff-base                                   # the unit's systemd-analyze verify, man page checks
  python3 python3-venv libcap2-bin                            # tests/agent.rs: kubernetes-validate (pinned, from PyPI) in a venv; setcap
                                                              # tests/otlp.rs: the OTLP receiver's opentelemetry-proto==1.45.2 and grpcio (pinned in tests/fixtures/otlp-receiver.txt) in a venv
  openssl                                                     # tests/otlp.rs: a CA and a certificate for the TLS receiver
  gcc-multilib                                                # tests/compat_calls.rs: a 32-bit program's socket calls
  ethtool                                                     # tests/softirq_accounting.rs: GRO and TSO on a veth for threaded NAPI
)
# `go tool pprof` reads the pprof profiles in tests/pprof.rs; a Go already
# in /usr/local/go will do.
if [ ! -x /usr/local/go/bin/go ] && ! command -v go >/dev/null 2>&1; then
  packages+=(golang-go)
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (apt-get and mounts need it)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  echo "install-deps: a Rust toolchain (cargo) is required: https://rustup.rs" >&2
  exit 1
fi

# mdBook builds the manual (docs/, scripts/test.sh). Not a Debian package
# here, so cargo installs the pinned version when it is missing, into
# cargo's bin directory; without its default features (a file watcher, a
# web server, the search index), which `mdbook build` does not need and
# which cost the install time.
MDBOOK_VERSION=0.5.4
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if [ "$(PATH="$cargo_bin:$PATH" mdbook --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
  PATH="$cargo_bin:$PATH" cargo install --locked --no-default-features --version "$MDBOOK_VERSION" mdbook
fi

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing || true
