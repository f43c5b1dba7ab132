#!/usr/bin/env bash
# Rewrites one benchmark's table in docs/src/performance.md with the table
# read from stdin, so the page holds each benchmark's latest run and
# nothing is appended. Every benchmark publishes through this script (the
# Rust ones through benches/table/), when run with NETTO_BENCH_TABLE=1.
#
#   scripts/bench-table.sh NAME --load-before L --command CMD [--page FILE] < table.md
#   scripts/bench-table.sh NAME --check [--page FILE]
#
# The table goes between the page's two marker lines
#   <!-- bench:NAME:start -->
#   <!-- bench:NAME:end -->
# under one caption line saying when, where and how it was made:
#   Run: DATE, MACHINE; load average L before, A after; `CMD`
# (DATE in UTC, A the 1-minute load average now). The page is replaced in
# one rename, so it is never half-written. --check only says whether the
# page has NAME's markers, once each and in order, so a benchmark can
# refuse to start a run whose table it could not write.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
page=$here/docs/src/performance.md
name="" load_before="" command="" check=0
usage() {
  echo "bench-table: $1 (usage: scripts/bench-table.sh NAME --load-before L --command CMD [--page FILE] < table.md, or NAME --check [--page FILE])" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift; continue ;;
    --load-before | --command | --page) [ $# -ge 2 ] || usage "$1 needs a value" ;;
    -*) usage "unknown argument $1" ;;
    *) [ -z "$name" ] || usage "one NAME only"; name=$1; shift; continue ;;
  esac
  case "$1" in
    --load-before) load_before=$2 ;;
    --command) command=$2 ;;
    --page) page=$2 ;;
  esac
  shift 2
done
[[ $name =~ ^[a-z0-9][a-z0-9-]*$ ]] || usage "NAME must be lower-case letters, digits and dashes"
[ -f "$page" ] || usage "no page at $page"
start="<!-- bench:$name:start -->" end="<!-- bench:$name:end -->"
starts=$(grep -cxF -- "$start" "$page" || true)
ends=$(grep -cxF -- "$end" "$page" || true)
[ "$starts" = 1 ] && [ "$ends" = 1 ] ||
  usage "$page must have the line '$start' and the line '$end' once each (found $starts and $ends)"
[ "$(grep -nxF -- "$start" "$page" | cut -d: -f1)" -lt "$(grep -nxF -- "$end" "$page" | cut -d: -f1)" ] ||
  usage "$page has '$end' before '$start'"
[ "$check" = 0 ] || exit 0

[ -n "$command" ] || usage "--command is missing"
[[ $load_before =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage "--load-before must be a load average, not '$load_before'"
table=$(cat)
[ -n "${table//[[:space:]]/}" ] || usage "no table on stdin"

cpus=$(nproc)
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
virtual=""
grep -qw hypervisor /proc/cpuinfo && virtual=", virtual"
machine="$cpus CPUs (${model:-unknown model}$virtual), Linux $(uname -r)"
caption="Run: $(date -u +%F), $machine; load average $load_before before, $(cut -d' ' -f1 /proc/loadavg) after; \`$command\`"

tmp=$(mktemp "$(dirname "$page")/.performance.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# Everything outside the markers stays as it is; between them, the caption,
# a blank line and the table.
# (Through the environment: awk -v would expand backslashes.)
START=$start END=$end CAPTION=$caption TABLE=$table awk '
  $0 == ENVIRON["START"] { print; print ENVIRON["CAPTION"]; print ""; print ENVIRON["TABLE"]; skip = 1; next }
  $0 == ENVIRON["END"] { skip = 0 }
  !skip { print }
' "$page" >"$tmp"
chmod --reference="$page" "$tmp"
mv "$tmp" "$page"
trap - EXIT
echo "bench-table: $name rewritten in $page"
