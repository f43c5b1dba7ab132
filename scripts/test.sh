#!/usr/bin/env bash
# Runs every netto test. Needs root: the integration tests load BPF
# programs and build network namespaces. Tests run one at a time because
# they measure CPU time and must not disturb each other.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -- --test-threads=1
