#!/usr/bin/env bash
# Goal: the `rehearse` command's fixed formats and exit codes (docs/cli.md).
# Method: run the built binary on known inputs and compare the output: text
# exactly, --json output as parsed JSON (key order and whitespace are not the
# contract); every bad input must exit 2 with a message naming what was wrong
# (and, with --json, one {"error": ...} object on stdout), never crash.
set -u
R="$1"
. "$(dirname "$0")/lib.sh"
# same_output GOT WANT: equal as parsed JSON when WANT is a JSON document,
# else equal as text.
same_output() {
  case "$2" in
    "{"*)
      python3 -c 'import json, sys; sys.exit(0 if json.loads(sys.argv[1]) == json.loads(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null ;;
    *) [ "$1" = "$2" ] ;;
  esac
}
# json_check NAME PYTHON-EXPR ARGS...: runs the command; the expression over the
# parsed stdout `d` (and the exit code `rc`) must be true.
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
check() {  # check NAME EXPECTED_RC EXPECTED_STDOUT_OR_- EXPECTED_STDERR_FRAGMENT_OR_- -- ARGS...
  local name="$1" want_rc="$2" want_out="$3" want_err="$4"
  shift 5
  local out err rc
  out=$("$R" "$@" 2>"$work/cli_err")
  rc=$?
  err=$(cat "$work/cli_err")
  local ok=1
  [ "$rc" = "$want_rc" ] || { echo "FAIL $name: exit $rc, expected $want_rc"; ok=0; }
  if [ "$want_out" != "-" ] && ! same_output "$out" "$want_out"; then
    echo "FAIL $name: stdout was:"; echo "$out"; echo "expected:"; echo "$want_out"; ok=0
  fi
  if [ "$want_err" != "-" ] && [[ "$err" != *"$want_err"* ]]; then
    echo "FAIL $name: stderr '$err' lacks '$want_err'"; ok=0
  fi
  if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

check next-weekly 0 "2026-12-04T17:00:00Z
2026-12-11T17:00:00Z
2026-12-18T17:00:00Z
2026-12-25T17:00:00Z
2027-01-01T17:00:00Z" - -- cron next '0 17 * * 5' --from 2026-11-29T00:00:00Z
check next-separate-fields 0 "2026-12-04T17:00:00Z" - -- cron next 0 17 '*' '*' 5 --from 2026-11-29T00:00:00Z --count 1
check next-6-fields 0 "2026-12-04T17:00:00Z
2026-12-11T17:00:00Z" - -- cron next '0 0 17 * * 5' --from 2026-11-29T00:00:00Z --count 2
check next-strictly-after 0 "2026-12-11T17:00:00Z" - -- cron next '0 17 * * 5' --from 2026-12-04T17:00:00Z --count 1
check next-json 0 '{
  "expression": "@daily",
  "from": "2026-11-29T00:00:00Z",
  "next": [
    "2026-11-30T00:00:00Z"
  ]
}' - -- cron next @daily --from 2026-11-29T00:00:00Z --count 1 --json
check next-never-fires 2 "" "never fires" -- cron next '0 0 30 2 *' --from 2026-01-01T00:00:00Z
check next-bad-field 2 "" "field 3" -- cron next '0 0 15W * *'
check next-four-fields 2 "" "" -- cron next '0 0 * *'
check next-empty 2 "" "" -- cron next ''
check next-bad-instant 2 "" "invalid instant" -- cron next '* * * * *' --from 2026-13-01T00:00:00Z
check next-bad-count 2 "" "--count" -- cron next '* * * * *' --count 0 --from 2026-01-01T00:00:00Z
check next-unknown-option 2 "" "unknown option" -- cron next '* * * * *' --frm x
check next-missing-expr 2 "" "missing EXPR" -- cron next
check explain-weekly 0 - - -- cron explain '0 17 * * 5'
check explain-json 0 - - -- cron explain '*/3 * * * *' --json
check policy-per-job-json 0 '{
  "backoff": {
    "delay": "5m",
    "delay_ms": 300000,
    "jitter": 0.0,
    "type": "fixed"
  },
  "budget": "per_episode",
  "delays_ms": [
    300000,
    300000
  ],
  "form": "per_job",
  "max_retries": 2,
  "offsets_ms": [
    300000,
    600000
  ],
  "planned": 2,
  "policy": {
    "backoff": {
      "delay": "5m",
      "delay_ms": 300000,
      "jitter": 0.0,
      "type": "fixed"
    },
    "budget": "per_episode",
    "form": "per_job",
    "max_retries": 2,
    "reason": "Review-only draft generation; no automatic live publish.",
    "retryable_classes": [
      "timeout",
      "network",
      "provider_5xx",
      "rate_limit"
    ]
  },
  "recovery_window_ms": 600000,
  "retryable_classes": [
    "timeout",
    "network",
    "provider_5xx",
    "rate_limit"
  ],
  "stopped_by": "count"
}' - -- policy explain '{"max": 2, "backoff_sec": 300, "retryable_classes": ["timeout","network","provider_5xx","rate_limit"], "reason": "Review-only draft generation; no automatic live publish."}' --json
check policy-bullmq-text 0 - - -- policy explain '{"attempts": 4, "backoff": {"type": "exponential", "delay": 1800000}}'
check policy-unknown-key 2 "" "POLICY:/backoff/bogus" -- policy explain '{"attempts": 4, "backoff": {"type": "exponential", "delay": 1, "bogus": 1}}'
check policy-unknown-class 2 "" "retryable_classes" -- policy explain '{"max": 1, "backoff_sec": 1, "retryable_classes": ["flaky"]}'
check policy-negative 2 "" "/max" -- policy explain '{"max": -1, "backoff_sec": 1}'
check policy-bad-json 2 "" "POLICY:1:" -- policy explain '{"attempts": 4,'
check policy-auto-needs-schedule 2 "" "" -- policy explain auto
check policy-missing-file 2 "" "cannot read" -- policy explain @/nonexistent/policy.json
check help-top 0 - - -- --help
check help-cron 0 - - -- cron next --help
check help-policy 0 - - -- policy explain --help
check unknown-command 2 "" "unknown command" -- frobnicate

# --json with exit 2: one error object for every subcommand, locations split.
json_check json-err-cron-next 'rc == 2 and d["error"]["code"] == "never_fires" and "never fires" in d["error"]["message"]' cron next '0 0 30 2 *' --from 2026-01-01T00:00:00Z --json
json_check json-err-cron-explain 'rc == 2 and d["error"]["exit_code"] == 2 and "field 3" in d["error"]["message"]' cron explain '0 0 15W * *' --json
json_check json-err-cron-count 'rc == 2 and "--count" in d["error"]["message"]' cron next '* * * * *' --count 0 --json
json_check json-err-policy-pointer 'rc == 2 and d["error"]["argument"] == "POLICY" and d["error"]["pointer"] == "/backoff/bogus"' policy explain '{"attempts": 4, "backoff": {"type": "exponential", "delay": 1, "bogus": 1}}' --json
json_check json-err-policy-line 'rc == 2 and d["error"]["code"] == "parse_error" and d["error"]["line"] == 1 and isinstance(d["error"]["column"], int)' policy explain '{"attempts": 4,' --json
json_check json-err-policy-file 'rc == 2 and d["error"]["code"] == "not_found" and d["error"]["file"] == "/nonexistent/policy.json"' policy explain @/nonexistent/policy.json --json
json_check json-err-validate-missing 'rc == 2 and d["error"]["code"] == "not_found" and d["error"]["file"] == "/nonexistent/scenario.json"' validate /nonexistent/scenario.json --json
json_check json-err-unknown-option 'rc == 2 and "unknown option" in d["error"]["message"]' run --json --frobnicate x.json
json_check json-err-unknown-command 'rc == 2 and "unknown command" in d["error"]["message"]' frobnicate --json
# docs/cron.md: a one-word @every is unsupported; "@every 5m" is two fields.
json_check json-err-every-word 'rc == 2 and d["error"]["code"] == "unsupported"' cron next '@every' --json
json_check json-err-every-fields 'rc == 2 and d["error"]["code"] == "invalid_argument" and "2 field(s)" in d["error"]["message"]' cron next '@every 5m' --json

# Near the end of the supported range (year 9999) the list is short: said
# on stderr and in --json ("count" asked, "note"), exit 0 (docs/cli.md).
check next-short-list 0 "9997-01-01T00:00:00Z
9998-01-01T00:00:00Z
9999-01-01T00:00:00Z" "only 3 of 5 instants" -- cron next '0 0 1 1 *' --from 9996-06-01T00:00:00Z
json_check next-short-list-json 'rc == 0 and len(d["next"]) == 3 and d["count"] == 5 and "year 9999" in d["note"]' cron next '0 0 1 1 *' --from 9996-06-01T00:00:00Z --json
json_check next-full-list-json 'rc == 0 and len(d["next"]) == 5 and "note" not in d' cron next '0 0 1 1 *' --from 2026-01-01T00:00:00Z --json

# --version: the CMake project version, then the tz database's
# (test_cli_cron_zone.sh checks that line).
version=$(sed -n 's/^project(rehearse VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../../CMakeLists.txt")
tz_version=$("$R" --version --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["tz_database"])')
check version 0 "rehearse $version
tz database $tz_version" - -- --version
json_check version-json "rc == 0 and d['version'] == '$version'" --version --json

# The auto policy follows the schedule: low-frequency -> 4 attempts.
json_check auto-6-field 'd["max_retries"] == 3' policy explain auto --schedule '0 0 17 * * 5' --json
json_check auto-weekdays 'd["max_retries"] == 1' policy explain auto --schedule '10 17 * * 1-5' --json

finish "cli"
