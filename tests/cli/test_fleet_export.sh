#!/usr/bin/env bash
# bench/fleet_export refuses what it cannot do with exit 2, a one-line reason
# and no output file (not an uncaught exception): bad arguments, an unreadable
# fleet file, a fleet the SimPy peer cannot model, an unwritable target.
# usage: test_fleet_export.sh FLEET_EXPORT SOURCE_DIR
set -u
exe=$1
src=$2
R=$exe
. "$src/tests/cli/lib.sh"

refused() {  # refused NAME EXPECTED-TEXT -- COMMAND...
  local name=$1 text=$2
  shift 3
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -q "^fleet_export: .*$text" "$work/err" && [ ! -e "$work/x.json" ]; then
    ok
  else
    bad "$name: exit $rc, stderr: $(cat "$work/err")"
  fi
}

refused "a span that is not a number" "positive integers" -- "$exe" 10 x "$work/x.json"
refused "no jobs" "positive integers" -- "$exe" 0 3600000 "$work/x.json"
REHEARSE_FLEET_FILE="$work/none.json" refused "an unreadable fleet file" "cannot read" -- \
  "$exe" 10 3600000 "$work/x.json"
python3 - "$src/bench/scenarios/fleet-100k.json" "$work/jitter.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["fleet"]["policies"] = [{"weight": 1, "retry_policy": {"attempts": 3, "backoff": {"type": "exponential", "delay": 1000, "jitter": 0.5}}}]
json.dump(doc, open(sys.argv[2], "w"))
PY
REHEARSE_FLEET_FILE="$work/jitter.json" refused "a backoff the peer does not model" \
  "fixed and exponential backoff only" -- "$exe" 10 3600000 "$work/x.json"
refused "an unwritable target" "cannot write" -- "$exe" 10 3600000 "$work/no/such/dir/x.json"
"$exe" 10 3600000 "$work/x.json" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['jobs']) == 10" "$work/x.json" &&
  [ ! -e "$work/x.json.tmp" ]; then
  ok
else
  bad "a good export: $(cat "$work/err")"
fi
finish "fleet export"
