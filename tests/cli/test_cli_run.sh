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
. "$(dirname "$0")/lib.sh"

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

# jsonq NAME FILE PYTHON-EXPR: the expression over the parsed document `d` is true.
jsonq() {
  if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2>/dev/null
  then ok; else bad "$1: $3 is not true of $(head -c 600 "$2")"; fi
}

# --json numbers are numbers: expectation values, the trace's attempts.
"$R" run --json "$work/wrong.json" >"$work/out" 2>/dev/null
jsonq json-numbers "$work/out" 'd["scenarios"][0]["expect_failures"][0]["expected"] == 1 and d["scenarios"][0]["expect_failures"][0]["got"] == 3'
if python3 - "$work/t.jsonl" <<'PY'
import json, sys
replies = [json.loads(l) for l in open(sys.argv[1]) if '"service_reply"' in l]
assert replies, "no service_reply"
assert all(type(e["attempt"]) is int for e in replies), replies[0]
PY
then ok; else bad "trace: service_reply.attempt is not a number"; fi

# Exit 2 under --json: one JSON error object on stdout, naming the file.
expect_rc json-missing 2 run --json "$work/nope.json"
jsonq json-missing-doc "$work/out" 'd["error"]["code"] == "not_found" and d["error"]["file"].endswith("nope.json") and d["error"]["exit_code"] == 2'
expect_rc json-broken 2 run --json "$work/broken.json"
jsonq json-broken-doc "$work/out" 'd["error"]["exit_code"] == 2 and d["scenarios"][0]["error"]["pointer"] == "/untill" and d["scenarios"][0]["error"]["file"].endswith("broken.json")'
expect_rc json-usage 2 run --json
jsonq json-usage-doc "$work/out" '"missing SCENARIO" in d["error"]["message"]'

# Flags and unchecked invariants: `run` says so (stderr, "ok*" with a
# footnote, --json); --strict makes them failures (exit 1).
# (No expectations: a job that is never retried fails its slot in the outage.)
sed -e 's/"retry_policy": "auto"/"retry_policy": {"attempts": "5"}/' -e 's/"expect": .*/"expect": {}/' \
  "$work/good/weekly.json" >"$work/badpol.json"
sed -e 's/, "retry_policy": "auto"//' -e 's/"expect": .*/"expect": {}/' "$work/good/weekly.json" >"$work/nopol.json"
sed -e 's/"0 17 \* \* 5"/"0 17 * * 1"/' -e 's/"expect": .*/"expect": {}/' "$work/good/weekly.json" >"$work/idle.json"
for f in badpol nopol idle; do
  expect_rc "flag-$f" 0 run "$work/$f.json"
  contains "flag-$f-stderr" "$work/err" "warning ["
  contains "flag-$f-star" "$work/out" "ok*"
  contains "flag-$f-footnote" "$work/out" "* weekly-cli: flag ["
  expect_rc "flag-$f-json" 0 run --json "$work/$f.json"
  jsonq "flag-$f-json-doc" "$work/out" 'len(d["scenarios"][0]["flags"]) == 1 and d["scenarios"][0]["result"] == "ok*"'
  expect_rc "flag-$f-strict" 1 run --strict "$work/$f.json"
  contains "flag-$f-strict-line" "$work/out" "--strict: flag ["
  # The replay line replays what failed: under --strict.
  contains "flag-$f-strict-replay" "$work/out" "--strict --trace t.jsonl"
  # validate --strict on the same flag: the same exit code as run --strict.
  expect_rc "flag-$f-validate-strict" 1 validate --strict "$work/$f.json"
done
# "55L" (cron-parser reads its first character: the last Friday): the
# monitors cannot judge the schedule.
sed -e 's/"0 17 \* \* 5"/"0 17 * * 55L"/' -e 's/2026-12-04T16/2026-12-25T16/' -e 's/2026-12-05T00/2026-12-26T00/' \
  -e 's/"expect": .*/"expect": {"jobs": {"weekly": {"delivered_slots": 1}}}/' "$work/good/weekly.json" >"$work/last.json"
expect_rc unchecked 0 run "$work/last.json"
contains unchecked-star "$work/out" "ok*"
contains unchecked-footnote "$work/out" "* weekly-cli: invariant schedule_kept not checked for weekly"
expect_rc unchecked-json 0 run --json "$work/last.json"
jsonq unchecked-json-doc "$work/out" 'sorted(u["invariant"] for u in d["scenarios"][0]["unchecked"]) == ["retries_bounded", "schedule_kept"]'
expect_rc unchecked-strict 1 run --strict "$work/last.json"
contains unchecked-strict-line "$work/out" "--strict: invariant schedule_kept not checked"

# expect.services.messenger.calls counts sends (delivered or refused). One
# clean Friday slot: one delivery to one target, no notification: 1 call.
sed -e 's/"faults": .*/"faults": [],/' \
  -e 's/"expect": .*/"expect": {"services": {"messenger": {"calls": 1}}}/' "$work/good/weekly.json" >"$work/msg1.json"
sed 's/"calls": 1/"calls": 0/' "$work/msg1.json" >"$work/msg0.json"
expect_rc messenger-one 0 run "$work/msg1.json"
expect_rc messenger-zero 1 run "$work/msg0.json"
contains messenger-zero-msg "$work/out" "expect /expect/services/messenger/calls: expected 0, got 1"
# The quota outage: 3 failed runs, each a failure notice and a
# retry_scheduled notification; then the delivery and `recovered`: 8 calls.
sed 's/"expect": .*/"expect": {"services": {"messenger": {"calls": 8}}}/' "$work/good/weekly.json" >"$work/msg8.json"
expect_rc messenger-eight 0 run "$work/msg8.json"

# A directory is not all-or-nothing: a file that does not load (here an
# earlier --json report saved into the folder) is an ERROR row with its
# error; the others still run; the exit code is the worst of all.
mkdir -p "$work/partly"
cp "$work/good/weekly.json" "$work/partly/a.json"
cp "$work/broken.json" "$work/partly/b.json"
"$R" run --json "$work/good" >"$work/partly/out.json" 2>/dev/null
expect_rc partly 2 run "$work/partly"
contains partly-ran "$work/out" "weekly-cli"
if grep -Eq "^$work/partly/b.json +ERROR" "$work/out"; then ok; else bad "partly-error-row: $(cat "$work/out")"; fi
if grep -Eq "^$work/partly/out.json +ERROR" "$work/out"; then ok; else bad "partly-error-row2"; fi
contains partly-error-msg "$work/err" "$work/partly/b.json:/untill"
expect_rc partly-json 2 run --json "$work/partly"
jsonq partly-json-doc "$work/out" '[s["result"] for s in d["scenarios"]] == ["ok", "ERROR", "ERROR"] and d["exit_code"] == 2'
# A failure and a load error: 2 wins; two rows sharing a name show their paths.
cp "$work/wrong.json" "$work/partly/c.json"
sed 's/"weekly-cli-wrong"/"weekly-cli"/' "$work/wrong.json" >"$work/partly/d.json"
expect_rc partly-worst 2 run "$work/partly"
contains shared-name-a "$work/out" "weekly-cli ($work/partly/a.json)"
contains shared-name-d "$work/out" "weekly-cli ($work/partly/d.json)"

finish "cli run"
