#!/usr/bin/env bash
# Goal: `rehearse import --otlp` (docs/import.md): the windows inferred from
# an incident's client spans, added to the scenario, replay the incident's
# observed outcomes; --strict refuses ambiguous evidence and writes nothing;
# malformed exports and bad arguments exit 2 naming the record.
# Method: scenarios/my-api-outage.json is run with --trace; its calls become
# an OTLP/JSON export (tests/cli/trace_to_otlp.py, the stable HTTP
# conventions); the export is imported into the same scenario with its fault
# removed, and the imported scenario must meet the original's whole `expect`
# block (slot outcomes, attempt instants, notifications, call counts).
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
S="$SRC/scenarios/my-api-outage.json"
TO_OTLP="$SRC/tests/cli/trace_to_otlp.py"

"$R" run "$S" --trace "$work/trace.jsonl" > /dev/null 2>&1 || bad "run with --trace"
python3 "$TO_OTLP" "$work/trace.jsonl" "$work/traces.json" --peer-service billing-api || bad "export"
python3 "$TO_OTLP" "$work/trace.jsonl" "$work/traces.jsonl" --peer-service billing-api --jsonl || bad "export jsonl"
python3 - "$S" "$work/base.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["faults"] = []
d["scenario"] = "my-api-outage-base"
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY

# ---- the round trip: import, then replay with the original expectations ----
expect_rc import 0 import --otlp "$work/traces.json" --into "$work/base.json" \
  --service ledger-api.internal=ledger-api --name my-api-imported --out "$work/imported.json"
contains summary "$work/out" "ledger-api"
contains summary-window "$work/out" "at 2026-11-30T06:00:00.100Z for 20m400ms"
if python3 - "$work/imported.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["scenario"] == "my-api-imported"
f = d["faults"]
assert len(f) == 1, f
f = f[0]
assert (f["kind"], f["service"], f["status"]) == ("http_errors", "ledger-api", 503), f
# The first 503 (the sync's ledger call after its 100 ms billing call) to the
# sync's third attempt's ledger call, which answered 200.
assert f["at"] == "2026-11-30T06:00:00.100Z" and f["for"] == "20m400ms", f
assert f["note"].startswith("inferred from 5 failed calls (503)"), f["note"]
assert "began after 2026-11-30T05:00:00.100Z and at or before 2026-11-30T06:00:00.100Z" in f["note"], f["note"]
assert "ended after 2026-11-30T06:10:00.400Z and at or before 2026-11-30T06:20:00.500Z, when a call answered ok" in f["note"], f["note"]
assert any(n.startswith("observed: ") for n in d["notes"]), d["notes"]
assert not any(n.startswith("ambiguous") for n in d["notes"]), d["notes"]
PY
then ok; else bad "imported scenario"; fi
expect_rc replay 0 run "$work/imported.json"
expect_rc replay-strict 0 import --otlp "$work/traces.jsonl" --into "$work/base.json" \
  --service ledger-api.internal=ledger-api --strict --out "$work/imported2.json"
if cmp -s <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([(f["at"], f["for"], f["status"]) for f in d["faults"]])' "$work/imported.json") \
          <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([(f["at"], f["for"], f["status"]) for f in d["faults"]])' "$work/imported2.json"); then
  ok; else bad "JSON Lines and one document give other faults"; fi

# ---- without the name map the service is not the scenario's: reported ----
expect_rc unmapped 0 import --otlp "$work/traces.json" --into "$work/base.json" --out "$work/unmapped.json"
contains unmapped "$work/out" "declares no such service"
expect_rc unmapped-run 1 run "$work/unmapped.json"
expect_rc unmapped-strict 1 import --otlp "$work/traces.json" --into "$work/base.json" --strict --out "$work/never.json"
if [ ! -e "$work/never.json" ]; then ok; else bad "--strict wrote a file"; fi
contains unmapped-strict "$work/err" "nothing written"

# ---- a window no call closed: ambiguous, lasts to the end without --strict ----
python3 - "$work/traces.json" "$work/cut.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["resourceSpans"]:
    for s in r["scopeSpans"]:
        s["spans"] = [x for x in s["spans"] if int(x["startTimeUnixNano"]) < 1796019300000000000]
json.dump(d, open(sys.argv[2], "w"))
PY
json_check open-window 'rc == 0 and d["refused"] is False and len(d["faults"]) == 1 and "for" not in d["faults"][0] and "lasted past the evidence" in d["ambiguities"][0]["what"]' \
  import --otlp "$work/cut.json" --into "$work/base.json" --service ledger-api.internal=ledger-api --json --out "$work/open.json"
json_check open-window-strict 'rc == 1 and d["refused"] is True and d["output"] is None' \
  import --otlp "$work/cut.json" --into "$work/base.json" --service ledger-api.internal=ledger-api --json --strict --out "$work/never.json"

# ---- bad input: exit 2, the record named ----
printf '{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":3,"startTimeUnixNano":"x","attributes":[{"key":"url.full","value":{"stringValue":"http://a/"}}]}]}]}]}' > "$work/bad.json"
expect_rc bad-span 2 import --otlp "$work/bad.json" --into "$work/base.json"
contains bad-span "$work/err" "bad.json:/resourceSpans/0/scopeSpans/0/spans/0"
head -c 300 "$work/traces.json" > "$work/truncated.json"
expect_rc truncated 2 import --otlp "$work/truncated.json" --into "$work/base.json"
contains truncated "$work/err" "truncated.json:"
expect_rc no-into 2 import --otlp "$work/traces.json"
contains no-into "$work/err" "--into SCENARIO is required"
expect_rc no-otlp 2 import --into "$work/base.json"
expect_rc bad-map 2 import --otlp "$work/traces.json" --into "$work/base.json" --service ledger
contains bad-map "$work/err" "ADDRESS=NAME"
expect_rc missing 2 import --otlp "$work/nope.json" --into "$work/base.json"
expect_rc over-input 2 import --otlp "$work/traces.json" --into "$work/base.json" --out "$work/base.json"
expect_rc json-stdout 2 import --otlp "$work/traces.json" --into "$work/base.json" --json
expect_rc help 0 import --help
contains help "$work/out" "--strict"

finish "cli import"
