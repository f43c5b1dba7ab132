# Sourced by .ci/run and scripts/test.sh: runs named stages and keeps each
# one's wall time, printed as one table at the end of the log.
#
#   stage NAME COMMAND...   runs COMMAND, adds "NAME<TAB>seconds<TAB>ok|FAILED"
#                           to $NETTO_STAGE_LOG, returns COMMAND's status
#   stages_begin            makes $NETTO_STAGE_LOG unless a caller already
#                           did (the table is then the caller's to print)
#   stages_end              prints the table and removes the log, if
#                           stages_begin made it: call it from an EXIT trap
#
# A stage may add lines of its own to $NETTO_STAGE_LOG, named "stage: part"
# (the kernel matrix adds each kernel's wall time); the total is the wall
# time since stages_begin.

stage() {
  local name="$1" started status=0
  shift
  started=$(date +%s)
  echo "=== stage: $name" >&2
  "$@" || status=$?
  printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - started))" \
    "$([ "$status" -eq 0 ] && echo ok || echo FAILED)" >>"$NETTO_STAGE_LOG"
  return "$status"
}

stages_table() {
  local name seconds result total=$(($(date +%s) - stages_started))
  echo
  echo "=== stage times (wall)"
  printf '%-56s %8s  %s\n' stage seconds result
  while IFS=$'\t' read -r name seconds result; do
    printf '%-56s %8s  %s\n' "$name" "$seconds" "$result"
  done <"$NETTO_STAGE_LOG"
  printf '%-56s %8s  (%dm%02ds)\n' "total" "$total" $((total / 60)) $((total % 60))
}

stages_begin() {
  if [ -z "${NETTO_STAGE_LOG:-}" ]; then
    NETTO_STAGE_LOG="$(mktemp /tmp/netto-stages.XXXXXX)"
    export NETTO_STAGE_LOG
    stages_own_log=1
    stages_started=$(date +%s)
  fi
}

stages_end() {
  if [ -n "${stages_own_log:-}" ]; then
    stages_table >&2
    rm -f "$NETTO_STAGE_LOG"
  fi
}
