#!/usr/bin/env bash
# Goal: `rehearse policy explain --from SYSTEM` (docs/policies.md), the wrapped
# system forms in scenarios, `cron explain`'s firing count, and `policy explain
# --schedule`'s gap to the next slot. Expected delays are worked out by hand
# from each system's documented formula.
# Method: run the built binary; --json output is checked as parsed JSON with a
# Python expression over it (d, rc); text output by fragments.
set -u
R="$1"
. "$(dirname "$0")/lib.sh"

# json_check NAME PYTHON-EXPR ARGS...: the expression over the parsed stdout
# `d` and the exit code `rc` must be true.
json_check() {
  local name="$1" expr="$2"
  shift 2
  local out rc
  out=$("$R" "$@" 2>/dev/null)
  rc=$?
  if python3 -c 'import json, sys; d = json.loads(sys.argv[1]); rc = int(sys.argv[3]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$out" "$expr" "$rc" 2>/dev/null; then
    pass=$((pass + 1))
  else
    echo "FAIL $name: '$expr' is not true of exit $rc, stdout: $out"; fail=$((fail + 1))
  fi
}
# has NAME EXPECTED_RC STDOUT_FRAGMENT_OR_- STDERR_FRAGMENT_OR_- -- ARGS...
has() {
  local name="$1" want_rc="$2" want_out="$3" want_err="$4"
  shift 5
  local out err rc ok=1
  out=$("$R" "$@" 2>"$work/err")
  rc=$?
  err=$(cat "$work/err")
  [ "$rc" = "$want_rc" ] || { echo "FAIL $name: exit $rc, expected $want_rc"; ok=0; }
  if [ "$want_out" != "-" ] && [[ "$out" != *"$want_out"* ]]; then
    echo "FAIL $name: stdout lacks '$want_out':"; echo "$out"; ok=0
  fi
  if [ "$want_err" != "-" ] && [[ "$err" != *"$want_err"* ]]; then
    echo "FAIL $name: stderr '$err' lacks '$want_err'"; ok=0
  fi
  if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

# ---- done means: four systems, the same three delays 30m, 1h, 2h ----
three='d["delays_ms"] == [1800000, 3600000, 7200000] and d["recovery_window_ms"] == 12600000'
json_check bullmq-js "$three and d[\"system\"] == \"bullmq\" and d[\"max_retries\"] == 3" \
  policy explain --from bullmq "{attempts: 4, backoff: {type: 'exponential', delay: 1800000}}" --json
json_check bullmq-json "$three" \
  policy explain --from bullmq '{attempts: 4, backoff: {type: "exponential", delay: 1800000}}' --json
json_check temporal "$three and d[\"system\"] == \"temporal\"" \
  policy explain --from temporal '{initialInterval: "30m", backoffCoefficient: 2, maximumAttempts: 4}' --json
json_check stepfunctions "$three and d[\"system\"] == \"stepfunctions\"" \
  policy explain --from stepfunctions '{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1800, "MaxAttempts": 3, "BackoffRate": 2}' --json
json_check celery "$three and d[\"system\"] == \"celery\"" \
  policy explain --from celery '{max_retries: 3, retry_backoff: 1800, retry_backoff_max: 7200, retry_jitter: false}' --json
for sys in "bullmq|{attempts: 4, backoff: {type: 'exponential', delay: 1800000}}" \
           "temporal|{initialInterval: '30m', backoffCoefficient: 2, maximumAttempts: 4}" \
           "stepfunctions|{IntervalSeconds: 1800, MaxAttempts: 3}" \
           "celery|{max_retries: 3, retry_backoff: 1800, retry_backoff_max: 7200, retry_jitter: false}"; do
  out=$("$R" policy explain --from "${sys%%|*}" "${sys#*|}")
  if [[ "$out" == *"retry 1   after 30m"*"retry 2   after 1h "*"retry 3   after 2h "*"recovery window:   3h30m"* ]]; then
    pass=$((pass + 1))
  else
    echo "FAIL text-${sys%%|*}: $out"; fail=$((fail + 1))
  fi
done

# ---- each system's meaning of attempts and its formula ----
json_check bullmq-no-backoff 'd["delays_ms"] == [0, 0, 0, 0] and any("at once" in n for n in d["notes"])' \
  policy explain --from bullmq '{attempts: 5}' --json
json_check bullmq-job-options 'd["ignored"] == ["priority", "removeOnFail"] and d["max_retries"] == 2 and d["delays_ms"] == [5000, 5000]' \
  policy explain --from bullmq '{attempts: 3, backoff: 5_000, removeOnFail: 1000, priority: 1,}' --json
has bullmq-counts-first-run 0 "attempts 4 means 3 retries" - -- \
  policy explain --from bullmq '{attempts: 4, backoff: 1000}'
json_check temporal-default-cap 'd["delays_ms"] == [1000, 2000, 4000, 8000, 16000, 32000, 64000, 100000, 100000] and d["capped_from"] == 8' \
  policy explain --from temporal '{maximumAttempts: 10}' --json
json_check stepfunctions-cap-jitter 'd["delays_ms"] == [2000, 4000, 5000, 5000] and d["shortest_window_ms"] == 0 and any("shorten" in n for n in d["notes"])' \
  policy explain --from stepfunctions '[{"IntervalSeconds": 2, "MaxAttempts": 4, "MaxDelaySeconds": 5, "JitterStrategy": "FULL"}]' --json
json_check sidekiq 'd["delays_ms"] == [15000, 16000, 31000] and d["longest_window_ms"] == (15 + 9 + 16 + 18 + 31 + 27) * 1000' \
  policy explain --from sidekiq '{retry: 3}' --json
json_check celery-default-cap 'd["delays_ms"] == [600000, 600000, 600000] and any("flattens the curve from retry 1" in n for n in d["notes"]) and "retry_backoff_max: 600 (10m)" in d["defaults"]' \
  policy explain --from celery '{retry_backoff: 1800}' --json
json_check k8s 'd["delays_ms"] == [10000, 20000, 40000, 80000, 160000, 320000, 360000] and d["ignored"] == ["template"]' \
  policy explain --from k8s '{backoffLimit: 7, template: {}}' --json
printf '// pasted from the worker\n{\n  attempts: 4,\n  backoff: {type: "fixed", delay: 60_000},\n}\n' > "$work/p.js"
json_check from-file 'd["delays_ms"] == [60000, 60000, 60000]' policy explain --from bullmq "@$work/p.js" --json

# ---- bad input: exit 2, line:column or the pointer ----
has js-syntax 2 "" "POLICY:2:18: invalid bullmq policy" -- policy explain --from bullmq '{attempts: 5,
 backoff: {type: linear}}'
has missing-file 2 "" "cannot read the policy file" -- policy explain --from bullmq "@$work/none.js"
printf '{attempts: undefined}' > "$work/bad.js"
has js-file-syntax 2 "" "$work/bad.js:1:12" -- policy explain --from bullmq "@$work/bad.js"
has custom-backoff 2 "" "POLICY:/backoff/type" -- policy explain --from bullmq '{attempts: 3, backoff: {type: "custom", delay: 1}}'
has unknown-system 2 "" "expected one of bullmq, temporal" -- policy explain --from resque '{}'
has temporal-unlimited 2 "" "POLICY:/maximumAttempts" -- policy explain --from temporal '{initialInterval: "1s"}'
has unknown-key 2 "" "POLICY:/retries" -- policy explain --from sidekiq '{retries: 3}'
json_check json-error 'rc == 2 and "error" in d' policy explain --from bullmq '{attempts: }' --json

# ---- wrapped forms: policy explain without --from, and scenarios ----
json_check wrapped "$three and d[\"system\"] == \"temporal\" and d[\"policy\"][\"form\"] == \"temporal\"" \
  policy explain '{"temporal": {"initialInterval": "30m", "maximumAttempts": 4}}' --json
has wrapped-pointer 2 "" "POLICY:/celery/max_retries" -- policy explain '{"celery": {"max_retries": "3"}}'
mk_scenario() {  # mk_scenario FILE POLICY-JSON
  cat > "$1" <<JSON
{"format": 1, "scenario": "w", "start": "2026-12-04T12:00:00Z", "until": "2026-12-05T12:00:00Z",
 "services": {"model-api": {}, "messenger": {"targets": ["t"]}},
 "jobs": [{"id": "j", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": $2,
   "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["t"]}]}
JSON
}
mk_scenario "$work/good.json" '{"celery": {"max_retries": 3, "retry_backoff": 1800, "retry_backoff_max": 7200, "retry_jitter": false}, "retryable_classes": ["rate_limit"]}'
json_check scenario-wrapped 'rc == 0 and d["files"][0]["flags"] == []' validate --json "$work/good.json"
mk_scenario "$work/bad.json" '{"celery": {"max_retries": "3"}}'
json_check scenario-wrapped-bad 'd["files"][0]["flags"][0]["kind"] == "policy_error" and d["files"][0]["flags"][0]["where"].endswith(":/jobs/0/retry_policy/celery/max_retries")' \
  validate --json "$work/bad.json"

# ---- cron explain: the verdict against the firings in 28 days ----
json_check cron-dom-and-weekdays 'd["low_frequency"] and d["firings_28d"] == 20 and any("fires 20 times in 28 days" in w for w in d["warnings"])' \
  cron explain '0 0 1 * 1-5' --json
has cron-dom-and-weekdays-text 0 "firings:       20 in the 28 days from 2024-01-01T00:00:00Z" "" -- cron explain '0 0 1 * 1-5'
json_check cron-weekly 'd["low_frequency"] and d["firings_28d"] == 4 and not any("disagrees" in w for w in d["warnings"])' \
  cron explain '0 17 * * 5' --json
json_check cron-twice-monthly 'not d["low_frequency"] and d["firings_28d"] == 2 and any("fires only 2 times" in w for w in d["warnings"])' \
  cron explain '0 0 1,15 * *' --json
json_check cron-every-second 'd["firings_28d_capped"] and d["firings_28d"] == 10000' cron explain '* * * * * *' --json
json_check cron-weekdays 'not d["low_frequency"] and d["firings_28d"] == 20 and d["warnings"] == []' \
  cron explain '0 17 * * 1-5' --json

# ---- policy explain --schedule: the gap to the next regular slot ----
json_check gap-weekly 'd["next_slot"]["shortest_slot_gap_ms"] == 7 * 86400000 and d["next_slot"]["gap_ms"] == 7 * 86400000 - 12600000 and not d["next_slot"]["runs_into_next_slot"]' \
  policy explain --from bullmq '{attempts: 4, backoff: {type: "exponential", delay: 1800000}}' --schedule '0 17 * * 5' --json
json_check gap-overlap 'd["next_slot"]["runs_into_next_slot"] and d["next_slot"]["gap_ms"] == 300000 - 630000' \
  policy explain --from k8s '{}' --schedule '*/5 * * * *' --json
has gap-text 0 "the retry chain runs 5m30s into the next slot" - -- policy explain --from k8s '{}' --schedule '*/5 * * * *'
has gap-auto 0 "slots can be 1d apart (from 2024-01-01T17:00:00Z); the recovery window leaves 23h59m" - -- \
  policy explain auto --schedule '0 17 * * 1-5'
json_check gap-jitter-longest 'd["next_slot"]["recovery_window_ms"] == d["longest_window_ms"]' \
  policy explain --from sidekiq '{retry: 3}' --schedule '* * * * *' --json

finish "cli policy"
