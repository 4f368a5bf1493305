#!/usr/bin/env bash
# Goal: `rehearse merge` (docs/check-ci.md) on hand-made shard files: shards in
# any order give the report, --json and exit code of the unsharded file;
# --junit is well-formed XML a CI system reads; a missing, duplicate or
# foreign shard and a truncated line are refused with exit 2 naming the file
# and line, and no output file is left behind.
# Method: python3 writes a run of 2 scenarios x 10 seeds (seed 3 of b.json
# fails) as one 1/1 file and as shards 1/4..4/4 (contiguous blocks of
# 3, 3, 2, 2 seeds); python3 parses the JSON and the XML.
set -u
R=$(realpath "$1")
. "$(dirname "$0")/lib.sh"

python3 - "$work" <<'PY'
import json, sys
out = sys.argv[1]
scenarios = ["a.json", "b&c.json"]
def record(path, seed):
    failed = path == "b&c.json" and seed == 3
    return {"type": "case", "scenario": path[:-5], "path": path, "seed": seed,
            "verdict": "fail" if failed else "pass",
            "violations": ["retries_bounded"] if failed else [],
            "message": "job <x>: 4 retries, budget 3" if failed else "",
            "replay": "rehearse check %s --seeds 1 --first-seed %d" % (path, seed),
            "shrunk": "shrunk/b-3.json" if failed else "",
            "trace_hash": "%016x" % (seed * 7919), "events": 100 + seed, "wall_ms": 1.25}
def write(name, k, n, seeds):
    lines = [{"type": "header", "format": 1, "command": "check", "scenarios": scenarios,
              "first_seed": 0, "seeds": 10, "shard": "%d/%d" % (k, n), "options": {"random_jobs": False}}]
    cases = [record(p, s) for p in scenarios for s in seeds]
    lines += cases
    failed = sum(c["verdict"] == "fail" for c in cases)
    lines.append({"type": "summary", "cases": len(cases), "passed": len(cases) - failed,
                  "failed": failed, "errors": 0, "exit_code": 1 if failed else 0})
    with open("%s/%s" % (out, name), "w") as f:
        for l in lines:
            f.write(json.dumps(l, separators=(",", ":")) + "\n")
write("whole.jsonl", 1, 1, range(10))
for k, seeds in enumerate([range(0, 3), range(3, 6), range(6, 8), range(8, 10)], 1):
    write("s%d.jsonl" % k, k, 4, seeds)
PY
cd "$work" || exit 2

# ---- the merge equals the unsharded file ----
rc=0; "$R" merge whole.jsonl > whole.txt 2> whole.err || rc=$?
[ "$rc" = 1 ] && ok || bad "whole: exit $rc (expected 1)"
rc=0; "$R" merge s3.jsonl s1.jsonl s4.jsonl s2.jsonl > merged.txt 2> merged.err || rc=$?
[ "$rc" = 1 ] && ok || bad "merged: exit $rc (expected 1)"
cmp -s whole.txt merged.txt && ok || bad "merged table differs: $(diff whole.txt merged.txt)"
[ ! -s merged.err ] && ok || bad "merge wrote to stderr: $(cat merged.err)"
grep -qF 'FAIL b&c.json seed 3: retries_bounded' merged.txt && ok || bad "finding: $(cat merged.txt)"
grep -qF 'check: 20 cases, 19 passed, 1 failed, 0 errors' merged.txt && ok || bad "total: $(cat merged.txt)"
"$R" merge whole.jsonl --json > whole.json
"$R" merge s1.jsonl s2.jsonl s3.jsonl s4.jsonl --json --junit out.xml --jsonl all.jsonl > merged.json
cmp -s whole.json merged.json && ok || bad "merged --json differs: $(diff whole.json merged.json)"
python3 - merged.json <<'PY' && ok || bad "--json shape"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and d["exit_code"] == 1, d
s = d["summary"]
assert (s["cases"], s["passed"], s["failed"], s["errors"]) == (20, 19, 1, 0), s
assert [(c["path"], c["seed"]) for c in d["cases"]] == [(p, k) for p in ("a.json", "b&c.json") for k in range(10)]
assert [(c["path"], c["seed"]) for c in d["cases"] if c["verdict"] != "pass"] == [("b&c.json", 3)]
PY
# The merged JSON Lines file is the whole run's, byte for byte.
"$R" merge whole.jsonl --jsonl whole-again.jsonl > /dev/null
cmp -s whole-again.jsonl all.jsonl && ok || bad "merged --jsonl differs from the 1/1 file's"
[ "$(head -c 31 all.jsonl)" = '{"type":"header","format":1,"co' ] && grep -c . all.jsonl | grep -qx 22 && ok || bad "merged --jsonl: $(head -2 all.jsonl)"

# ---- JUnit: well-formed, counts, the failure's replay and shrunk file ----
python3 - out.xml <<'PY' && ok || bad "junit: $(cat out.xml)"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1", root.attrib
suites = root.findall("testsuite")
assert [s.get("name") for s in suites] == ["a.json", "b&c.json"]
case = suites[1].find("testcase")
assert case.get("name") == "seeds 0..9" and case.get("classname") == "b&c", case.attrib
f = case.find("failure")
assert f.get("type") == "retries_bounded", f.attrib
assert "job <x>: 4 retries, budget 3" in f.get("message")
assert "replay: rehearse check b&c.json --seeds 1 --first-seed 3" in f.text, f.text
assert "shrunk: shrunk/b-3.json" in f.text, f.text
assert suites[0].find("testcase").find("failure") is None
PY

# ---- refusals: exit 2, path:line, what was expected; no output file ----
refused() {  # name, needle, files...
  local name=$1 needle=$2
  shift 2
  rm -f refused.xml
  local rc=0 err
  err=$("$R" merge "$@" --junit refused.xml 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] && ok || bad "$name: exit $rc (expected 2): $err"
  [[ "$err" == *"$needle"* ]] && ok || bad "$name: message '$err' lacks '$needle'"
  [ ! -e refused.xml ] && ok || bad "$name: --junit file written"
}
refused "missing shard" "rehearse: error: shard 3/4 (seeds 6..7) is missing" s1.jsonl s2.jsonl s4.jsonl
refused "duplicate shard" "s2.jsonl:1:1: shard 2/4 again: s2.jsonl is that shard already" s1.jsonl s2.jsonl s3.jsonl s4.jsonl s2.jsonl
sed 's/"random_jobs":false/"random_jobs":true/' s3.jsonl > other.jsonl
refused "mismatched header" 'other.jsonl:1:1: not a shard of the same run as s1.jsonl: expected the same header, got options {"random_jobs":true}' s1.jsonl s2.jsonl other.jsonl s4.jsonl
head -c 300 s4.jsonl > cut.jsonl
refused "truncated line" "cut.jsonl:2:" s1.jsonl s2.jsonl s3.jsonl cut.jsonl
head -n 3 s4.jsonl > short.jsonl
refused "no summary" "short.jsonl:4:1: expected the summary line: the file ends after line 3 (truncated?)" s1.jsonl s2.jsonl s3.jsonl short.jsonl
refused "whole run with a shard" "not a shard of the same run as whole.jsonl" whole.jsonl s1.jsonl
refused "not there" "nothere.jsonl: cannot open the shard file" s1.jsonl nothere.jsonl
rc=0; out=$("$R" merge s1.jsonl s2.jsonl s4.jsonl --json 2>/dev/null) || rc=$?
python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; assert e["exit_code"] == 2 and "3/4" in e["message"], e' "$out" && ok || bad "--json error document: $out"
rc=0; "$R" merge s1.jsonl --junit s1.jsonl > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] && head -1 s1.jsonl | grep -q '"type":"header"' && ok || bad "--junit over an input: exit $rc"
rc=0; "$R" merge > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] && ok || bad "no FILE: exit $rc"
"$R" merge --help | grep -q "usage: rehearse merge FILE" && ok || bad "--help"

finish "cli merge"
