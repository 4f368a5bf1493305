#!/usr/bin/env bash
# Goal: `rehearse check --shrink-to DIR` keeps its contract (docs/shrinking.md):
# for the first failing seed of a scenario and invariant it writes
# DIR/<scenario>-seed<S>-<invariant>.json, an ordinary scenario that
# `rehearse validate` accepts and `rehearse run` replays to the same violation
# (no expectations: its replay fails, exit 1); it prints the counts before and after
# and the replay command; the case's record names the file (--json); the same
# check writes the same bytes again; a DIR that is a file is bad input (exit 2).
# Method: a small scenario whose event bound is far too small for its span
# (bounded_run fires whatever the swarm draws), the built binary.
set -u
R="$1"
. "$(dirname "$0")/lib.sh"

cat >"$work/tiny-bound.json" <<'JSON'
{
  "format": 1,
  "scenario": "tiny-bound",
  "start": "2026-12-04T16:00:00Z",
  "until": "2026-12-05T00:00:00Z",
  "queue": {"max_events": 20},
  "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
  "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
            "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]},
           {"id": "hourly", "kind": "group", "schedule": "30 * * * *", "retry_policy": "auto",
            "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
  "faults": [{"at": "2026-12-04T16:59:30Z", "for": "2h", "kind": "quota_exhausted"}]
}
JSON
file="$work/shrunk/tiny-bound-seed1-bounded-run.json"

# Two failing seeds: the first is shrunk (DIR created), the second shares its
# scenario and invariant and is not.
expect_rc shrink 1 check "$work/tiny-bound.json" --seeds 2 --shrink-to "$work/shrunk"
contains shrink-before "$work/out" "before: "
contains shrink-after "$work/out" "after:  "
contains shrink-wrote "$work/out" "wrote $file"
contains shrink-replay "$work/out" "replay: rehearse run $file"
if [ "$(ls "$work/shrunk")" = "tiny-bound-seed1-bounded-run.json" ]; then ok; else bad "files: $(ls "$work/shrunk")"; fi
if ! grep -q '"violations"' "$file"; then ok; else bad "file-expect: the shrunk file expects violations"; fi
contains file-fires "$file" 'It fires bounded_run'
contains file-seed "$file" '"seed": 1,'
contains file-origin "$file" "Shrunk from $work/tiny-bound.json, seed 1 (rehearse check)"
cp "$file" "$work/first.json"

# The file is an ordinary scenario: valid, and its replay fails (exit 1) with
# the invariant it was shrunk for, as a saved failing case should until the
# bug is fixed.
expect_rc validate 0 validate "$file"
expect_rc replay 1 run "$file" --json
if python3 - "$work/out" <<'PY'; then ok; else bad "replay: $(head -c 900 "$work/out")"; fi
import json, sys
s = json.load(open(sys.argv[1]))["scenarios"][0]
assert s["held"] is False, s
assert [v["invariant"] for v in s["violations"]][:1] == ["bounded_run"], s["violations"]
PY

# The record names the file; the second seed's names none.
expect_rc json 1 check "$work/tiny-bound.json" --seeds 2 --shrink-to "$work/shrunk" --json
if python3 - "$work/out" "$file" <<'PY'; then ok; else bad "json: $(head -c 900 "$work/out")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
assert [c["shrunk"] for c in d["cases"]] == [sys.argv[2], ""], d["cases"]
PY

# Same check, same bytes.
if cmp -s "$file" "$work/first.json"; then ok; else bad "the second check wrote other bytes"; fi

# A DIR that is a file: bad input, nothing run.
touch "$work/not-a-dir"
expect_rc not-dir 2 check "$work/tiny-bound.json" --seeds 1 --shrink-to "$work/not-a-dir"
contains not-dir-msg "$work/err" "not a directory"

finish "cli shrink"
