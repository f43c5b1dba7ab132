#!/usr/bin/env bash
# How close the calibrated estimates come (issue 34; root, needs iperf3, jq
# and ip). Under iperf3 TCP with BBR through a veth pair into a private
# namespace, client and server pinned to one CPU, each round runs in turn
# `netto stat --tier exact`, `netto stat --tier sampled --calibrate-every
# 1` and, for the frequency table, `netto record --tier sampled` with a
# calibration interval every other half second at each of --frequencies.
# It prints two Markdown tables:
#   calibration: per event, the exact run's time, and the sampled run's
#     calibrated and raw estimates over it (means over each run's
#     intervals, medians over the rounds; only the sampled run's intervals
#     that carry an applied calibration count); and the same estimates over
#     the exact time of the sampled run's own calibration intervals, which
#     alternate with them (no drift of the load between runs);
#   calibration-frequency: per event and frequency, the calibration the
#     run's last estimate carries (the sampled tier's own samples x period
#     over the exact time in the newest calibration intervals: the ratio
#     estimates are divided by), median over the rounds.
# With NETTO_BENCH_TABLE=1 both are written over their tables of
# docs/src/performance.md (scripts/bench-table.sh).
#
#   benches/calibration.sh [--seconds S] [--rounds N] [--cpu C]
#                          [--frequencies "F1 F2 ..."] [--netto PATH] [--out DIR]
#
# Defaults: 8 s per run, 3 rounds, CPU 1, frequencies "99 499 999", netto
# from target/release. --out keeps each run's JSON there; by default it
# goes to a temporary directory that is removed. The namespace, veth pair,
# iperf3, netto and the temporary files are gone on every way out, Ctrl-C
# included. Run it with nothing else on the machine: it prints the load
# average before and after.
set -euo pipefail

seconds=8 rounds=3 cpu=1 frequencies="99 499 999" netto=target/release/netto out=""
command="benches/calibration.sh${*:+ $*}"
usage() {
  echo "calibration: $1 (usage: benches/calibration.sh [--seconds S] [--rounds N] [--cpu C] [--frequencies \"F1 F2 ...\"] [--netto PATH] [--out DIR])" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds | --rounds | --cpu | --frequencies | --netto | --out) [ $# -ge 2 ] || usage "$1 needs a value" ;;
    *) usage "unknown argument $1" ;;
  esac
  case "$1" in
    --seconds) seconds=$2 ;;
    --rounds) rounds=$2 ;;
    --cpu) cpu=$2 ;;
    --frequencies) frequencies=$2 ;;
    --netto) netto=$2 ;;
    --out) out=$2 ;;
  esac
  shift 2
done
for n in "$seconds" "$rounds" $frequencies; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || usage "$n is not a positive whole number"
done
[ -n "$frequencies" ] || usage "--frequencies needs at least one"
[[ $cpu =~ ^[0-9]+$ ]] && [ -d "/sys/devices/system/cpu/cpu$cpu" ] || usage "there is no CPU $cpu"
[ -x "$netto" ] || usage "no netto at $netto (cargo build --release)"
for tool in iperf3 jq ip taskset; do
  command -v "$tool" >/dev/null || usage "$tool is missing (scripts/install-deps.sh)"
done
[ "$(id -u)" = 0 ] || usage "needs root (netto, the namespace)"
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then
  "$here/scripts/bench-table.sh" calibration --check
  "$here/scripts/bench-table.sh" calibration-frequency --check
fi

keep=1
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/netto-calibration.XXXXXX"); keep=0; fi
mkdir -p "$out"
port=$((20000 + $$ % 20000))
ns=netto-cal-$$ host_if=ncal$$a peer_if=ncal$$b
server="" client="" run=""
cleanup() {
  trap - EXIT INT TERM HUP
  for pid in $run $client $server; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip link del "$host_if" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  if [ "$keep" = 0 ]; then rm -rf "$out"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

modprobe tcp_bbr 2>/dev/null || true
load_before=$(cut -d' ' -f1 /proc/loadavg)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
. "$here/benches/veth_load.sh"
veth_up "$ns" "$host_if" "$peer_if" 10.241.0
iperf3_server "$ns" "$cpu" "$port" /dev/null
server=$!
nfreq=$(wc -w <<<"$frequencies")
# Each run also starts and stops netto (BPF programs, kernel symbols).
total=$((rounds * (2 + nfreq) * (seconds + 20) + 10))
taskset -c "$cpu" iperf3 -c 10.241.0.2 -p "$port" -C bbr -t "$total" >/dev/null 2>&1 &
client=$!
sleep 3

# Runs netto with the arguments given, in the background so the traps stay
# live, and fails the benchmark with its last line if it fails.
netto_run() {
  kill -0 "$client" 2>/dev/null || { echo "calibration: the iperf3 load ended early" >&2; exit 1; }
  "$netto" "$@" 2>"$out/err" &
  run=$!
  wait "$run" || { echo "calibration: netto failed: $(tail -1 "$out/err")" >&2; exit 1; }
  run=""
}

events='["net_rx_softirq", "sock_send", "sock_recv", "net_timers"]'
for round in $(seq "$rounds"); do
  netto_run stat --tier exact --duration "$seconds" --json >"$out/exact$round.json"
  netto_run stat --tier sampled --calibrate-every 1 --duration "$seconds" --json >"$out/sampled$round.json"
  for hz in $frequencies; do
    netto_run record --tier sampled --frequency "$hz" --interval 0.5 --calibrate-every 0.5 \
      --duration "$seconds" --format json --force -o "$out/f$hz-$round.json"
  done
done

# Per round and event: mean exact ns (of the exact run, and of the sampled
# run's own calibration intervals), mean calibrated and raw ns over the
# sampled intervals that carry an applied calibration.
per_round='
  def mean(f): if length == 0 then null else (map(f) | add / length) end;
  ($exact | map(select(.interval_s > 0.9))) as $e
  | ($sampled | map(select(.interval_s > 0.9 and (.calibrating | not)))) as $s
  | ($sampled | map(select(.interval_s > 0.9 and .calibrating))) as $own
  | [$events[] as $k
     | ($s | map(select(.events[$k].calibration.applied // false))) as $c
     | {event: $k, exact: ($e | mean(.events[$k].total_ns)),
        own: ($own | mean(.events[$k].total_ns)),
        calibrated: ($c | mean(.events[$k].total_ns)),
        raw: ($c | mean(.events[$k].raw_ns)), intervals: ($c | length)}]'
# Per event: the calibration the last estimating interval of one recording
# carries (samples x period over exact time, pooled over its newest
# calibration intervals as the run pools them).
ratio='
  [.snapshots[] | select(.calibrating | not)][-1] as $last
  | [$events[] as $k | {event: $k, ratio: $last.events[$k].calibration.agreement}]'
median='def median: map(select(. != null)) | sort | if length == 0 then null
  elif length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;'
r3='def r3: if . == null then "-" else . * 1000 | round / 1000 | tostring end;'

rows=()
for round in $(seq "$rounds"); do
  rows+=("$(jq -n --argjson events "$events" \
    --slurpfile exact "$out/exact$round.json" \
    --slurpfile sampled "$out/sampled$round.json" "$per_round")")
done
table="| event | exact, ms per s | calibrated / exact | raw / exact | calibrated / exact, each round | same run: calibrated / exact | same run: raw / exact | intervals calibrated, each round |
| --- | --- | --- | --- | --- | --- | --- | --- |"
table+=$'\n'$(printf '%s\n' "${rows[@]}" | jq -rs --argjson events "$events" "$median $r3"'
  . as $rounds | $events[] as $k
  | [$rounds[] | .[] | select(.event == $k)] as $r
  | "| `\($k)` | \([$r[].exact / 1e6] | median | r3) | \([$r[] | if .calibrated then .calibrated / .exact else null end] | median | r3) | \([$r[] | if .raw then .raw / .exact else null end] | median | r3) | \([$r[] | if .calibrated then .calibrated / .exact else null end | r3] | join(", ")) | \([$r[] | if .calibrated and .own > 0 then .calibrated / .own else null end] | median | r3) | \([$r[] | if .raw and .own > 0 then .raw / .own else null end] | median | r3) | \([$r[].intervals | tostring] | join(", ")) |"')
echo "$table"

ftable="| event |$(for hz in $frequencies; do printf ' %s Hz |' "$hz"; done)
|---|$(for _ in $frequencies; do printf -- '---|'; done)"
franks=()
for hz in $frequencies; do
  franks+=("$(for round in $(seq "$rounds"); do jq --argjson events "$events" "$ratio" "$out/f$hz-$round.json"; done |
    jq -s --arg hz "$hz" '{hz: $hz, rounds: .}')")
done
ftable+=$'\n'$(printf '%s\n' "${franks[@]}" | jq -rs --argjson events "$events" "$median $r3"'
  . as $f | $events[] as $k
  | "| `\($k)` |" + ([$f[] | [.rounds[] | .[] | select(.event == $k) | .ratio] as $v
      | " \($v | median | r3) (\($v | map(r3) | join(", ")))"] | join(" |")) + " |"')
echo "$ftable"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then
  echo "$table" | "$here/scripts/bench-table.sh" calibration --load-before "$load_before" \
    --command "NETTO_BENCH_TABLE=1 $command"
  echo "$ftable" | "$here/scripts/bench-table.sh" calibration-frequency --load-before "$load_before" \
    --command "NETTO_BENCH_TABLE=1 $command"
fi
