#!/usr/bin/env bash
# Goal: `rehearse run` keeps its contract (docs/cli.md, docs/run.md): exit 0
# when everything held, 1 when an expectation or invariant failed (with the
# failing JSON pointer and the replay command), 2 on bad input (a file that
# does not load names its file and JSON pointer; a directory without
# scenarios; wrong arguments; --trace with several scenarios); --json prints
# one parseable document; --trace writes JSON Lines with t/seq/type, via a
# temporary file, and the hash in the summary is the hash of those bytes.
# Method: write small scenarios into a temporary directory, run the built
# binary on them, and check exit codes and output.
set -u
R="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# expect_rc NAME WANT_RC ARGS...: runs, keeps stdout/stderr in $work/out, $work/err.
expect_rc() {
  local name="$1" want="$2"
  shift 2
  "$R" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "$name: exit $rc, expected $want; stderr: $(cat "$work/err")"; fi
}
contains() {  # contains NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then ok; else bad "$1: $(basename "$2") lacks '$3': $(head -c 600 "$2")"; fi
}

mkdir -p "$work/good" "$work/empty" "$work/mixed"
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
sed -e 's/"weekly-cli"/"weekly-cli-wrong"/' -e 's/"retries": 3/"retries": 1/' \
  "$work/good/weekly.json" >"$work/wrong.json"
sed -e 's/"until"/"untill"/' "$work/good/weekly.json" >"$work/broken.json"
cp "$work/good/weekly.json" "$work/mixed/a.json"
cp "$work/wrong.json" "$work/mixed/b.json"

# 0: everything held; a summary table with the scenario and its hash.
expect_rc held 0 run "$work/good/weekly.json"
contains held-table "$work/out" "weekly-cli"
contains held-header "$work/out" "trace"
# A directory runs every *.json in it.
expect_rc dir 0 run "$work/good"
contains dir-row "$work/out" "weekly-cli"

# 1: an expectation failed: named by pointer, with the replay command.
expect_rc expect-failed 1 run "$work/wrong.json"
contains expect-pointer "$work/out" "expect /expect/jobs/weekly/retries: expected 1, got 3"
contains expect-replay "$work/out" "rehearse run $work/wrong.json --seed 1 --trace t.jsonl"
# --seed reaches the replay command.
expect_rc seed 1 run "$work/wrong.json" --seed 99
contains seed-replay "$work/out" "--seed 99 --trace t.jsonl"
# Several scenarios: one failing makes the run fail.
expect_rc mixed 1 run "$work/mixed"

# --json: one document that parses, with the summary fields.
expect_rc json 0 run --json "$work/good/weekly.json"
if python3 -m json.tool "$work/out" >/dev/null 2>&1; then ok; else bad "json: stdout does not parse"; fi
contains json-hash "$work/out" '"trace_hash"'
contains json-ok "$work/out" '"ok": true'
expect_rc json-failed 1 run --json "$work/wrong.json"
if python3 -m json.tool "$work/out" >/dev/null 2>&1; then ok; else bad "json-failed: stdout does not parse"; fi
contains json-failure "$work/out" '"pointer": "/expect/jobs/weekly/retries"'

# --trace: JSON Lines, every line with t, seq and type; the summary's hash is
# FNV-1a 64 over exactly these bytes; no temporary file is left behind.
expect_rc trace 0 run "$work/good/weekly.json" --trace "$work/t.jsonl" --json
if [ -s "$work/t.jsonl" ]; then ok; else bad "trace: no file"; fi
if python3 - "$work/t.jsonl" "$work/out" <<'PY'
import json, sys
lines = open(sys.argv[1], "rb").read()
h = 14695981039346656037
for b in lines:
    h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
seqs = []
for raw in lines.decode().splitlines():
    e = json.loads(raw)
    assert list(e)[:3] == ["t", "seq", "type"], raw
    seqs.append(e["seq"])
assert seqs == list(range(len(seqs))), "seq is not 0, 1, 2, ..."
doc = json.load(open(sys.argv[2]))
assert doc["scenarios"][0]["trace_hash"] == "%016x" % h, (doc["scenarios"][0]["trace_hash"], "%016x" % h)
PY
then ok; else bad "trace: lines or hash"; fi
if [ ! -e "$work/t.jsonl.tmp" ]; then ok; else bad "trace: temporary file left behind"; fi
# The same seed gives the same bytes.
"$R" run "$work/good/weekly.json" --trace "$work/t2.jsonl" >/dev/null 2>&1
if cmp -s "$work/t.jsonl" "$work/t2.jsonl"; then ok; else bad "trace: two runs differ"; fi

# 2: bad input.
expect_rc broken 2 run "$work/broken.json"
contains broken-pointer "$work/err" "$work/broken.json:/untill"
expect_rc empty-dir 2 run "$work/empty"
contains empty-dir-msg "$work/err" "contains no *.json scenario file"
expect_rc missing 2 run "$work/nope.json"
expect_rc no-args 2 run
expect_rc bad-seed 2 run "$work/good/weekly.json" --seed -1
expect_rc unknown-option 2 run "$work/good/weekly.json" --frobnicate
expect_rc trace-many 2 run "$work/mixed" --trace "$work/many.jsonl"
if [ ! -e "$work/many.jsonl" ]; then ok; else bad "trace-many: wrote a file"; fi
expect_rc help 0 run --help
contains help-usage "$work/out" "usage: rehearse run"

echo "cli run: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
