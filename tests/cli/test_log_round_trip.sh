#!/usr/bin/env bash
# Goal: the round trip of `rehearse import --log` (docs/import.md, "The
# worker's log") over every bundled scenario: the worker's log of a run,
# imported, replays the same slot outcomes, runs, retries and notifications.
# Method: each scenarios/*.json (and scenarios/storms/*.json) is run once with
# --worker-log; the scenario with the faults the log witnesses removed and
# without its expect block (tests/cli/strip_inferable_faults.py) is the base
# the log is imported into; the imported scenario's expect block is what the
# log observed, and `rehearse run` on it must pass: every slot, its outcome,
# its runs' start instants and its notifications as the log showed them,
# under every invariant. A scenario whose clock steps back is imported with
# --clock-steps. The worker's state directory at the end (--worker-state) is
# imported with the log (--state), so each job's durable record must also be
# where the replay ends. Scenarios with only call jobs are also imported from
# the log alone (no --into) and replayed.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
STRIP="$SRC/tests/cli/strip_inferable_faults.py"
# Policy files are named relative to the scenario that names them.
ln -s "$(cd "$SRC" && pwd)/scenarios/policies" "$work/policies"
scenarios=0
stripped=0
alone=0
states=0
for s in "$SRC"/scenarios/*.json "$SRC"/scenarios/storms/*.json; do
  name=$(basename "$s" .json)
  scenarios=$((scenarios + 1))
  log="$work/$name.log"
  "$R" run "$s" --once --worker-log "$log" --worker-state "$work/$name.state" > "$work/run.out" 2>&1
  rc=$?
  if [ "$rc" -gt 1 ]; then bad "$name: run exit $rc: $(tail -c 400 "$work/run.out")"; continue; fi
  n=$(python3 "$STRIP" "$s" "$work/$name.base.json") || { bad "$name: strip"; continue; }
  stripped=$((stripped + n))
  steps=()
  grep -q '"kind": *"clock_step"' "$s" && steps=(--clock-steps)
  # A worker that never wrote its store leaves no state to import.
  if ls "$work/$name.state"/retry_state.* > /dev/null 2>&1; then
    steps+=(--state "$work/$name.state")
    states=$((states + 1))
  fi
  if ! "$R" import --log "$log" --into "$work/$name.base.json" "${steps[@]}" \
      --out "$work/$name.imported.json" > "$work/imp.out" 2>&1; then
    bad "$name: import: $(tail -c 600 "$work/imp.out")"
    continue
  fi
  if "$R" run "$work/$name.imported.json" --once > "$work/replay.out" 2>&1; then
    ok
  else
    bad "$name: the replay of the imported log differs: $(grep -E 'expect|violation' "$work/replay.out" | head -8)"
  fi
  # From the log alone: call jobs, no fault the log cannot see, no capacity
  # (a rate limit's refusals are not an outage), no random delays.
  if python3 "$SRC/tests/cli/log_alone_eligible.py" "$work/$name.base.json"; then
    alone=$((alone + 1))
    if "$R" import --log "$log" "${steps[@]}" --out "$work/$name.alone.json" > "$work/imp.out" 2>&1 &&
        "$R" run "$work/$name.alone.json" --once > "$work/replay.out" 2>&1; then
      ok
    else
      bad "$name: from the log alone: $(tail -c 300 "$work/imp.out") $(grep -E 'expect|violation' "$work/replay.out" | head -8)"
    fi
  fi
done
# Nothing vacuous: every bundled scenario was tried, faults were removed
# and found again, and some scenarios were rebuilt from the log alone.
[ "$scenarios" -ge 40 ] && ok || bad "only $scenarios scenarios found"
[ "$stripped" -ge 3 ] && ok || bad "only $stripped faults removed"
[ "$alone" -ge 2 ] && ok || bad "only $alone scenarios rebuilt from the log alone"
[ "$states" -ge 40 ] && ok || bad "only $states scenarios imported with their state directory"
echo "scenarios $scenarios, faults removed $stripped, rebuilt from the log alone $alone, with state $states"
finish "cli log round trip"
