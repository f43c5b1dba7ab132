#!/usr/bin/env bash
# Does a timer-driven stack sampler see the timer softirq as often as its
# time says, on this machine, without netto? (root; needs perf and iperf3)
#
# netto's `sampled` tier reads the network timers at 0.7-0.8 of their
# exact time (docs/src/concepts/tiers.md). This asks the same question of perf alone,
# so the answer cannot come from netto's programs: iperf3 TCP with BBR
# (whose pacing runs from the HRTIMER softirq) through a veth pair into a
# private namespace, client and server pinned to one CPU, while `perf
# record` takes cpu-clock samples on that CPU (a hrtimer, like netto's
# sampler) and traces every softirq's entry and exit there. Each softirq's
# samples are set against its traced time x the sampling rate, and, for
# HRTIMER, where the samples fall around its runs.
#
#   benches/timer_sampling.sh [--seconds S] [--period-ns N] [--cpu C]
#                             [--callchains] [--out DIR]
#
# Defaults: 12 s, 1001001 ns (about 999 Hz), CPU 1, no callchains
# (--callchains adds `-g`, what a profiler pays per sample). --out keeps
# perf.data and the decoded events there; by default they go to a
# temporary directory under $TMPDIR that is removed. The namespace, the
# veth pair, iperf3, perf and the temporary files are gone on every way
# out, Ctrl-C included. The run ends with a one-row Markdown table, which
# NETTO_BENCH_TABLE=1 writes over the `timer-sampling` table of
# docs/src/performance.md (`timer-sampling-callchains` with --callchains).
set -euo pipefail

seconds=12 period=1001001 cpu=1 callchains="" out=""
command="benches/timer_sampling.sh${*:+ $*}"
usage() {
  echo "timer_sampling: $1 (usage: benches/timer_sampling.sh [--seconds S] [--period-ns N] [--cpu C] [--callchains] [--out DIR])" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --callchains) callchains=-g; shift; continue ;;
    --seconds | --period-ns | --cpu | --out) [ $# -ge 2 ] || usage "$1 needs a value" ;;
    *) usage "unknown argument $1" ;;
  esac
  case "$1" in
    --seconds) seconds=$2 ;;
    --period-ns) period=$2 ;;
    --cpu) cpu=$2 ;;
    --out) out=$2 ;;
  esac
  shift 2
done
for n in "$seconds" "$period"; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || { echo "timer_sampling: $n is not a positive whole number" >&2; exit 2; }
done
[[ $cpu =~ ^[0-9]+$ ]] || { echo "timer_sampling: bad --cpu $cpu" >&2; exit 2; }
[ "$period" -ge 100000 ] || { echo "timer_sampling: --period-ns under 100000 (10 kHz) is not what a profiler runs" >&2; exit 2; }
[ -d "/sys/devices/system/cpu/cpu$cpu" ] || { echo "timer_sampling: there is no CPU $cpu" >&2; exit 2; }
for tool in perf iperf3 ip taskset awk; do
  command -v "$tool" >/dev/null || { echo "timer_sampling: $tool is missing (scripts/install-deps.sh)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "timer_sampling: needs root (a namespace, a veth pair, perf -C)" >&2; exit 2; }
table_name=timer-sampling${callchains:+-callchains}
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then "$here/scripts/bench-table.sh" "$table_name" --check; fi

keep=1
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/netto-timer-sampling.XXXXXX"); keep=0; fi
mkdir -p "$out"
ns=netto-ts-$$ host_if=nts$$a peer_if=nts$$b port=$((20000 + $$ % 20000))
server="" client="" recorder=""
cleanup() {
  trap - EXIT INT TERM HUP
  for pid in $recorder $client $server; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip link del "$host_if" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  [ "$keep" = 1 ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

. "$here/benches/veth_load.sh"
veth_up "$ns" "$host_if" "$peer_if" 10.240.0
iperf3_server "$ns" "$cpu" "$port" "$out/server.txt"
server=$!
# The load outlasts the recording by 2 s of warm-up and 1 s after.
taskset -c "$cpu" iperf3 -c 10.240.0.2 -p "$port" -C bbr -t $((seconds + 3)) \
  >"$out/client.txt" 2>&1 &
client=$!
sleep 2
load_before=$(cut -d' ' -f1 /proc/loadavg)
# A background job keeps the shell's traps live while perf runs.
perf record -q -o "$out/perf.data" -C "$cpu" $callchains \
  -e "cpu-clock/period=$period/" -e irq:softirq_entry -e irq:softirq_exit \
  -- sleep "$seconds" >"$out/perf.txt" 2>&1 &
recorder=$!
wait "$recorder" || { echo "timer_sampling: perf record failed:" >&2; cat "$out/perf.txt" >&2; exit 1; }
recorder=""
wait "$client" || { echo "timer_sampling: iperf3 failed:" >&2; cat "$out/client.txt" >&2; exit 1; }
client=""
load_after=$(cut -d' ' -f1 /proc/loadavg)
perf script -i "$out/perf.data" --ns -F time,event,trace >"$out/events.txt" 2>/dev/null

echo "perf cpu-clock every $period ns on CPU $cpu${callchains:+ with callchains}, $seconds s," \
  "iperf3 BBR through veth (load average $load_before before, $load_after after)"
awk -v period="$period" -v perf="cpu-clock${callchains:+ $callchains}" -v table="$out/table.md" '
  # Lines: "  SECONDS.NANOS: EVENT: rest".
  {
    split($1, t, /[.:]/)
    now = t[1] * 1e9 + t[2]
    if (first == "") first = now
    last = now
  }
  $2 == "irq:softirq_entry:" {
    match($0, /action=[A-Z_]+/)
    vec = substr($0, RSTART + 7, RLENGTH - 7)
    start = now
    # A sample taken outside softirqs just before an HRTIMER run.
    if (vec == "HRTIMER") {
      gap = now - (exit_at == "" ? now : exit_at)
      before_expected += (gap < 3000 ? gap : 3000) / period
      if (pending != "" && now - pending < 3000) before++
    }
    pending = ""
    next
  }
  $2 == "irq:softirq_exit:" {
    if (vec != "") {
      len = now - start
      time[vec] += len
      if (vec == "HRTIMER") {
        runs++
        early_expected += (len < 2000 ? len : 2000) / period
      }
    }
    vec = ""
    exit_at = now
    next
  }
  $2 ~ /^cpu-clock/ {
    samples++
    if (vec == "") { outside++; pending = now; next }
    hits[vec]++
    if (vec == "HRTIMER" && now - start < 2000) early++
  }
  # A context: its share of the samples over its share of the time.
  function ratio(v) {
    return (time[v] > 0) ? sprintf("%.3f", (hits[v] / samples) / (time[v] / span)) : "-"
  }
  function row(name, ns, n) {
    printf "%-9s %9.3f %10.4f %8d %13.4f %6.3f\n", name, ns / 1e9, ns / span, n, n / samples, (n / samples) / (ns / span)
  }
  END {
    span = last - first
    if (samples == 0 || span <= 0) { print "timer_sampling: no samples recorded" > "/dev/stderr"; exit 1 }
    printf "%d samples in %.3f s: %.4f of the rate asked\n", samples, span / 1e9, samples / (span / period)
    # Ratio: share of the samples over share of the time, so
    # samples perf did not take lower no context.
    printf "%-9s %9s %10s %8s %13s %6s\n", "softirq", "time s", "time share", "samples", "sample share", "ratio"
    for (v in time) {
      inside += time[v]
      if (time[v] / period < 1) continue
      row(v, time[v], hits[v])
    }
    row("none", span - inside, outside)
    if (runs > 0) {
      printf "HRTIMER: %d runs, %.2f us on average\n", runs, time["HRTIMER"] / runs / 1e3
      printf "HRTIMER: samples in the first 2 us of a run %d, expected %.1f\n", early, early_expected
      printf "HRTIMER: samples outside softirqs in the 3 us before a run %d, expected %.1f\n", before, before_expected
    }
    printf "| perf | period ns | HRTIMER | NET_RX | HRTIMER samples in the first 2 us of a run (expected) | samples outside softirqs in the 3 us before a run (expected) |\n" > table
    printf "| --- | --- | --- | --- | --- | --- |\n" > table
    printf "| %s | %d | %s | %s | %d (%.0f) | %d (%.0f) |\n", perf, period, ratio("HRTIMER"), ratio("NET_RX"), early, early_expected, before, before_expected > table
    close(table)
  }
' "$out/events.txt"
echo
cat "$out/table.md"
if [ "${NETTO_BENCH_TABLE:-}" = 1 ]; then
  "$here/scripts/bench-table.sh" "$table_name" --load-before "$load_before" \
    --command "NETTO_BENCH_TABLE=1 $command" <"$out/table.md"
fi
