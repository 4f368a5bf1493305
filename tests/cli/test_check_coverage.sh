#!/usr/bin/env bash
# Goal: the search reaches every reachability point (docs/check.md
# "Coverage"): the generated worlds of CI's bounded run reach each point of
# the table, so a generator that stops drawing a job kind, a policy form, a
# fault kind, a failure class or one of the named situations fails the build;
# --coverage counts, --require-coverage fails on a point no case reached,
# shards leave the judgement to `rehearse merge`.
# Method: the built binary; SEEDS generated worlds (the CI slice; the full
# table needs about 200); a bundled scenario that cannot reach every point.
set -u
R="$1"
SRC="$2"
SEEDS="${3:-200}"
. "$(dirname "$0")/lib.sh"

# The CI gate: every point reached by at least one generated world.
expect_rc worlds 0 check --seeds "$SEEDS" --random-jobs --require-coverage --threads 2
contains worlds-all "$work/out" "points reached"
if grep -q "reached by no case" "$work/out"; then bad "worlds: $(grep 'reached by no case' "$work/out")"; else ok; fi
grep -E "^check:|^coverage: all" "$work/out"

# One scenario cannot reach everything: --coverage only reports it, exit 0;
# --require-coverage fails it (exit 1) and names the points.
one="$SRC/scenarios/weekly-quota-6h.json"
expect_rc one-reported 0 check "$one" --seeds 2 --coverage --threads 1
contains one-table "$work/out" "policy:temporal"
contains one-unreached "$work/out" "reached by no case"
expect_rc one-required 1 check "$one" --seeds 2 --require-coverage --threads 1
expect_rc one-json 1 check "$one" --seeds 2 --require-coverage --threads 1 --json
if python3 - "$work/out" <<'PY'; then ok; else bad "one-json: $(head -c 600 "$work/out")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
c = d["coverage"]
assert c["cases"] == 2 and c["points"]["job:group"] == 2, c
assert "policy:temporal" in c["unreached"], c["unreached"]
assert all("reached" in case for case in d["cases"]), d["cases"]
PY

# Shards: each shard alone is not judged on coverage; the merge is.
expect_rc shard-1 0 check "$one" --seeds 4 --require-coverage --threads 1 --shard 1/2 --jsonl "$work/s1.jsonl"
expect_rc shard-2 0 check "$one" --seeds 4 --require-coverage --threads 1 --shard 2/2 --jsonl "$work/s2.jsonl"
expect_rc merged 1 merge "$work/s1.jsonl" "$work/s2.jsonl"
contains merged-unreached "$work/out" "reached by no case"

finish "cli check coverage"
