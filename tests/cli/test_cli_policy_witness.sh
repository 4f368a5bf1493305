#!/usr/bin/env bash
# Goal: every policy form a scenario accepts is judged by the monitors' own
# reading (retries_bounded checks its retries and exact delays), the six
# systems' forms included: `run --strict` passes on each, never a false
# violation; only an "auto" whose schedule the monitors cannot read is shown
# as unchecked (ok*, and a failure under --strict).
# Method: the 6-hour weekly outage (scenarios/weekly-quota-6h.json) with its
# "auto" policy replaced by each form; rehearse run's exit code, result and
# --json 'unchecked' / 'violations' say which.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"

# with_policy NAME POLICY_JSON: a copy of the weekly outage with that policy,
# no expectations (only the invariants judge it).
with_policy() {
  python3 - "$SRC/scenarios/weekly-quota-6h.json" "$work/$1.json" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["scenario"] = "weekly-" + sys.argv[2].rsplit("/", 1)[-1][:-5]
doc["jobs"][0]["retry_policy"] = json.loads(sys.argv[3])
doc["expect"] = {"violations": []}
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
}

# judged NAME: exit 0, held, no unchecked invariant, no violation.
judged() {
  "$R" run "$work/$1.json" --json >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" = 0 ] && python3 - "$work/out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["scenarios"][0]
assert s["held"] and not s["violations"], s["violations"]
assert not [u for u in s.get("unchecked", []) if u["invariant"] == "retries_bounded"], s["unchecked"]
PY
  then ok; else bad "$1: judged run: exit $rc $(head -c 400 "$work/err")"; fi
}

with_policy linear '{"attempts": 4, "backoff": {"type": "linear", "delay": "30m", "max_delay": "45m"}}'
judged linear
with_policy capped '{"attempts": 4, "backoff": {"type": "exponential", "delay": "30m", "max_delay": "1h"}}'
judged capped
with_policy at-once '{"attempts": 3}'
judged at-once
with_policy bullmq-wrapped '{"bullmq": {"attempts": 4, "backoff": {"type": "exponential", "delay": 1800000}}}'
judged bullmq-wrapped
with_policy perjob-linear '{"max": 2, "backoff": {"type": "linear", "delay": "10m"}}'
judged perjob-linear

# Every other system's form is judged too: held, nothing unchecked, and
# --strict passes.
strict() {
  "$R" run "$work/$1.json" --strict >"$work/out" 2>&1
  local rc=$?
  if [ "$rc" = 0 ] && ! grep -q "ok\*" "$work/out"; then ok; else bad "$1 --strict: exit $rc $(cat "$work/out")"; fi
}
with_policy temporal '{"temporal": {"initialInterval": "30m", "backoffCoefficient": 2, "maximumAttempts": 4}}'
judged temporal
strict temporal
with_policy stepfunctions '{"stepfunctions": {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1800, "MaxAttempts": 3, "BackoffRate": 2, "JitterStrategy": "FULL"}}'
judged stepfunctions
strict stepfunctions
with_policy sidekiq '{"sidekiq": {"retry": 5}}'
judged sidekiq
strict sidekiq
with_policy celery '{"celery": {"max_retries": 3, "retry_backoff": 1800, "retry_backoff_max": 7200}}'
judged celery
strict celery
with_policy k8s '{"k8s": {"apiVersion": "batch/v1", "kind": "Job", "spec": {"backoffLimit": 4}}}'
judged k8s
strict k8s

finish "cli policy witness"
