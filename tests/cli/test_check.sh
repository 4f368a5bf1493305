#!/usr/bin/env bash
# Goal: `rehearse check` keeps its contract (docs/check.md): exit 0 when every
# case held, 1 when an invariant failed (a line per failing case with the
# invariant, the first message and a replay command that reproduces the same
# case), 2 on bad input (a missing path, a directory without scenarios, a
# scenario that does not load, wrong arguments); --json prints one document
# {ok, exit_code, cases, summary}; --emit writes each derived case as an
# ordinary scenario that `rehearse validate` accepts and `rehearse run` runs;
# --check-determinism passes on the real core; --help prints the usage.
# Method: small scenarios in a temporary directory, the built binary.
set -u
R="$1"
. "$(dirname "$0")/lib.sh"

mkdir -p "$work/good" "$work/empty"
cat >"$work/good/weekly.json" <<'JSON'
{
  "format": 1,
  "scenario": "weekly-cli",
  "start": "2026-12-04T16:00:00Z",
  "until": "2026-12-05T00:00:00Z",
  "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
  "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
            "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
  "faults": [{"at": "2026-12-04T16:59:30Z", "for": "2h", "kind": "quota_exhausted"}],
  "expect": {"jobs": {"weekly": {"delivered_slots": 1, "retries": 3, "final_status": "ok"}}}
}
JSON
# A world whose event bound is far too small for its span: the monitors'
# bounded_run fires whatever the swarm draws (a real invariant failure).
sed -e 's/"weekly-cli"/"tiny-bound"/' -e 's/"services"/"queue": {"max_events": 20}, "services"/' \
  "$work/good/weekly.json" >"$work/tiny-bound.json"
sed -e 's/"until"/"untill"/' "$work/good/weekly.json" >"$work/broken.json"

# --help
expect_rc help 0 check --help
contains help "$work/out" "usage: rehearse check [SCENARIO|DIR...]"
contains help-emit "$work/out" "--emit DIR"

# Every case held: exit 0 and the summary line.
expect_rc good 0 check "$work/good" --seeds 5
contains good-summary "$work/out" "check: 5 cases, 5 passed, 0 failed, 0 errors"
expect_rc good-determinism 0 check "$work/good/weekly.json" --seeds 3 --check-determinism
contains good-determinism-summary "$work/out" "3 passed"

# A failing case: exit 1, the line names the invariant and the replay command.
expect_rc failing 1 check "$work/tiny-bound.json" --seeds 2 --first-seed 40
contains failing-line "$work/out" "FAIL $work/tiny-bound.json seed 40: bounded_run"
# The event bound says what to raise (a long scenario) rather than reading as a core bug.
contains failing-hint "$work/out" "needs a larger queue.max_events"
contains failing-replay "$work/out" "replay: rehearse check $work/tiny-bound.json --seeds 1 --first-seed 41"
contains failing-summary "$work/out" "check: 2 cases, 0 passed, 2 failed, 0 errors"

# --json: one document, its shape, and the replay command reproduces the case.
expect_rc json 1 check "$work/tiny-bound.json" "$work/good/weekly.json" --seeds 2 --json
if python3 - "$work/out" <<'PY'; then ok; else bad "json shape: $(head -c 800 "$work/out")"; fi
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and d["exit_code"] == 1, d
assert len(d["cases"]) == 4
keys = {"scenario", "path", "seed", "verdict", "violations", "message", "replay", "shrunk",
        "trace_hash", "events"}
for c in d["cases"]:
    assert set(c) == keys, c.keys()
assert [c["verdict"] for c in d["cases"]] == ["fail", "fail", "pass", "pass"], d["cases"]
assert [c["seed"] for c in d["cases"]] == [1, 2, 1, 2]
assert d["cases"][0]["violations"][0] == "bounded_run"
s = d["summary"]
assert (s["cases"], s["passed"], s["failed"], s["errors"]) == (4, 2, 2, 0), s
assert "seeds_per_s" in s and "wall_ms" in s
open(sys.argv[1] + ".replay", "w").write(d["cases"][1]["replay"] + "\n" + d["cases"][1]["trace_hash"])
PY
replay=$(head -1 "$work/out.replay")
hash=$(tail -1 "$work/out.replay")
# shellcheck disable=SC2086
expect_rc replay 1 ${replay#rehearse } --json
contains replay-hash "$work/out" "\"trace_hash\": \"$hash\""
contains replay-seed "$work/out" "\"seed\": 2"

# --emit: ordinary scenario files, valid and runnable.
expect_rc emit 0 check "$work/good/weekly.json" --seeds 2 --first-seed 7 --emit "$work/emitted"
if [ -f "$work/emitted/weekly-cli.seed-7.json" ] && [ -f "$work/emitted/weekly-cli.seed-8.json" ]; then ok; else bad "emit: files missing: $(ls "$work/emitted" 2>&1)"; fi
expect_rc emit-validate 0 validate "$work/emitted"
expect_rc emit-run 0 run "$work/emitted/weekly-cli.seed-7.json"
contains emit-description "$work/emitted/weekly-cli.seed-7.json" "with seed 7"
touch "$work/not-a-dir"
expect_rc emit-not-dir 2 check "$work/good/weekly.json" --seeds 1 --emit "$work/not-a-dir"

# Bad input: exit 2, nothing run.
expect_rc empty-dir 2 check "$work/empty" --seeds 1
contains empty-dir-msg "$work/err" "contains no *.json scenario file"
expect_rc missing 2 check "$work/nope.json" --seeds 1
expect_rc broken 2 check "$work/broken.json" --seeds 1
contains broken-pointer "$work/err" "broken.json:/untill"
expect_rc no-args-zero-seeds 2 check --seeds 0  # without a scenario: generated worlds (test_check_worlds.sh)
expect_rc zero-seeds 2 check "$work/good" --seeds 0
expect_rc bad-seeds 2 check "$work/good" --seeds many
expect_rc bad-first 2 check "$work/good" --first-seed -1
expect_rc overflow 2 check "$work/good" --seeds 2 --first-seed 18446744073709551615
expect_rc unknown-option 2 check "$work/good" --sedes 3
expect_rc json-error 2 check "$work/empty" --json
contains json-error-doc "$work/out" "\"exit_code\": 2"

# A shard left with no case proves nothing: refused (exit 2), never a pass.
expect_rc no-case 2 check "$work/good/weekly.json" --seeds 2 --shard 3/3
contains no-case-msg "$work/err" "leaves this shard no case"

finish "cli check"
