#!/usr/bin/env bash
# Goal: the scale-out promise of docs/check-ci.md on the real core: four
# `rehearse check --shard K/4` runs started by GNU parallel cover exactly the
# seeds of the whole run (disjoint, balanced), and `rehearse merge` of their
# JSON Lines files gives the single run's --json document, table, JUnit XML
# and exit code (wall times aside); --threads 2 gives what --threads 1 gives;
# the progress line appears on stderr only when asked for, never on stdout.
# Method: three scenarios (one passing, one whose event bound is far too
# small so the monitors' bounded_run fails for every seed, and the README's
# example) x 10 seeds; python3 compares the documents with wall times removed.
# GNU parallel is required (CI installs it: .ci/deps.sh): without it the test
# FAILS rather than skips.
set -u
R=$(realpath "$1")
SRC="$2"
. "$(dirname "$0")/lib.sh"

if ! command -v parallel > /dev/null 2>&1; then
  bad "GNU parallel is not installed (Debian package 'parallel'; .ci/deps.sh installs it)"
  finish "check shards"
  exit
fi
cd "$work" || exit 2

cat > weekly.json <<'JSON'
{
  "format": 1,
  "scenario": "weekly-shards",
  "start": "2026-12-04T16:00:00Z",
  "until": "2026-12-05T00:00:00Z",
  "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
  "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
            "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
  "faults": [{"at": "2026-12-04T16:59:30Z", "for": "2h", "kind": "quota_exhausted"}]
}
JSON
sed -e 's/"weekly-shards"/"tiny-bound"/' -e 's/"services"/"queue": {"max_events": 20}, "services"/' \
  weekly.json > tiny-bound.json
RUN=(check weekly.json tiny-bound.json "$SRC/scenarios/my-api-outage.json" --seeds 10 --first-seed 5)

# ---- the single run ----
rc_whole=0
"$R" "${RUN[@]}" --threads 1 --json --jsonl whole.jsonl --junit whole.xml > whole.json 2> whole.err || rc_whole=$?
[ "$rc_whole" = 1 ] && ok || bad "single run: exit $rc_whole (expected 1: tiny-bound fails): $(head -c 600 whole.err)"
rc=0
"$R" "${RUN[@]}" --threads 1 > whole.txt 2> /dev/null || rc=$?
[ "$rc" = "$rc_whole" ] && ok || bad "single run, table: exit $rc"

# ---- four shards with GNU parallel, then merge ----
parallel --halt never --joblog jobs.log "$R" "${RUN[@]}" --threads 1 --shard {}/4 \
  --jsonl shard-{}.jsonl '>' shard-{}.out '2>' shard-{}.err ::: 1 2 3 4
for k in 1 2 3 4; do
  [ -s "shard-$k.jsonl" ] && ok || bad "shard $k wrote no JSON Lines file: $(head -c 600 "shard-$k.err")"
done
# Exit codes of the shards: column 7 of the job log; 0 or 1, never worse.
if awk 'NR > 1 && $7 > 1 { bad = 1 } END { exit bad }' jobs.log; then ok; else bad "a shard exited >1: $(cat jobs.log)"; fi

rc_merge=0
"$R" merge shard-4.jsonl shard-2.jsonl shard-1.jsonl shard-3.jsonl --json --junit merged.xml --jsonl merged.jsonl > merged.json 2> merged.err || rc_merge=$?
[ "$rc_merge" = "$rc_whole" ] && ok || bad "merge: exit $rc_merge, the single run $rc_whole: $(cat merged.err)"
rc=0
"$R" merge shard-*.jsonl > merged.txt 2> /dev/null || rc=$?
[ "$rc" = "$rc_whole" ] && ok || bad "merge, table: exit $rc"

python3 - <<'PY' && ok || bad "shards: union, disjointness or balance"
import json
whole = [json.loads(l) for l in open("whole.jsonl")]
cases = {(c["path"], c["seed"]) for c in whole if c["type"] == "case"}
assert len(cases) == 30, len(cases)
seen, sizes = set(), []
for k in range(1, 5):
    lines = [json.loads(l) for l in open("shard-%d.jsonl" % k)]
    assert lines[0]["shard"] == "%d/4" % k and lines[0]["seeds"] == 10 and lines[0]["first_seed"] == 5
    mine = {(c["path"], c["seed"]) for c in lines if c["type"] == "case"}
    assert not (mine & seen), ("overlap", k, mine & seen)
    seen |= mine
    sizes.append(len({s for _, s in mine}))
assert seen == cases, ("union", cases ^ seen)
assert sizes == [3, 3, 2, 2], sizes
PY

# Wall times removed, the documents are equal.
cat > same.py <<'PY'
import json, sys
WALL = {"wall_ms", "seeds_per_s", "wall_s"}
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in WALL}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
def load(path):
    text = open(path).read()
    if path.endswith(".jsonl"):
        return [strip(json.loads(l)) for l in text.splitlines()]
    return strip(json.loads(text))
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    print("differ:", sys.argv[1], sys.argv[2])
    sys.exit(1)
PY
python3 same.py whole.json merged.json && ok || bad "merge --json differs from the single run's"
python3 same.py whole.jsonl merged.jsonl && ok || bad "merge --jsonl differs from the single run's"
python3 - <<'PY' && ok || bad "merge --junit differs from the single run's (times aside)"
import xml.etree.ElementTree as ET
def shape(path):
    out = []
    for e in ET.parse(path).getroot().iter():
        out.append((e.tag, sorted((k, v) for k, v in e.attrib.items() if k != "time"), (e.text or "").strip()))
    return out
a, b = shape("whole.xml"), shape("merged.xml")
assert a == b, "differ"
assert any(t == "failure" for t, _, _ in a), "the failing scenario shows as a failure"
PY
# The table: the same lines; the summary's rate and time are wall-clock.
strip_wall() { sed -E 's/, [0-9.]+ seeds\/s \([0-9.]+s\)//' "$1"; }
if diff <(strip_wall whole.txt) <(strip_wall merged.txt) > table.diff; then ok; else bad "merge table differs: $(cat table.diff)"; fi
grep -q "tiny-bound.json seed" merged.txt && ok || bad "merge table lacks the failing cases: $(head -c 600 merged.txt)"

# ---- threads: 2 gives what 1 gives ----
rc=0
"$R" "${RUN[@]}" --threads 2 --json --jsonl t2.jsonl > t2.json 2> /dev/null || rc=$?
[ "$rc" = "$rc_whole" ] && ok || bad "--threads 2: exit $rc"
python3 same.py whole.json t2.json && ok || bad "--threads 2 --json differs from --threads 1"
python3 same.py whole.jsonl t2.jsonl && ok || bad "--threads 2 --jsonl differs from --threads 1"

# ---- progress: off a terminal only with --progress, and only on stderr ----
[ ! -s whole.err ] && ok || bad "progress (or anything) on stderr off a terminal: $(head -c 300 whole.err)"
"$R" "${RUN[@]}" --threads 2 --json --progress > p.json 2> p.err
# Off a terminal each update is a line of its own (a CI log would run '\r'
# updates together).
grep -q "^check: 30/30 cases (100.0%)" p.err && ! grep -q $'\r' p.err && ok ||
  bad "--progress line: $(od -c p.err | head -5)"
python3 same.py whole.json p.json && ok || bad "--progress changed stdout"

finish "check shards"
