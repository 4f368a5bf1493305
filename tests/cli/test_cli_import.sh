#!/usr/bin/env bash
# Goal: `rehearse import --otlp` (docs/import.md): the windows inferred from
# an incident's client spans, added to the scenario, replay the incident's
# observed outcomes; --strict refuses ambiguous evidence and writes nothing;
# malformed exports and bad arguments exit 2 naming the record.
# Method: scenarios/my-api-outage.json is run with --trace; its calls become
# an OTLP/JSON export (tests/cli/trace_to_otlp.py, the stable HTTP
# conventions); the export is imported into the same scenario with its fault
# removed, and the imported scenario must meet the original's whole `expect`
# block (slot outcomes, attempt instants, notifications, call counts). The
# same run's worker log (run --worker-log, docs/log-format.md) holds the
# configuration and the same failed calls, stamped by the worker's clock.
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
contains summary-window "$work/out" "at 2026-11-30T05:30:00.100Z for 45m350ms"
if python3 - "$work/imported.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["scenario"] == "my-api-imported"
f = d["faults"]
assert len(f) == 1, f
f = f[0]
assert (f["kind"], f["service"], f["status"]) == ("http_errors", "ledger-api", 503), f
# Each edge in the middle of its bounds: between the 05:00 ledger call (ok)
# and the first 503 at 06:00:00.100 (the sync's ledger call after its 100 ms
# billing call), and between the last 503 at 06:10:00.400 and the sync's
# third attempt's ledger call at 06:20:00.500, which answered 200. The
# scenario's own fault, 05:30 for 45m, lies inside those bounds too.
assert f["at"] == "2026-11-30T05:30:00.100Z" and f["for"] == "45m350ms", f
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

# ---- the worker's log as a production worker writes it (run --worker-log) ----
expect_rc worker-log 0 run "$S" --worker-log "$work/worker.log"
if python3 - "$work/worker.log" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines, "empty log"
for d in lines:
    assert list(d)[:5] == ["log", "t", "level", "event", "fields"], d
    assert d["log"] == 1 and d["level"] in ("debug", "info", "warning", "error"), d
def ms(t):  # milliseconds appear only when not zero
    from datetime import datetime
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
times = [ms(d["t"]) for d in lines]
assert times == sorted(times), "stamps go backwards without a clock step"
configured = {d["fields"]["job_id"]: d["fields"] for d in lines if d["event"] == "job_configured"}
assert set(configured) == {"invoice-sync", "daily-report"}, configured
assert configured["invoice-sync"]["params"]["calls"][1]["service"] == "ledger-api"
assert configured["daily-report"]["retry_policy"] == {"max": 2, "backoff_sec": 300}
failed = [d for d in lines if d["event"] == "call_failed"]
# The import above saw 5 failed spans: the same 5 calls, as the core logged them.
assert len(failed) == 5 and all(f["fields"]["status"] == 503 for f in failed), failed
assert failed[0]["t"] == "2026-11-30T06:00:00.200Z", failed[0]
PY
then ok; else bad "worker log"; fi
# The stamps are the worker machine's clock: a clock step moves them back.
expect_rc worker-log-clock 0 run "$SRC/scenarios/clock-step-back-mid-retry-chain.json" --once \
  --worker-log "$work/stepped.log"
if python3 -c '
import json, sys
from datetime import datetime
t = [datetime.fromisoformat(json.loads(l)["t"].replace("Z", "+00:00")) for l in open(sys.argv[1])]
assert t != sorted(t), "no stamp went back"' "$work/stepped.log"; then ok; else bad "clock-step stamps"; fi
expect_rc worker-log-two 2 run "$S" "$SRC/scenarios/restart-mid-run.json" --worker-log "$work/two.log"
contains worker-log-two "$work/err" "--worker-log takes exactly one scenario"

# ---- bad input: exit 2, the record named ----
printf '{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":3,"startTimeUnixNano":"x","attributes":[{"key":"url.full","value":{"stringValue":"http://a/"}}]}]}]}]}' > "$work/bad.json"
expect_rc bad-span 2 import --otlp "$work/bad.json" --into "$work/base.json"
contains bad-span "$work/err" "bad.json:/resourceSpans/0/scopeSpans/0/spans/0"
head -c 300 "$work/traces.json" > "$work/truncated.json"
expect_rc truncated 2 import --otlp "$work/truncated.json" --into "$work/base.json"
contains truncated "$work/err" "truncated.json:"
expect_rc no-into 2 import --otlp "$work/traces.json"
contains no-into "$work/err" "--otlp needs --into SCENARIO"
expect_rc no-otlp 2 import --into "$work/base.json"
expect_rc bad-map 2 import --otlp "$work/traces.json" --into "$work/base.json" --service ledger
contains bad-map "$work/err" "ADDRESS=NAME"
expect_rc missing 2 import --otlp "$work/nope.json" --into "$work/base.json"
expect_rc over-input 2 import --otlp "$work/traces.json" --into "$work/base.json" --out "$work/base.json"
expect_rc json-stdout 2 import --otlp "$work/traces.json" --into "$work/base.json" --json
expect_rc help 0 import --help
contains help "$work/out" "--strict"
contains help-log "$work/out" "--log FILE"

# ---- import --log: the worker's own log, with and without the scenario ----
# From the log alone: the jobs, services and latencies are the log's, the
# window is the spans' one, and the original's slot outcomes come again.
expect_rc log-alone 0 import --log "$work/worker.log" --name my-api-from-log --out "$work/from-log.json"
contains log-alone-window "$work/out" "at 2026-11-30T05:30:00.100Z for 45m350ms"
if python3 - "$work/from-log.json" "$S" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
original = json.load(open(sys.argv[2]))
assert d["scenario"] == "my-api-from-log"
assert [j["id"] for j in d["jobs"]] == ["invoice-sync", "daily-report"], d["jobs"]
assert d["services"]["ledger-api"]["latency"] == "100ms", d["services"]
assert d["jobs"][0]["retry_policy"] == {"backoff_sec": 600, "max": 3}
for job in ("invoice-sync", "daily-report"):
    got = [(s["slot"], s["outcome"], s["attempts"]) for s in d["expect"]["jobs"][job]["slots"]]
    want = [(s["slot"], s["outcome"], s["attempts"]) for s in original["expect"]["jobs"][job]["slots"]]
    assert got == want, (job, got, want)
assert d["expect"]["notifications"]["retry_scheduled"] == 4, d["expect"]["notifications"]
PY
then ok; else bad "scenario from the log alone"; fi
expect_rc log-alone-replay 0 run "$work/from-log.json"
# Into the scenario: its world kept, its expect block replaced by the log's.
expect_rc log-into 0 import --log "$work/worker.log" --into "$work/base.json" --strict \
  --out "$work/log-into.json"
json_check log-into-json 'd["refused"] is False and len(d["faults"]) == 1 and d["calls"] == 25' \
  import --log "$work/worker.log" --into "$work/base.json" --out "$work/log-into2.json" --json
expect_rc log-into-replay 0 run "$work/log-into.json"
# ---- what if: the imported incident under another policy (run --policy) ----
# The report's 2 retries 5 minutes apart ran out inside the 20-minute window;
# 5 retries recover it on the fifth run: the changed outcomes are listed, the
# run passes, and the unchanged job is not mentioned.
expect_rc what-if 0 run "$work/log-into.json" --policy 'daily-report={"max":5,"backoff_sec":300}'
contains what-if "$work/out" "of the expected (observed) outcomes changed"
contains what-if-slot "$work/out" "/expect/jobs/daily-report/slots/0/outcome: was exhausted, now delivered"
lacks what-if-other "$work/out" "/expect/jobs/invoice-sync"
json_check what-if-json 'rc == 0 and any(c["pointer"] == "/expect/jobs/daily-report/final_status" and c["was"] == "retry_exhausted" and c["now"] == "ok" for c in d["scenarios"][0]["what_if"]["changed"])' \
  run "$work/log-into.json" --once --json --policy 'daily-report={"max":5,"backoff_sec":300}'
# The same policy as observed changes nothing.
json_check what-if-same 'rc == 0 and d["scenarios"][0]["what_if"]["changed"] == []' \
  run "$work/log-into.json" --once --json --policy 'daily-report={"max":2,"backoff_sec":300}'
expect_rc what-if-nojob 2 run "$work/log-into.json" --policy 'nightly=auto'
contains what-if-nojob "$work/err" "lists no job 'nightly'"
expect_rc what-if-bad 2 run "$work/log-into.json" --policy 'daily-report={max'
expect_rc what-if-two 2 run "$work/log-into.json" "$S" --policy 'daily-report=auto'
# tune works on an imported scenario too.
expect_rc tune-imported 0 tune "$work/log-into.json" --job daily-report --seeds 3 --threads 1

# A clock that steps back: refused, or read with --clock-steps and reported.
STEP="$SRC/scenarios/clock-step-back-mid-retry-chain.json"
expect_rc log-clock 2 import --log "$work/stepped.log" --into "$STEP" --out "$work/x.json"
contains log-clock "$work/err" "the clock goes back from"
contains log-clock-hint "$work/err" "--clock-steps"
expect_rc log-clock-ok 0 import --log "$work/stepped.log" --into "$STEP" --clock-steps \
  --out "$work/stepped.json"
contains log-clock-ok "$work/out" "the worker's clock went back"
expect_rc log-clock-strict 1 import --log "$work/stepped.log" --into "$STEP" --clock-steps \
  --strict --out "$work/never2.json"
# Bad logs: the file, the line and what was expected; nothing written.
head -c 700 "$work/worker.log" > "$work/cut.log"
expect_rc log-cut 2 import --log "$work/cut.log" --out "$work/never3.json"
contains log-cut "$work/err" "cut.log:3: the line ends inside its JSON object"
sed '5s/"log":1/"log":7/' "$work/worker.log" > "$work/v7.log"
expect_rc log-format 2 import --log "$work/v7.log" --out "$work/never3.json"
contains log-format "$work/err" "v7.log:5:/log: unknown log format 7; this reader knows format 1"
if [ ! -e "$work/never3.json" ]; then ok; else bad "a bad log wrote a file"; fi
# A log holds no world for a job of another kind: --into is needed.
"$R" run "$SRC/scenarios/restart-mid-run.json" --once --worker-log "$work/group.log" > /dev/null 2>&1
expect_rc log-group 2 import --log "$work/group.log" --out "$work/never4.json"
contains log-group "$work/err" "expected --into SCENARIO to supply them"
expect_rc log-and-otlp 2 import --log "$work/worker.log" --otlp "$work/traces.json" --into "$work/base.json"
contains log-and-otlp "$work/err" "give one of --otlp FILE..., --log FILE... or --bullmq EXPORT"
expect_rc log-service 2 import --log "$work/worker.log" --service a=b --out "$work/x.json"

# ---- the worker's state directory (run --worker-state, import --state) ----
expect_rc state-run 0 run "$S" --once --worker-log "$work/st.log" --worker-state "$work/st"
if [ -e "$work/st/retry_state.journal" ] || [ -e "$work/st/retry_state.json" ]; then ok; else bad "run --worker-state wrote no state file"; fi
expect_rc state-run-again 2 run "$S" --once --worker-state "$work/st"
contains state-run-again "$work/err" "exists and is not empty"
expect_rc state-import 0 import --log "$work/st.log" --into "$work/base.json" --state "$work/st" --out "$work/st.json"
python3 -c '
import json, sys
jobs = json.load(open(sys.argv[1]))["expect"]["jobs"]
s = jobs["daily-report"]["state"]
assert s["retry_status"] == "retry_exhausted" and s["retry_count"] == 2, s
assert s["failure_class"] == "provider_5xx" and s["next_retry_at"] is None, s
assert jobs["invoice-sync"]["state"]["retry_status"] == "ok", jobs
' "$work/st.json" && ok || bad "state-import: the records are not the expectations"
expect_rc state-replay 0 run "$work/st.json" --once
# The replay ends elsewhere than the record: the state expectation fails.
python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); d["expect"]["jobs"]["daily-report"]["state"]["retry_count"] = 1
json.dump(d, open(sys.argv[2], "w"))' "$work/st.json" "$work/st-wrong.json"
expect_rc state-wrong 1 run "$work/st-wrong.json" --once
contains state-wrong "$work/out" "/expect/jobs/daily-report/state/retry_count"
# A corrupt store is kept byte for byte, reported, and expected unreadable.
"$R" run "$SRC/scenarios/corrupt-live-state.json" --once --worker-log "$work/c.log" \
  --worker-state "$work/cs" > /dev/null 2>&1
python3 "$SRC/tests/cli/strip_inferable_faults.py" "$SRC/scenarios/corrupt-live-state.json" \
  "$work/cbase.json" > /dev/null
sum_before=$(cat "$work"/cs/* | md5sum)
expect_rc state-corrupt 0 import --log "$work/c.log" --into "$work/cbase.json" --state "$work/cs" --out "$work/cimp.json"
contains state-corrupt "$work/cimp.json" '"state": "unreadable"'
contains state-corrupt "$work/cimp.json" "its bytes are kept as they are"
[ "$(cat "$work"/cs/* | md5sum)" = "$sum_before" ] && ok || bad "import --state changed the directory"
expect_rc state-corrupt-replay 0 run "$work/cimp.json" --once
expect_rc state-missing 2 import --log "$work/st.log" --into "$work/base.json" --state "$work/nowhere"
contains state-missing "$work/err" "nowhere: no such directory"
mkdir -p "$work/empty"
expect_rc state-empty 2 import --log "$work/st.log" --into "$work/base.json" --state "$work/empty"
contains state-empty "$work/err" "no state file here"
expect_rc state-otlp 2 import --otlp "$work/traces.json" --into "$work/base.json" --state "$work/st"
contains state-otlp "$work/err" "--state are for --log"

finish "cli import"
