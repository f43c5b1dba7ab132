#!/usr/bin/env bash
# Runs every netto test. Needs root: the integration tests load BPF
# programs and build network namespaces. Tests run one at a time because
# they measure CPU time and must not disturb each other.
#
# Every temporary file of the run goes into one directory, removed however
# the run ends (a Ctrl-C included); what else a test makes, it removes
# itself, on a signal too (tests/common, `undo_on_signals`).
set -euo pipefail
cd "$(dirname "$0")/.."
TMPDIR="$(mktemp -d /tmp/netto-tests.XXXXXX)"
export TMPDIR
# As open as /tmp itself: a test may hand a path to a process that runs as
# another user.
chmod 1777 "$TMPDIR"
trap 'rm -rf "$TMPDIR"' EXIT
# Every test binary runs even after one fails, so that one run shows every
# failure (a passing run takes the same time).
cargo test --no-fail-fast -- --test-threads=1
