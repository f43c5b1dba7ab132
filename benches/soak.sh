#!/usr/bin/env bash
# Long run of `netto serve` (root): the demo traffic, stack sampling at a high
# frequency, many clients on the snapshot stream, and slow readers that ask
# for a recording of the history and never read it. Checks that
#   - the memory of netto's processes (the server and every child it
#     starts, summed) stays within --rss-bound of its low after warm-up,
#   - every stream client gets every snapshot (its snapshots tile time, and
#     it has all of them from its first to the end of the run),
#   - every loss is counted: what the snapshots say was lost adds up to
#     what /metrics counts, and no stream client was cut off,
#   - a /metrics scrape on a new connection, made every --rss-every
#     seconds beside the slow readers, answers within a second.
# It prints the figures as a Markdown table and exits 1 when a check fails;
# with NETTO_BENCH_TABLE=1, a run whose checks all held writes that table
# over the `soak` table of docs/src/performance.md.
#
#   benches/soak.sh [--duration S] [--clients N] [--slow-readers N] [--frequency HZ]
#                   [--interval S] [--history S] [--warmup S] [--rss-every S]
#                   [--rss-bound FRACTION] [--netto PATH] [--out DIR] [--port P]
#
# Defaults: 600 s, 20 clients, 50 slow readers (each a new request every
# 15 s), 10000 Hz, 1 s intervals, 60 s of history,
# warm-up = history + 30 s (history is what grows until it is full), RSS
# read every 5 s, bound 0.10, netto from target/release, then
# target/debug. --out keeps the
# raw files (streams, RSS samples, metrics) there; by default they go to a
# temporary directory that is removed. netto, the clients and the
# temporary files are gone on every way out (the demo namespace goes with
# netto, which is stopped with SIGTERM).
set -euo pipefail

duration=600 clients=20 slow_readers=50 frequency=10000 interval=1 history=60 warmup="" rss_every=5 bound=0.10
netto="" out="" port=""
usage() { sed -n '17,19p' "$0" >&2; exit 2; }
command="benches/soak.sh${*:+ $*}"
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --duration) duration=$2 ;;
    --clients) clients=$2 ;;
    --slow-readers) slow_readers=$2 ;;
    --frequency) frequency=$2 ;;
    --interval) interval=$2 ;;
    --history) history=$2 ;;
    --warmup) warmup=$2 ;;
    --rss-bound) bound=$2 ;;
    --rss-every) rss_every=$2 ;;
    --netto) netto=$2 ;;
    --out) out=$2 ;;
    --port) port=$2 ;;
    *) usage ;;
  esac
  shift 2
done
for n in "$duration" "$clients" "$slow_readers" "$frequency" "$history" "$rss_every"; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || { echo "soak: $n is not a positive whole number" >&2; exit 2; }
done
[[ $interval =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "soak: bad --interval $interval" >&2; exit 2; }
warmup=${warmup:-$((history + 30))}
[ "$warmup" -lt "$duration" ] || { echo "soak: warm-up ($warmup s) must be shorter than the run ($duration s)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then "$here/scripts/bench-table.sh" soak --check; fi
if [ -z "$netto" ]; then
  for candidate in "$here/target/release/netto" "$here/target/debug/netto"; do
    [ -x "$candidate" ] && { netto=$candidate; break; }
  done
fi
[ -x "${netto:-}" ] || { echo "soak: no netto binary (cargo build --release, or --netto PATH)" >&2; exit 2; }
for tool in curl jq awk; do
  command -v "$tool" >/dev/null || { echo "soak: $tool is missing (scripts/install-deps.sh)" >&2; exit 2; }
done
port=${port:-$((20000 + $$ % 20000))}
base="http://127.0.0.1:$port"

keep=1
if [ -z "$out" ]; then out=$(mktemp -d /tmp/netto-soak.XXXXXX); keep=0; fi
mkdir -p "$out"
server="" client_pids=()
cleanup() {
  trap - EXIT INT TERM HUP
  for pid in "${client_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill -TERM "$server" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  [ "$keep" = 1 ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# Every process of the tree rooted at $1: pid, name, VmRSS in KiB.
tree_rss() {
  local pids=("$1") i=0 child
  while [ $i -lt ${#pids[@]} ]; do
    for child in $(cat /proc/"${pids[$i]}"/task/*/children 2>/dev/null); do pids+=("$child"); done
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do
    awk -v pid="$pid" '/^Name:/ {name=$2} /^VmRSS:/ {print pid, name, $2}' /proc/"$pid"/status 2>/dev/null || true
  done
}

load_before=$(cut -d' ' -f1 /proc/loadavg)
"$netto" serve --demo --listen "127.0.0.1:$port" --frequency "$frequency" \
  --interval "$interval" --history "$history" >"$out/serve.log" 2>&1 &
server=$!
for _ in $(seq 600); do
  curl -sf "$base/api/v1/source" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "soak: netto serve ended:" >&2; cat "$out/serve.log" >&2; exit 1; }
  sleep 0.1
done
curl -sf "$base/api/v1/source" >"$out/source.json" || { echo "soak: netto serve did not answer" >&2; exit 1; }

for i in $(seq "$clients"); do
  curl -sN "$base/api/v1/stream" >"$out/client-$i.sse" 2>/dev/null &
  client_pids+=($!)
done
# Slow readers: each asks for a recording of the history on a connection of
# its own and never reads it, then after 15 s closes and asks again.
for i in $(seq "$slow_readers"); do
  (
    while :; do
      exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 0
      printf 'GET /api/v1/recording HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >&3
      sleep 15
      exec 3>&-
    done
  ) &
  client_pids+=($!)
done
started=$(date +%s)
: >"$out/rss.tsv"
: >"$out/scrapes.txt"
while [ $(($(date +%s) - started)) -lt "$duration" ]; do
  kill -0 "$server" 2>/dev/null || { echo "soak: netto serve died:" >&2; tail "$out/serve.log" >&2; exit 1; }
  tree_rss "$server" >"$out/tree.txt"
  echo "$(($(date +%s) - started)) $(awk '{s += $3} END {print s}' "$out/tree.txt")" >>"$out/rss.tsv"
  curl -so /dev/null -m 30 -w '%{time_total}\n' "$base/metrics" >>"$out/scrapes.txt" || echo 30 >>"$out/scrapes.txt"
  sleep "$rss_every"
done
curl -sf "$base/metrics" >"$out/metrics.txt"
# Let the clients receive what was sent by the time the metrics were read.
sleep 1
for pid in "${client_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
wait "${client_pids[@]}" 2>/dev/null || true
client_pids=()

failed=0
fail() { echo "FAIL: $*"; failed=1; }
# The report: one row per finding, printed as a table once every check ran.
table="| what | result |
| --- | --- |"
report() { table+=$'\n'"| $1 | $2 |"; }
mb() { awk -v k="$1" 'BEGIN {printf "%.1f MB", k / 1024}'; }
metric() { awk -v m="$1" '$1 == m {print $2}' "$out/metrics.txt"; }
# One line per snapshot a client received: ts interval_s and the loss counts.
snapshots_of() {
  sed -n 's/^data: //p' "$1" | jq -r 'select(.ts) | [.ts, .interval_s,
    (.sampling.samples // 0), (.sampling.dropped // 0), (.sampling.failed_stacks // 0),
    .losses.task_storage_failures, .losses.recursion_misses, .losses.dropped_halves] | @tsv'
}

echo "netto soak: $duration s, $clients stream clients, $slow_readers slow readers, $frequency Hz, $interval s intervals, demo traffic; $(uptime)"
report "run" "$duration s, $clients stream clients, $slow_readers slow readers, stack sampling at $frequency Hz, $interval s intervals, $history s of history, demo traffic"
report "netto's processes at the end" "$(awk '{printf "%s%s (pid %s) %.1f MB", sep, $2, $1, $3 / 1024; sep = ", "}' "$out/tree.txt")"

# Memory: after warm-up, within the bound of its low.
read -r low high < <(awk -v w="$warmup" '$1 >= w {if (!n++ || $2 < lo) lo = $2; if ($2 > hi) hi = $2} END {print lo + 0, hi + 0}' "$out/rss.tsv")
first=$(awk 'NR == 1 {print $2}' "$out/rss.tsv")
report "RSS of netto's processes" "$(mb "$first") at the start; $(mb "$low") to $(mb "$high") after $warmup s of warm-up (read $(wc -l <"$out/rss.tsv") times, every $rss_every s; bound +$bound of the low)"
awk -v lo="$low" -v hi="$high" -v b="$bound" 'BEGIN {exit !(lo > 0 && hi <= lo * (1 + b))}' ||
  fail "RSS grew from $low to $high KiB after warm-up (bound $bound)"

# Every client got every snapshot up to the one /metrics was read after.
intervals=$(metric netto_intervals_total)
last_ts=$(metric netto_last_snapshot_timestamp_seconds)
reference=""
for i in $(seq "$clients"); do
  snapshots_of "$out/client-$i.sse" >"$out/client-$i.all"
  awk -v end="$last_ts" '$1 <= end + 0.0005' "$out/client-$i.all" >"$out/client-$i.tsv"
  got=$(wc -l <"$out/client-$i.tsv")
  gaps=$(awk 'NR > 1 {gap = $1 - prev; d = gap - $2; if (d < 0) d = -d; if (d > 0.01) n++} {prev = $1} END {print n + 0}' "$out/client-$i.tsv")
  behind=$(awk -v end="$last_ts" 'END {print ($1 + 0 < end - 0.0005) ? 1 : 0}' "$out/client-$i.tsv")
  [ "$gaps" = 0 ] || fail "client $i: $gaps snapshots missing between the $got it got"
  [ "$behind" = 0 ] || fail "client $i: its last snapshot is older than the server's last"
  if [ -z "$reference" ]; then
    reference=$i
  elif ! cmp -s <(cut -f1 "$out/client-$i.tsv" | tail -n +2) <(cut -f1 "$out/client-$reference.tsv" | awk -v f="$(head -1 "$out/client-$i.tsv" | cut -f1)" '$1 > f'); then
    fail "client $i did not get the same snapshots as client $reference"
  fi
  [ "$i" = 1 ] && first_client=$got
done
report "snapshots" "$intervals sent; client 1 got $first_client; every client's snapshots tile time up to the last one"

# Losses: what the snapshots report is what /metrics counts.
read -r samples dropped failed_stacks storage recursion halves < <(awk -F'\t' '{for (i = 3; i <= 8; i++) s[i] += $i} END {print s[3] + 0, s[4] + 0, s[5] + 0, s[6] + 0, s[7] + 0, s[8] + 0}' "$out/client-1.tsv")
report "losses over client 1's snapshots" "samples $samples, dropped $dropped, failed_stacks $failed_stacks, task_storage_failures $storage, recursion_misses $recursion, dropped_halves $halves"
if [ "$first_client" = "$intervals" ]; then
  check() {
    local name=$1 from_snapshots=$2 counted
    counted=$(metric "$name")
    awk -v a="$from_snapshots" -v b="${counted:-x}" 'BEGIN {exit !(a == b)}' ||
      fail "$name is ${counted:-missing}, the snapshots say $from_snapshots"
  }
  check netto_samples_dropped_total "$dropped"
  check netto_stack_failures_total "$failed_stacks"
  check 'netto_losses_total{kind="task_storage_failures"}' "$storage"
  check 'netto_losses_total{kind="recursion_misses"}' "$recursion"
  check 'netto_losses_total{kind="dropped_halves"}' "$halves"
else
  fail "client 1 got $first_client of $intervals snapshots: it connected late"
fi
# Scrapes beside the slow readers: each within a second.
read -r scrapes slowest < <(awk '{if ($1 > m) m = $1} END {print NR, m + 0}' "$out/scrapes.txt")
report "/metrics beside the slow readers" "$scrapes scrapes, the slowest $slowest s"
awk -v m="$slowest" 'BEGIN {exit !(m < 1)}' || fail "a /metrics scrape took $slowest s"
cut_off=$(metric netto_stream_clients_dropped_total)
[ "${cut_off:-x}" = 0 ] || fail "${cut_off:-?} stream clients were cut off"
report "stream clients cut off" "${cut_off:-?}"
echo
echo "$table"
if [ "$failed" = 0 ]; then echo "soak: every check held"; else echo "soak: FAILED"; fi
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then
  if [ "$failed" = 0 ]; then
    echo "$table" | "$here/scripts/bench-table.sh" soak --load-before "$load_before" \
      --command "NETTO_BENCH_TABLE=1 $command"
  else
    echo "soak: a check failed, so the table in docs/src/performance.md stays as it was"
  fi
fi
exit "$failed"
