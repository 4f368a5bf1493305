#!/usr/bin/env bash
# Goal: `rehearse policy explain --from SYSTEM` and scenarios read each
# system's settings as its users keep them (docs/policies.md "Native files and
# snippets"), plan unlimited counts up to their deadline ("Unlimited retries
# and deadlines") and several Step Functions retrier apart ("Several
# retriers"); bad text exits 2 naming the file, the position and what to write.
# Expected plans are worked out by hand from each system's formula.
# Method: run the built binary; --json output checked with a Python
# expression over it (d, rc); errors by fragments of stderr.
set -u
R="$1"
repo="$2"
. "$(dirname "$0")/lib.sh"

err_has() {  # err_has NAME FRAGMENT ARGS...: exit 2, stderr holds FRAGMENT
  local name="$1" fragment="$2"
  shift 2
  expect_rc "$name" 2 "$@"
  contains "$name" "$work/err" "$fragment"
}
policies="$repo/scenarios/policies"

# ---- Kubernetes: a manifest in YAML, its deadline ----
json_check k8s-yaml 'd["max_retries"] == 6 and d["planned"] == 5 and d["stopped_by"] == "deadline" and d["deadline_ms"] == 600000 and d["delays_ms"] == [10000, 20000, 40000, 80000, 160000]' \
  policy explain --from k8s "@$policies/ledger-sync-job.yaml" --json
json_check k8s-cronjob 'd["max_retries"] == 2 and any("CronJob" in n for n in d["read_as"])' \
  policy explain --from k8s $'apiVersion: batch/v1\nkind: CronJob\nspec:\n  schedule: "0 3 * * *"\n  jobTemplate:\n    spec:\n      backoffLimit: 2\n' --json
err_has k8s-two-documents 'POLICY:2:1' policy explain --from k8s $'kind: Job\n---\nkind: Job\n'
contains k8s-two-documents-says "$work/err" "paste only the one"
err_has k8s-not-a-job 'POLICY:/kind' policy explain --from k8s $'kind: Deployment\nspec: {}\n'
contains k8s-not-a-job-says "$work/err" "expected a Kubernetes Job"

# ---- Celery: the decorator as Python writes it; None until expires ----
json_check celery-decorator 'd["max_retries"] == 5 and d["delays_ms"] == [1000, 2000, 4000, 8000, 16000] and "config" not in d["retryable_classes"] and "network" in d["retryable_classes"]' \
  policy explain --from celery "@app.task(bind=True, autoretry_for=(RequestException,), retry_kwargs={'max_retries': 5}, retry_backoff=True)" --json
json_check celery-none 'd["max_retries"] == "unlimited" and d["planned"] == 60 and d["stopped_by"] == "deadline"' \
  policy explain --from celery '@app.task(max_retries=None, default_retry_delay=60, expires=3600)' --json
err_has celery-none-no-expires 'POLICY:/max_retries' policy explain --from celery '@app.task(max_retries=None)'
contains celery-none-no-expires-says "$work/err" "add expires=SECONDS"
err_has celery-resembles 'did you mean "max_retries"' policy explain --from celery '@app.task(max_retry=3)'

# ---- Temporal: TypeScript options, the default count, Python ----
json_check temporal-default 'd["max_retries"] == "unlimited" and d["planned"] == 14 and d["offsets_ms"][-1] == 543000' \
  policy explain --from temporal "{scheduleToCloseTimeout: '10 minutes', retry: {initialInterval: '1 second', maximumInterval: '1 minute'}}" --json
json_check temporal-python 'd["max_retries"] == 3 and d["delays_ms"] == [2000, 6000, 18000] and "validation" not in d["retryable_classes"]' \
  policy explain --from temporal 'RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=3.0, maximum_attempts=4, non_retryable_error_types=["ValueError"])' --json
err_has temporal-no-deadline 'scheduleToCloseTimeout' policy explain --from temporal "{initialInterval: '1 second'}"
contains temporal-no-deadline-docs "$work/err" 'docs/policies.md'

# ---- Step Functions: a state machine, several retriers, --state ----
json_check sfn-machine 'len(d["retriers"]) == 3 and d["retriers"][0]["delays_ms"] == [60000, 120000, 240000] and d["retriers"][1]["delays_ms"] == [30000, 30000] and d["retriers"][2]["delays_ms"] == [5000] and len(d["policy"]["rules"]) == 3' \
  policy explain --from stepfunctions "@$policies/billing-state-machine.asl.json" --json
two_states='{"StartAt": "A", "States": {"A": {"Type": "Task", "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}], "Next": "B"}, "B": {"Type": "Task", "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 4}], "End": true}}}'
err_has sfn-several-states 'several states retry (A, B)' policy explain --from stepfunctions "$two_states"
json_check sfn-state 'd["max_retries"] == 4' policy explain --from stepfunctions "$two_states" --state B --json
err_has sfn-no-state 'no state "C"' policy explain --from stepfunctions "$two_states" --state C
err_has sfn-all-not-last 'States.ALL must be in the last retrier' \
  policy explain --from stepfunctions '[{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["States.Timeout"]}]'

# ---- Sidekiq: the job class in Ruby, its retry_in block ----
json_check sidekiq-class 'd["max_retries"] == 5 and d["delays_ms"] == [10000, 20000, 30000, 40000, 50000] and d["policy"]["backoff"]["type"] == "expression"' \
  policy explain --from sidekiq "@$policies/report_worker.rb" --json
err_has sidekiq-unplannable 'cannot be planned' \
  policy explain --from sidekiq 'sidekiq_retry_in { |count, exception| exception.is_a?(Timeout::Error) ? 10 : :kill }'
contains sidekiq-unplannable-says "$work/err" "write an arithmetic expression in count"

# ---- scenarios: text inline or in a file beside, bad text exits 2 ----
mk() {  # mk FILE POLICY-JSON
  cat > "$1" <<JSON
{"format": 1, "scenario": "n", "start": "2026-12-04T12:00:00Z", "until": "2026-12-05T12:00:00Z",
 "services": {"api": {}}, "jobs": [{"id": "j", "kind": "call", "schedule": "0 17 * * *",
   "retry_policy": $2, "calls": [{"service": "api"}]}]}
JSON
}
printf 'kind: Job\nspec:\n  backoffLimit: 2\n  activeDeadlineSeconds: 60\n' > "$work/job.yaml"
mk "$work/good.json" '{"k8s": "@job.yaml"}'
json_check scenario-file 'rc == 0 and d["files"][0]["flags"] == []' validate --json "$work/good.json"
mk "$work/inline.json" '{"celery": "@app.task(max_retries=None, expires=600, default_retry_delay=60)"}'
json_check scenario-inline 'rc == 0 and d["files"][0]["flags"] == []' validate --json "$work/inline.json"
mk "$work/missing.json" '{"k8s": "@nowhere.yaml"}'
err_has scenario-missing-file 'missing.json:/jobs/0/retry_policy/k8s' validate "$work/missing.json"
contains scenario-missing-file-names "$work/err" "nowhere.yaml"
printf 'kind: Job\nspec:\n  backoffLimit: [\n' > "$work/broken.yaml"
mk "$work/broken.json" '{"k8s": "@broken.yaml"}'
err_has scenario-bad-yaml 'broken.json:/jobs/0/retry_policy/k8s' validate "$work/broken.json"
contains scenario-bad-yaml-position "$work/err" "broken.yaml)"
mk "$work/block.json" '{"sidekiq": {"retry": 3, "retry_in": "rand(10)"}}'
err_has scenario-bad-block 'block.json:/jobs/0/retry_policy/sidekiq/retry_in' validate "$work/block.json"

finish "cli policy native"
