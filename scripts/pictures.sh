#!/usr/bin/env bash
# Makes the manual's pictures from real runs of the release build, under the
# demo traffic, and writes them over the committed ones:
#   docs/images/top.png   `netto top --demo` in a real terminal (xterm under
#                         Xvfb, captured with ImageMagick's `import`)
#   docs/images/web.png   the page of `netto serve --demo` in headless Chromium
#                         (examples/page_screenshot.rs)
#   docs/images/flame.svg `netto record --demo`'s flame graph
# `scripts/pictures.sh [flame] [web] [top]` makes only those (default: all).
# Root (netto loads BPF and makes the demo's namespace). Never run by the
# tests: they must not rewrite tracked files. Installs xvfb, x11-utils, xterm
# and imagemagick when missing (nothing else needs them).
#
# Whatever it started is stopped however the script ends (an error, Ctrl-C,
# SIGTERM): each netto is stopped with SIGTERM and waited for, so it removes
# its demo namespace itself, then the terminal and X server. Everything
# temporary is in one directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "pictures: run as root (netto loads BPF and makes the demo's namespace)" >&2
  exit 1
fi

# How long the recording lasts, and how long netto serve and netto top run
# before their pictures: long enough for the history chart to fill in part
# and the breakdown to have samples.
RUN_S=${NETTO_PICTURES_RUN_S:-30}
PORT=${NETTO_PICTURES_PORT:-9469}

wanted=("$@")
for w in "${wanted[@]}"; do
  case $w in flame | web | top) ;; *)
    echo "pictures: no picture named $w (flame, web, top)" >&2
    exit 2
    ;;
  esac
done
wants() { [ "${#wanted[@]}" -eq 0 ] || [[ " ${wanted[*]} " == *" $1 "* ]]; }

work=$(mktemp -d /tmp/netto-pictures.XXXXXX)
pids=() # what this script started, newest last

# Stops one process it started: SIGTERM, then up to 15 s for it to clean up
# (netto removes its demo namespace), then SIGKILL.
stop() {
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  # netto inside the terminal first, so it ends on SIGTERM, not on the
  # terminal's hang-up.
  if [ -s "$work/top.pid" ]; then stop "$(cat "$work/top.pid")"; fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop "${pids[i]}"; done
  wait 2>/dev/null || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

missing=()
for p in xvfb x11-utils xterm imagemagick chromium fonts-dejavu-core curl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cargo build --release --bin netto
# One profile for both: the shooter builds on the release build's dependencies
# instead of a second, debug target.
cargo build --release --example page_screenshot
netto=$PWD/target/release/netto
shooter=$PWD/target/release/examples/page_screenshot
out=$PWD/docs/images
mkdir -p "$out"

wait_for() { # SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "pictures: no $what after ${seconds} s" >&2
  return 1
}

# The flame graph: one recording of the demo.
if wants flame; then
  "$netto" record --demo --duration "$RUN_S" --frequency 999 --force -o "$out/flame.svg"
fi

# The web page.
if wants web; then
  "$netto" serve --demo --listen "127.0.0.1:$PORT" --interval 1 --frequency 499 --budget off \
    >"$work/serve.log" 2>&1 &
  pids+=($!)
  wait_for 60 "netto serve on port $PORT" curl -sf "http://127.0.0.1:$PORT/api/v1/snapshot"
  sleep "$RUN_S" # the page's chart and flame graph show what the server kept
  # The page fills itself from its stream: examples/page_screenshot.rs waits
  # until it is live with a flame graph, lets it draw a little longer, and
  # shoots it in headless Chromium.
  "$shooter" "http://127.0.0.1:$PORT/" "$work/web.png"
  mv "$work/web.png" "$out/web.png"
  stop "${pids[-1]}"
fi

# netto top in a real terminal.
if wants top; then
  # -displayfd: the X server picks a free display and says which.
  Xvfb -displayfd 3 -screen 0 1600x1000x24 -nolisten tcp 3>"$work/display" >"$work/xvfb.log" 2>&1 &
  pids+=($!)
  wait_for 20 "X server" test -s "$work/display"
  DISPLAY=":$(tr -d '[:space:]' <"$work/display")"
  export DISPLAY
  wait_for 20 "X server on $DISPLAY" xdpyinfo
  # The terminal's shell writes netto's pid, then becomes netto.
  xterm -tn xterm-256color -geometry 150x45+0+0 -fa 'DejaVu Sans Mono' -fs 11 \
    -bg black -fg grey90 -title 'netto top' \
    -e sh -c "echo \$\$ > '$work/top.pid'; exec '$netto' top --demo --frequency 499 --history 60" \
    >"$work/xterm.log" 2>&1 &
  pids+=($!)
  wait_for 30 "netto top" test -s "$work/top.pid"
  sleep "$RUN_S"
  window=$(xwininfo -name 'netto top' | awk '/Window id:/ {print $4}')
  import -window "$window" "$work/top.png"
  mv "$work/top.png" "$out/top.png"
fi

echo "pictures: done"
