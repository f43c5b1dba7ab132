#!/usr/bin/env bash
# What calibration intervals (--calibrate-every) cost and give (root; needs
# iperf3 and jq). Under iperf3 TCP with BBR over loopback, client and server
# pinned to one CPU, it runs `netto stat --tier sampled --json` without and
# with --calibrate-every in turn, and prints a Markdown table with a row
# per run: netto's mean own cost (and the calibration intervals' own), and,
# for the runs that calibrate, each event's calibration at the end beside
# its mean estimate over its mean exact time in the calibration intervals.
# With NETTO_BENCH_TABLE=1 the table is written over the `calibration`
# table of docs/src/performance.md (scripts/bench-table.sh).
#
#   benches/calibration.sh [--seconds S] [--every S] [--rounds N] [--cpu C]
#                          [--netto PATH] [--out DIR]
#
# Defaults: 60 s per run, --calibrate-every 10, 2 rounds (a run of each
# per round), CPU 1, netto from target/release. --out keeps each run's JSON
# there; by default it goes to a temporary directory that is removed.
# iperf3, netto and the temporary files are gone on every way out, Ctrl-C
# included. Run it with nothing else on the machine: it prints the load
# average before and after.
set -euo pipefail

seconds=60 every=10 rounds=2 cpu=1 netto=target/release/netto out=""
command="benches/calibration.sh${*:+ $*}"
usage() {
  echo "calibration: $1 (usage: benches/calibration.sh [--seconds S] [--every S] [--rounds N] [--cpu C] [--netto PATH] [--out DIR])" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds | --every | --rounds | --cpu | --netto | --out) [ $# -ge 2 ] || usage "$1 needs a value" ;;
    *) usage "unknown argument $1" ;;
  esac
  case "$1" in
    --seconds) seconds=$2 ;;
    --every) every=$2 ;;
    --rounds) rounds=$2 ;;
    --cpu) cpu=$2 ;;
    --netto) netto=$2 ;;
    --out) out=$2 ;;
  esac
  shift 2
done
for n in "$seconds" "$every" "$rounds"; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || usage "$n is not a positive whole number"
done
[[ $cpu =~ ^[0-9]+$ ]] && [ -d "/sys/devices/system/cpu/cpu$cpu" ] || usage "there is no CPU $cpu"
[ -x "$netto" ] || usage "no netto at $netto (cargo build --release)"
for tool in iperf3 jq taskset; do
  command -v "$tool" >/dev/null || usage "$tool is missing (scripts/install-deps.sh)"
done
[ "$(id -u)" = 0 ] || usage "needs root (netto)"
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then "$here/scripts/bench-table.sh" calibration --check; fi

keep=1
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/netto-calibration.XXXXXX"); keep=0; fi
mkdir -p "$out"
port=$((20000 + $$ % 20000))
server="" client="" stat=""
cleanup() {
  for pid in $stat $client $server; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$keep" = 0 ]; then rm -rf "$out"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

modprobe tcp_bbr 2>/dev/null || true
load_before=$(cut -d' ' -f1 /proc/loadavg)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c "$cpu" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
server=$!
sleep 0.5
taskset -c "$cpu" iperf3 -c 127.0.0.1 -p "$port" -C bbr -t $((rounds * seconds * 2 + 10)) >/dev/null 2>&1 &
client=$!
sleep 3

# One row per run: its intervals, netto's mean own cost over them and over
# its calibration intervals, and per event the calibration at the end
# (agreement +- its error, samples) and the mean estimate over the mean
# exact time.
summarize='
  def mean(f): if length == 0 then null else (map(f) | add / length) end;
  def r3: . * 1000 | round / 1000;
  [.[] | select(.interval_s > 0.9)] as $all
  | ($all | map(select(.calibrating))) as $cal
  | ($all | map(select(.calibrating | not))) as $est
  | [$round, $run, "\($all | length) (\($cal | length))",
     ($all | mean(.overhead.cost_percent) | r3 | tostring),
     (($cal | mean(.overhead.cost_percent)) as $c | if $c then $c | r3 | tostring else "-" end)]
    + [["sock_send", "sock_recv", "net_rx_softirq", "net_timers"][] as $k
       | if ($cal | length) == 0 or ($est | length) == 0 then "-" else
           ($est[-1].events[$k].calibration) as $c
           | (if $c then "\($c.agreement | r3) +-\($c.agreement / ($c.samples | sqrt) * 100 | round / 100) (\($c.samples))" else "none" end)
             + "; \(($est | mean(.events[$k].total_ns)) / ($cal | mean(.events[$k].total_ns)) | r3)"
         end]
  | "| " + join(" | ") + " |"'

table="| round | run | intervals (calibration) | own cost %, mean | calibration intervals' own cost %, mean | \`sock_send\`: calibration (samples); estimate / exact | \`sock_recv\` | \`net_rx_softirq\` | \`net_timers\` |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
echo "$table"
for round in $(seq "$rounds"); do
  for mode in plain calibrating; do
    args=(stat --tier sampled --duration "$seconds" --json)
    run=without
    if [ "$mode" = calibrating ]; then args+=(--calibrate-every "$every"); run="\`--calibrate-every $every\`"; fi
    "$netto" "${args[@]}" >"$out/$mode$round.json" 2>"$out/$mode$round.err" &
    stat=$!
    wait "$stat" || { echo "calibration: netto failed: $(tail -1 "$out/$mode$round.err")" >&2; exit 1; }
    stat=""
    row=$(jq -rs --arg round "$round" --arg run "$run" "$summarize" "$out/$mode$round.json")
    echo "$row"
    table+=$'\n'$row
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then
  echo "$table" | "$here/scripts/bench-table.sh" calibration --load-before "$load_before" \
    --command "NETTO_BENCH_TABLE=1 $command"
fi
