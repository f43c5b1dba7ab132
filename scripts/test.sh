#!/usr/bin/env bash
# Runs every netto test. Needs root: the integration tests load BPF
# programs and build network namespaces. Tests run one at a time because
# they measure CPU time and must not disturb each other.
#
# Stages: the manual and the crate docs; build every test binary; unit tests (netto's and the xtask's);
# the integration tests on this machine's kernel; the kernel matrix
# (`cargo xtask vm-matrix`: the kernel-dependent tests inside stock
# kernels under qemu). Every stage runs even after one fails, so that one
# run shows every failure; each stage's wall time is printed at the end.
#
# Every temporary file of the run goes into one directory, removed however
# the run ends (a Ctrl-C included); what else a test makes, it removes
# itself, on a signal too (tests/common, `undo_on_signals`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stages.sh
stages_begin
TMPDIR="$(mktemp -d /tmp/netto-tests.XXXXXX)"
export TMPDIR
# As open as /tmp itself: a test may hand a path to a process that runs as
# another user.
chmod 1777 "$TMPDIR"
trap 'rm -rf "$TMPDIR"; stages_end' EXIT

# Every binary the stages run, so that the build's time is its own stage.
build() {
  cargo test --workspace --no-run --quiet && cargo build --package xtask --quiet
}
# netto's and the xtask's unit tests, and netto's doc tests.
unit_tests() {
  local status=0
  cargo test --workspace --lib --bins --no-fail-fast -- --test-threads=1 || status=1
  cargo test --workspace --doc --no-fail-fast || status=1
  return "$status"
}

# The manual and the crate docs: a page or SUMMARY.md entry mdBook cannot
# build, a broken link or a doc warning fails here. The book goes into
# target/book (docs/book.toml), which git ignores; mdbook is in cargo's bin
# directory (scripts/install-deps.sh).
docs() {
  PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH" mdbook build docs &&
    RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
}

failed=0
stage docs docs || failed=1
stage build build || exit 1
stage "unit tests" unit_tests || failed=1
stage "integration tests" cargo test --package netto --test '*' --no-fail-fast -- --test-threads=1 || failed=1
stage "kernel matrix" cargo xtask vm-matrix || failed=1
exit "$failed"
