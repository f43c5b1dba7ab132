#!/usr/bin/env bash
# What calibration intervals (--calibrate-every) cost and give (root; needs
# iperf3 and jq). Under iperf3 TCP with BBR over loopback, client and server
# pinned to one CPU, it runs `netto stat --tier sampled --json` without and
# with --calibrate-every in turn, and prints for each run netto's mean own
# cost (and the calibration intervals' own), and, for the runs that
# calibrate, each event's calibration at the end beside its mean estimate
# over its mean exact time in the calibration intervals.
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
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c "$cpu" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
server=$!
sleep 0.5
taskset -c "$cpu" iperf3 -c 127.0.0.1 -p "$port" -C bbr -t $((rounds * seconds * 2 + 10)) >/dev/null 2>&1 &
client=$!
sleep 3

# Mean own cost of the whole intervals, of the calibration intervals, and
# per event at the end: calibration, samples, mean estimate / mean exact.
summarize='
  [.[] | select(.interval_s > 0.9)] as $all
  | ($all | map(select(.calibrating))) as $cal
  | ($all | map(select(.calibrating | not))) as $est
  | def mean(f): if length == 0 then null else (map(f) | add / length) end;
  "intervals \($all | length), calibration intervals \($cal | length); own cost: mean \($all | mean(.overhead.cost_percent) * 1000 | round / 1000) %, calibration intervals \(($cal | mean(.overhead.cost_percent)) as $c | if $c then $c * 1000 | round / 1000 else "-" end) %",
  ( ["net_rx_softirq", "sock_send", "sock_recv", "net_timers"][] as $k
    | select(($cal | length) > 0)
    | ($est[-1].events[$k].calibration) as $c
    | "  \($k): calibration \(if $c then "\($c.agreement * 1000 | round / 1000) +-\($c.agreement / ($c.samples | sqrt) * 100 | round / 100) (\($c.samples) samples)" else "none" end), estimate / exact \(($est | mean(.events[$k].total_ns)) / ($cal | mean(.events[$k].total_ns)) * 1000 | round / 1000)" )'

for round in $(seq "$rounds"); do
  for mode in plain calibrating; do
    args=(stat --tier sampled --duration "$seconds" --json)
    [ "$mode" = calibrating ] && args+=(--calibrate-every "$every")
    "$netto" "${args[@]}" >"$out/$mode$round.json" 2>"$out/$mode$round.err" &
    stat=$!
    wait "$stat" || { echo "calibration: netto failed: $(tail -1 "$out/$mode$round.err")" >&2; exit 1; }
    stat=""
    echo "round $round, $mode:"
    jq -rs "$summarize" "$out/$mode$round.json" | sed 's/^/  /'
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
