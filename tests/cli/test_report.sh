#!/usr/bin/env bash
# Goal: the incident views keep their contract (docs/report.md):
# - `run --timeline` of weekly-quota-6h fits on one screen (< 40 lines), shows
#   the outage, the three retries with their delays, the exhaustion and the
#   next week's delivery; no ANSI codes when piped (or with NO_COLOR); disk and
#   outbox detail only with --verbose;
# - `run --report FILE.html` writes one well-formed, self-contained page whose
#   SVG parses as XML and holds the lanes and marks the scenario implies,
#   atomically (no temporary file left), and refuses several scenarios;
# - `status DIR [DIR]` renders a real state directory as text, --json and
#   --html, merges two, and on a missing directory or a corrupt state file
#   exits 2 naming the path, leaving the directory byte-for-byte unchanged
#   (no lock file created).
# Method: run the built binary; check output with grep and
# tests/cli/check_report_html.py.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
SIX="$SRC/scenarios/weekly-quota-6h.json"

# --- timeline
expect_rc timeline 0 run "$SIX" --timeline
lines=$(wc -l <"$work/out")
if [ "$lines" -lt 40 ]; then ok; else bad "timeline: $lines lines, expected < 40"; fi
contains tl-fault "$work/out" "fault quota_exhausted on model-api starts"
contains tl-retry1 "$work/out" "retry 1 scheduled in 30m"
contains tl-retry2 "$work/out" "retry 2 scheduled in 1h"
contains tl-retry3 "$work/out" "retry 3 scheduled in 2h"
contains tl-exhausted "$work/out" "retry_exhausted after 3 retries (rate_limit)"
contains tl-next-week "$work/out" "2026-12-11 17:00:00.200  attempt 1 (regular) success"
contains tl-notified "$work/out" "-> notified team-weekly"
if grep -q $'\x1b\[' "$work/out"; then bad "timeline: ANSI codes when piped"; else ok; fi
lacks tl-no-disk "$work/out" "disk_write"
# On a terminal (a pseudo-terminal from script(1)): colour, unless NO_COLOR.
if command -v script >/dev/null 2>&1; then
  env -u NO_COLOR script -qc "'$R' run '$SIX' --timeline" /dev/null >"$work/tty" 2>&1
  if grep -q $'\x1b\[31m' "$work/tty"; then ok; else bad "timeline: no colour on a terminal"; fi
  NO_COLOR=1 script -qc "'$R' run '$SIX' --timeline" /dev/null >"$work/tty" 2>&1
  if grep -q $'\x1b\[3' "$work/tty"; then bad "timeline: colour despite NO_COLOR"; else ok; fi
fi
expect_rc timeline-verbose 0 run "$SIX" --timeline --verbose
contains tl-verbose-disk "$work/out" "disk_write"
contains tl-verbose-outbox "$work/out" "outbox_add"

# --- report
expect_rc report 0 run "$SIX" --report "$work/r.html"
if python3 "$SRC/tests/cli/check_report_html.py" "$work/r.html" --svg --expect-lanes 2 \
  --expect attempt=5 --expect retry=3 --expect exhausted=1 --expect recovered=1 \
  --expect delivery=1 --expect notification=5 --expect slot_due=2 --expect fault_start=1 \
  >"$work/check" 2>&1; then ok; else bad "report: $(cat "$work/check")"; fi
contains report-replay "$work/r.html" "rehearse run $SIX --seed 1 --trace t.jsonl"
contains report-status "$work/r.html" "weekly-summary  ok  next_action=none"
contains report-fold "$work/r.html" "folded: nothing happened"
if ls "$work"/*.tmp >/dev/null 2>&1; then bad "report: temporary file left behind"; else ok; fi
expect_rc report-two 2 run "$SIX" "$SRC/scenarios/weekly-quota-2h.json" --report "$work/two.html"
contains report-two-msg "$work/err" "--report takes exactly one scenario"
# A violating run: the first violating event is ringed and listed.
expect_rc report-violation 0 run "$SRC/scenarios/torn-state-write.json" --report "$work/v.html"
if python3 "$SRC/tests/cli/check_report_html.py" "$work/v.html" --svg >"$work/check" 2>&1; then ok; else bad "report-violation: $(cat "$work/check")"; fi

# --- status
mkdir -p "$work/a" "$work/b"
job() {  # job ID STATUS CLASS COUNT LIMIT NEXT_RETRY UPDATED
  printf '"%s":{"coalesced_slots":0,"failure_class":%s,"job_id":"%s","last_error":"","last_slot":null,"max_lateness_ms":0,"misfire_runs":0,"next_action":"%s","next_retry_at":%s,"next_run_at":null,"policy_error":"","retry_count":%s,"retry_limit":%s,"retry_status":"%s","slots":{},"updated_at":%s}' \
    "$1" "$3" "$1" "$8" "$6" "$4" "$5" "$2" "$7"
}
{
  printf '{"format":1,"journal_seq":0,"jobs":{\n'
  job weekly-summary retry_exhausted '"rate_limit"' 3 3 null '"2026-12-04T20:30:00Z"' wait_next_run
  printf ',\n'
  job daily retrying '"timeout"' 1 2 '"2026-12-05T10:10:00Z"' '"2026-12-05T10:00:00Z"' retry
  printf '\n}}\n'
} >"$work/a/retry_state.json"
{
  printf '{"format":1,"journal_seq":0,"jobs":{\n'
  job weekly-summary ok null 0 3 null '"2026-12-11T17:00:00Z"' none
  printf '\n}}\n'
} >"$work/b/retry_state.json"
expect_rc status 0 status "$work/a"
contains status-exhausted "$work/out" "retry_exhausted (1):"
contains status-badge "$work/out" "weekly-summary  rate_limit 3/3 retry_exhausted"
contains status-retrying "$work/out" "daily  timeout 1/2 retrying"
contains status-policy "$work/out" "policy: not known"
if [ -e "$work/a/retry_state.lock" ]; then bad "status: created a lock file"; else ok; fi
expect_rc status-json 0 status "$work/a" --json
if python3 -m json.tool "$work/out" >/dev/null 2>&1; then ok; else bad "status-json: does not parse"; fi
expect_rc status-html 0 status "$work/a" "$work/b" --html "$work/s.html"
contains status-merged "$work/out" "weekly-summary  ok"
if python3 "$SRC/tests/cli/check_report_html.py" "$work/s.html" >"$work/check" 2>&1; then ok; else bad "status-html: $(cat "$work/check")"; fi
expect_rc status-scenario 0 status "$work/a" --scenario "$SIX"
contains status-scenario-policy "$work/out" "policy: auto max=3"
expect_rc status-missing 2 status "$work/nowhere"
contains status-missing-msg "$work/err" "$work/nowhere: no such directory"
if grep -q "$work/nowhere: $work/nowhere" "$work/err"; then bad "status-missing: the path twice: $(cat "$work/err")"; else ok; fi
# A directory without a state file is refused, not shown as 0 jobs.
mkdir -p "$work/empty-dir"
expect_rc status-no-state 2 status "$work/empty-dir"
contains status-no-state-msg "$work/err" "no state file here"
printf '{"format":1,"journal_seq":0,"jobs":{"weekly-summary":' >"$work/b/retry_state.json"
before=$(ls -la --time-style=full-iso "$work/b"; md5sum "$work/b/retry_state.json")
expect_rc status-corrupt 2 status "$work/b"
contains status-corrupt-path "$work/err" "$work/b/retry_state.json"
contains status-corrupt-what "$work/err" "corrupt"
after=$(ls -la --time-style=full-iso "$work/b"; md5sum "$work/b/retry_state.json")
if [ "$before" = "$after" ]; then ok; else bad "status-corrupt: the directory changed"; fi
expect_rc status-usage 2 status

finish "cli report"
