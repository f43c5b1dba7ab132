#!/usr/bin/env bash
# Serving is not measuring (root): on an idle host, `netto serve` with its
# defaults and one keep-alive client asking for /debug/pprof/profile 20
# times a second over ever-changing windows (1 to 300 s) for 30 s. Prints
# the requests served and refused (429), the tiers and budget steps of the
# run, and measuring_percent and serving_percent over its snapshots (the
# first two, which pay for loading the programs, left out), with the load
# average before and after. netto is stopped with SIGTERM and must exit 0.
#
#   benches/pprof_loop.sh [--netto PATH] [--port PORT]
#
# Defaults: netto from target/release, port 19465.
set -euo pipefail
netto=target/release/netto
port=19465
while [ $# -gt 0 ]; do
  case "$1" in
    --netto) netto=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    *) echo "usage: $0 [--netto PATH] [--port PORT]" >&2; exit 2 ;;
  esac
done
uptime
"$netto" serve --listen "127.0.0.1:$port" 2>/dev/null &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
sleep 4
python3 - "$port" <<'PY'
import http.client, json, sys, time
port = int(sys.argv[1])
c = http.client.HTTPConnection("127.0.0.1", port)
start, window, served, refused = time.time(), 1, 0, 0
while time.time() - start < 30:
    asked = time.time()
    c.request("GET", f"/debug/pprof/profile?seconds={window}")
    r = c.getresponse()
    r.read()
    served += r.status == 200
    refused += r.status == 429
    window = window % 300 + 1
    time.sleep(max(0.0, 0.05 - (time.time() - asked)))
time.sleep(5)  # the client's rate refills: the history is a drawing too
c.request("GET", "/api/v1/history")
history = json.loads(c.getresponse().read())
judged = history[2:]
measuring = [s["overhead"]["measuring_percent"] for s in judged]
serving = [s["overhead"]["serving_percent"] for s in judged]
print(f"requests served {served}, refused {refused}; {len(history)} snapshots; "
      f"tiers {sorted({s['tier'] for s in history})}; "
      f"budget steps down {max(s['budget']['steps_down'] for s in history)}")
print(f"measuring_percent mean {sum(measuring) / len(measuring):.2f} max {max(measuring):.2f}; "
      f"serving_percent mean {sum(serving) / len(serving):.2f} max {max(serving):.2f}")
PY
kill -TERM $pid
wait $pid
echo "netto exit $?"
trap - EXIT
uptime
