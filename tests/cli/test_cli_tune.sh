#!/usr/bin/env bash
# Goal: `rehearse tune` (docs/tune.md): output formats, the same result for any
# thread count, a well-formed SVG heat map, no progress line off a terminal,
# bad input refused with exit 2 before any output file is written.
# Method: small grids on scenarios/weekly-quota-6h.json (the debug build runs
# them in seconds); JSON and SVG are parsed with python3.
set -u
R="$1"
SRC="$2"
S="$SRC/scenarios/weekly-quota-6h.json"
. "$(dirname "$0")/lib.sh"
GRID='attempts=2-4;delay=30m,2h;backoff=exponential,linear'
base=(tune "$S" --job weekly-summary --grid "$GRID" --outages uniform:30m-12h --seeds 6)

# ---- the same bytes for 1 and 2 threads ----
"$R" "${base[@]}" --threads 1 --json > "$work/t1.json" 2> "$work/t1.err" || bad "threads-1 exit"
"$R" "${base[@]}" --threads 2 --json > "$work/t2.json" 2> "$work/t2.err" || bad "threads-2 exit"
if cmp -s "$work/t1.json" "$work/t2.json"; then ok; else bad "threads: --json differs for 1 and 2 threads"; fi
# Off a terminal there is no progress line.
if [ ! -s "$work/t1.err" ]; then ok; else bad "progress off a terminal: $(cat "$work/t1.err")"; fi
if python3 - "$work/t1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["policies"]
assert len(rows) == 12, len(rows)                 # 3 attempts x 2 delays x 2 kinds
cur = d["current"]
assert rows[cur["index"]]["current"] and rows[cur["index"]]["label"] == "4 x 30m exponential"
assert sum(r["current"] for r in rows) == 1
for r in rows:
    assert r["runs"] == 6 and 0 <= r["recovery_low"] <= r["recovery"] <= r["recovery_high"] <= 1
    assert r["retry_policy"]["attempts"] == r["attempts"]
assert any(r["pareto"] for r in rows)
assert "Pareto front" in cur["verdict"]
PY
then ok; else bad "json shape"; fi

# ---- the table, CSV and SVG ----
out=$("$R" "${base[@]}" --threads 2 --svg "$work/heat.svg")
[[ "$out" == *"4 x 30m exponential"*"<- current"* ]] && ok || bad "table marks the current policy: $out"
[[ "$out" == *"the job's own policy, 4 x 30m exponential: recovery"* ]] && ok || bad "table verdict: $out"
if python3 - "$work/heat.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg"
panels = root.findall(ns + "g")
assert [p.find(ns + "text").text for p in panels] == ["exponential", "linear"]
cells = [r for p in panels for r in p.findall(ns + "rect")]
assert len(cells) == 12, len(cells)
assert sum(1 for r in cells if r.get("stroke") == "black") == 1
PY
then ok; else bad "svg well-formed, 12 cells, one current"; fi
csv=$("$R" "${base[@]}" --csv)
[ "$(printf '%s\n' "$csv" | wc -l)" = 13 ] && ok || bad "csv rows: $csv"
[[ "$csv" == "policy,attempts,backoff,delay_ms"* ]] && ok || bad "csv header"

# ---- an empirical outage list ----
printf '# hours the provider was down\n2h\n6h\n' > "$work/outages.txt"
"$R" tune "$S" --job weekly-summary --grid 'attempts=4;delay=30m' --outages "@$work/outages.txt" --seeds 4 --json > "$work/e.json" \
  && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["outages"].startswith("@")' "$work/e.json" && ok || bad "empirical outages"

# ---- a call job: the outage breaks a service the job calls ----
M="$SRC/scenarios/my-api-outage.json"
out=$("$R" tune "$M" --job invoice-sync --grid 'attempts=1,3;delay=10m;backoff=fixed' --outages 45m --seeds 4)
[[ "$out" == *"outage of billing-api (http_errors 503)"* ]] && ok || bad "call job: default service: $out"
[[ "$out" == *"the job calls billing-api, ledger-api"* ]] && ok || bad "call job: services listed"
grep -Eq '^1 x 10m fixed +0\.000 ' <<<"$out" && ok || bad "call job: no retries, no recovery: $out"
"$R" tune "$M" --job invoice-sync --service ledger-api --grid 'attempts=2;delay=1h' --outages 30m --seeds 2 --json > "$work/c.json" \
  && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["provider"]=="ledger-api", d["provider"]; assert d["policies"][0]["recovered"]==2' "$work/c.json" && ok || bad "call job: --service ledger-api"

# ---- bad input: exit 2, nothing written ----
expect_2() {  # expect_2 NAME STDERR-FRAGMENT ARGS...
  local name="$1" want="$2"
  shift 2
  local err rc
  err=$("$R" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" = 2 ] && [[ "$err" == *"$want"* ]]; then ok; else bad "$name: exit $rc, stderr '$err' lacks '$want'"; fi
}
expect_2 no-job "--job ID is required" tune "$S"
expect_2 unknown-job 'no job "nope"' tune "$S" --job nope --seeds 1
expect_2 bad-grid "--grid backoff" tune "$S" --job weekly-summary --grid 'backoff=quadratic' --svg "$work/never.svg"
[ ! -e "$work/never.svg" ] && ok || bad "no svg after a bad grid"
expect_2 bad-outages "--outages" tune "$S" --job weekly-summary --outages 'normal:1h-2h'
printf '2h\nsoon\n' > "$work/bad_outages.txt"
expect_2 bad-outage-file "$work/bad_outages.txt:2" tune "$S" --job weekly-summary --outages "@$work/bad_outages.txt"
expect_2 json-and-csv "exclusive" tune "$S" --job weekly-summary --json --csv
expect_2 svg-onto-input "" tune "$S" --job weekly-summary --svg "$S"
expect_2 bad-fault "quota_exhausted or http_errors" tune "$S" --job weekly-summary --fault restart
expect_2 svg-and-json-on-stdout "share standard output" tune "$S" --job weekly-summary --svg - --json
expect_2 bad-threads "--threads" tune "$S" --job weekly-summary --threads 0
expect_2 service-not-called 'does not call "model-api" (it calls: billing-api, ledger-api)' tune "$M" --job invoice-sync --service model-api

finish "cli tune"
