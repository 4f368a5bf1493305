#!/usr/bin/env bash
# Goal: the fleet load per service (docs/run.md "Fleet load") reaches the
# three outputs of `run`, and only for the scenarios that have one:
# - `run --json` of a scenario with a fault on a service of the user's own
#   has `load` with every user service (the faulted one with its trigger
#   and drain), of one with a declared capacity has its capacity per minute
#   and the metastability judgment; a scenario without a service of the
#   user's own has no `load` (its document is unchanged);
# - `run --timeline` ends with a `load` block, one line per service with a
#   capacity or a fault;
# - `run --report` draws one load curve per such service after the
#   timeline: the page stays well-formed and self-contained, the timeline's
#   SVG still comes first.
# Method: run the built binary on bundled scenarios and one written here
# (an hourly call job against a provider serving 10 requests a minute, a
# 503 outage from 01:00 to 01:30); check --json with Python, the rest with
# grep and tests/cli/check_report_html.py.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
OUTAGE="$SRC/scenarios/my-api-outage.json"

# --- --json: present where wanted, absent elsewhere
json_check json-outage \
  'd["scenarios"][0]["load"]["ledger-api"]["trigger_end"] == "2026-11-30T06:15:00Z" and d["scenarios"][0]["load"]["ledger-api"]["calls"] == 14 and "billing-api" in d["scenarios"][0]["load"] and "capacity_per_minute" not in d["scenarios"][0]["load"]["billing-api"]' \
  run --json --once "$OUTAGE"
json_check json-outage-minutes \
  'len(d["scenarios"][0]["load"]["ledger-api"]["per_minute"]["calls"]) == 540 and d["scenarios"][0]["load"]["ledger-api"]["metastable_judged"] is False' \
  run --json --once "$OUTAGE"
json_check json-no-user-service 'rc == 0 and "load" not in d["scenarios"][0]' \
  run --json --once "$SRC/scenarios/weekly-quota-6h.json"

cat >"$work/capacity.json" <<'EOF'
{
  "format": 1, "scenario": "load-capacity",
  "start": "2026-12-01T00:00:00Z", "until": "2026-12-01T03:00:00Z",
  "services": {"provider": {"capacity": {"rate": 10, "per": "1m"}},
               "messenger": {"targets": ["ops"]}},
  "jobs": [{"id": "sync", "kind": "call", "schedule": "*/15 * * * *",
            "retry_policy": {"max": 2, "backoff_sec": 60},
            "calls": [{"service": "provider", "method": "GET", "path": "/x"}]}],
  "faults": [{"at": "2026-12-01T01:00:00Z", "for": "30m", "kind": "http_errors",
              "service": "provider", "status": 503}]
}
EOF
json_check json-capacity \
  'd["scenarios"][0]["load"]["provider"]["capacity_per_minute"] == 10 and d["scenarios"][0]["load"]["provider"]["metastable_judged"] is True and d["scenarios"][0]["load"]["provider"]["metastable"] is False and d["scenarios"][0]["load"]["provider"]["drain_ms"] == 0' \
  run --json "$work/capacity.json"

# --- --timeline: the closing block
expect_rc timeline 0 run "$OUTAGE" --once --timeline
if grep -qx "load" "$work/out"; then ok; else bad "timeline-heading: no 'load' line"; fi
contains timeline-line "$work/out" "  ledger-api: 14 calls, "
lacks timeline-no-line-without-fault "$work/out" "  billing-api: "
expect_rc timeline-capacity 0 run "$work/capacity.json" --once --timeline
contains timeline-capacity-line "$work/out" "(capacity 10/min), no failure after it; under capacity 1h after the outage ended"
expect_rc timeline-none 0 run "$SRC/scenarios/weekly-quota-6h.json" --once --timeline
if grep -qx "load" "$work/out"; then bad "timeline-none-block: a 'load' line"; else ok; fi

# --- --report: a load curve per service worth one
expect_rc report 0 run "$work/capacity.json" --once --report "$work/r.html"
if python3 "$SRC/tests/cli/check_report_html.py" "$work/r.html" --svg >"$work/check" 2>&1; then
  ok
else
  bad "report: $(cat "$work/check")"
fi
contains report-section "$work/r.html" "<h2>Fleet load</h2>"
contains report-svg "$work/r.html" 'class="load" data-service="provider"'
contains report-capacity "$work/r.html" "capacity 10/min</text>"
contains report-axis-y "$work/r.html" "requests per minute</text>"
contains report-axis-x "$work/r.html" "time (UTC)</text>"
contains report-band "$work/r.html" "fault 0 (http_errors): 2026-12-01 01:00:00 .. 2026-12-01 01:30:00"
# Each load SVG parses as XML on its own.
if python3 - "$work/r.html" >"$work/check" 2>&1 <<'PY'; then ok; else bad "report-load-xml: $(cat "$work/check")"; fi
import re, sys, xml.etree.ElementTree as ET
text = open(sys.argv[1], encoding="utf-8").read()
charts = re.findall(r'<svg [^>]*class="load".*?</svg>', text, re.S)
assert len(charts) == 1, f"{len(charts)} load charts"
for c in charts:
    svg = ET.fromstring(c)
    lines = [e for e in svg.iter("{http://www.w3.org/2000/svg}polyline")]
    assert len(lines) == 2, f"{len(lines)} polylines"
PY
expect_rc report-none 0 run "$SRC/scenarios/weekly-quota-6h.json" --once --report "$work/n.html"
lacks report-none-section "$work/n.html" "Fleet load"

finish "cli run load"
