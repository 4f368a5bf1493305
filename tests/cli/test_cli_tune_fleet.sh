#!/usr/bin/env bash
# Goal: `rehearse tune --fleet` (docs/tune.md "Fleets"): the same bytes for
# any thread count, every policy over every run with its numbers in range,
# the grid's jitter shapes and budget, the table, CSV and a well-formed SVG
# of the load curves, and bad input refused with exit 2 before any run.
# Method: tests/data/fleet/small-fleet-capacity.json (ten call jobs sharing a
# provider with a capacity, and one job calling another service); JSON and
# SVG parsed with python3.
set -u
R="$1"
SRC="$2"
S="$SRC/tests/data/fleet/small-fleet-capacity.json"
W="$SRC/scenarios/weekly-quota-6h.json"
. "$(dirname "$0")/lib.sh"
GRID='attempts=4;delay=5s;jitter=none,equal,full,decorrelated;budget=none,20'
base=(tune "$S" --fleet --grid "$GRID" --outages 5m,10m --seeds 2)

# ---- the same bytes for 1 and 2 threads ----
"$R" "${base[@]}" --threads 1 --json > "$work/t1.json" 2> "$work/t1.err" || bad "threads-1 exit"
"$R" "${base[@]}" --threads 2 --json > "$work/t2.json" 2> "$work/t2.err" || bad "threads-2 exit"
if cmp -s "$work/t1.json" "$work/t2.json"; then ok; else bad "threads: --json differs for 1 and 2 threads"; fi
if [ ! -s "$work/t1.err" ]; then ok; else bad "progress off a terminal: $(cat "$work/t1.err")"; fi
if python3 - "$work/t1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["service"] == "provider", d["service"]
assert len(d["jobs"]) == 10 and "audit" not in d["jobs"], d["jobs"]
assert d["capacity_per_minute"] == 6, d["capacity_per_minute"]
assert d["outage_at"] == "2026-12-07T00:10:00Z", d["outage_at"]
rows = d["policies"]
assert [r["jitter"] for r in rows] == ["none", "equal", "full", "decorrelated"] * 2
assert [r["retry_budget_percent"] for r in rows] == [None] * 4 + [20] * 4
for r in rows:
    assert r["runs"] == 2
    assert r["retry_policy"]["backoff"]["jitter"] == r["jitter"]
    assert 0 <= r["recovered_slots"] <= r["hit_slots"] and r["hit_slots"] > 0, r
    assert 0 <= r["recovery_low"] <= r["recovery"] <= r["recovery_high"] <= 1, r
    assert r["calls"] > 0 and r["peak_after_max"] >= r["peak_after_per_minute"] >= 0, r
    assert r["work_amplification"] is None or r["work_amplification"] >= 1, r
    assert 0 <= r["metastable_share"] <= 1 and 0 <= r["drained_runs"] <= 2, r
    # The span runs an hour and two minutes past the longest outage at least.
    assert len(r["calls_per_minute"]) >= 10 + 10 + 62, len(r["calls_per_minute"])
assert d["front"] and all(rows[i]["pareto"] for i in d["front"])
assert sum(r["pareto"] for r in rows) == len(d["front"])
PY
then ok; else bad "json shape"; fi

# ---- the table, CSV and SVG ----
out=$("$R" "${base[@]}" --threads 2 --svg "$work/load.svg")
[[ "$out" == *"recovery"*"ampl."*"peak after"*"metastable"*"front"* ]] && ok || bad "table header: $out"
[[ "$out" == *"4 x 5s exponential, decorrelated jitter, budget 20%"* ]] && ok || bad "table label: $out"
if python3 - "$work/load.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg"
lines = root.findall(".//" + ns + "polyline")
assert len(lines) == 8, len(lines)
PY
then ok; else bad "svg well-formed, one curve per policy"; fi
csv=$("$R" "${base[@]}" --csv)
[ "$(printf '%s\n' "$csv" | wc -l)" = 9 ] && ok || bad "csv rows: $csv"

# ---- bad input: exit 2, nothing written ----
expect_2() {  # expect_2 NAME STDERR-FRAGMENT ARGS...
  local name="$1" want="$2"
  shift 2
  local err rc
  err=$("$R" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" = 2 ] && [[ "$err" == *"$want"* ]]; then ok; else bad "$name: exit $rc, stderr '$err' lacks '$want'"; fi
}
expect_2 fleet-and-job "drop --job" tune "$S" --fleet --job sync-1
expect_2 fleet-and-fault "http_errors" tune "$S" --fleet --fault quota_exhausted
expect_2 no-capacity "has a \`capacity\` that a job calls" tune "$W" --fleet
expect_2 service-without-capacity '"other" is not a service with a capacity' tune "$S" --fleet --service other
expect_2 bad-shape "expected none, equal, full or decorrelated" tune "$S" --fleet --grid 'jitter=half' --svg "$work/never.svg"
[ ! -e "$work/never.svg" ] && ok || bad "no svg after a bad grid"
expect_2 decorrelated-fixed "needs backoff=exponential" tune "$S" --fleet --grid 'backoff=fixed;jitter=decorrelated'
expect_2 bad-budget "a percent from 1 to 100" tune "$S" --fleet --grid 'budget=150'
expect_2 unknown-key 'unknown key "retries"' tune "$S" --fleet --grid 'retries=3'

finish "cli tune fleet"
