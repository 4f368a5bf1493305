#!/usr/bin/env bash
# Goal: `rehearse check --crash-sweep` keeps its contract (docs/crash-sweep.md):
# a row per scenario with its points per kind, exit 0 when every point held,
# 1 when the scenario fails (here: without any crash), 2 on bad input (bad
# point, an option without --crash-sweep, a swarm option with it, a missing
# path); --json gives the counts, which add up to the baseline's events + 1
# and its disk operations; --points-max cuts the sweep visibly; --crash-at
# replays one point; --help names the mode.
# Method: small scenarios in a temporary directory, the built binary.
set -u
R="$1"
. "$(dirname "$0")/lib.sh"

# One group job at 10:00 whose first run fails in a quota outage and whose
# retry two minutes later succeeds.
cat >"$work/chain.json" <<'JSON'
{
  "format": 1, "scenario": "sweep-cli",
  "start": "2026-12-07T09:59:00Z", "until": "2026-12-07T10:05:00Z",
  "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
  "jobs": [{"id": "job", "kind": "group", "schedule": "0 10 * * *",
            "retry_policy": {"max": 1, "backoff_sec": 120},
            "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
  "faults": [{"at": "2026-12-07T09:59:30Z", "for": "1m", "kind": "quota_exhausted"}]
}
JSON
# The same with an event bound it cannot keep: it fails without any crash.
sed 's/"start"/"queue": {"max_events": 5}, "start"/' "$work/chain.json" >"$work/bounded.json"

expect_rc singles 0 check "$work/chain.json" --crash-sweep --no-pairs
contains singles-header "$work/out" "disk-pl"
contains singles-row "$work/out" "sweep-cli"

expect_rc json 0 check "$work/chain.json" --crash-sweep --no-pairs --json
if python3 - "$work/out" <<'PY'; then ok; else bad "json: counts do not add up: $(head -c 800 "$work/out")"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc["scenarios"][0]
p = s["points"]
assert doc["ok"] and doc["exit_code"] == 0 and s["ok"]
assert p["events"]["planned"] + p["events_worker_down"] == s["baseline_events"] + 1
assert p["events"]["run"] == p["events"]["planned"]
for kind in ("disk_power_loss", "disk_process_crash"):
    assert p[kind]["planned"] == p[kind]["run"] == s["baseline_disk_operations"] > 0
assert p["pairs"]["planned"] == 0 and s["cut"] is None and s["failing_points"] == 0
assert p["run"] == p["events"]["run"] + 2 * s["baseline_disk_operations"]
PY

expect_rc cut 0 check "$work/chain.json" --crash-sweep --points-max 5
contains cut "$work/out" "CUT: cut by --points-max 5: 5 of"

expect_rc bounded 1 check "$work/bounded.json" --crash-sweep
contains bounded "$work/out" "fails without any crash"
contains bounded-invariant "$work/out" "bounded_run"

expect_rc replay 0 check "$work/chain.json" --crash-sweep --crash-at event:3:process_crash
contains replay "$work/out" "sweep-cli at event:3:process_crash: held"
expect_rc replay-unreached 1 check "$work/chain.json" --crash-sweep --crash-at disk:99999:power_loss
contains replay-unreached "$work/out" "diverged"

expect_rc bad-point 2 check "$work/chain.json" --crash-sweep --crash-at disk:1:unplugged
contains bad-point "$work/err" "KIND:INDEX:EFFECT"
expect_rc needs-sweep 2 check "$work/chain.json" --points-max 5
contains needs-sweep "$work/err" "option '--points-max' needs --crash-sweep"
expect_rc not-swarm 2 check "$work/chain.json" --crash-sweep --seeds 3
contains not-swarm "$work/err" "option '--seeds' does not apply to --crash-sweep"
expect_rc both-pairs 2 check "$work/chain.json" --crash-sweep --pairs --no-pairs
expect_rc missing 2 check "$work/nothing.json" --crash-sweep
expect_rc no-path 2 check --crash-sweep
expect_rc help 0 check --help
contains help "$work/out" "--crash-sweep"

finish "cli crash sweep"
