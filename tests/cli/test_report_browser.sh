#!/usr/bin/env bash
# Goal: the HTML report renders in a real browser: headless Chromium loads
# weekly-quota-6h's report with the network off, its script runs without an
# error (window errors and console errors), and the rendered timeline holds
# the lanes and marks the scenario implies (2 lanes: world and
# weekly-summary; 5 attempts, 3 retries, 1 exhaustion, 1 recovery, 1
# delivery, 5 notifications) and a status row per job lane.
# Method: rehearse run --report; chromium --dump-dom; the page's own test hook
# writes its counts into <pre id="selftest">, which is read from the DOM dump.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "browser: chromium is not installed (.ci/deps.sh installs it)"
  exit 1
fi
"$R" run "$SRC/scenarios/weekly-quota-6h.json" --report "$work/r.html" >/dev/null || exit 1
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --enable-logging=stderr --v=0 \
  --dump-dom "file://$work/r.html" >"$work/dom.html" 2>"$work/log"
rc=$?
if [ "$rc" != 0 ]; then
  echo "browser: chromium exited $rc: $(tail -5 "$work/log")"
  exit 1
fi
python3 - "$work/dom.html" "$work/log" <<'PY'
import html, json, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
log = open(sys.argv[2], encoding="utf-8", errors="replace").read()
problems = []
m = re.search(r'<pre id="selftest"[^>]*>(.*?)</pre>', dom, re.S)
if not m or not m.group(1).strip():
    print("browser: the page's test hook wrote nothing (its script did not run)")
    sys.exit(1)
st = json.loads(html.unescape(m.group(1)))
if st.get("errors"):
    problems.append(f"script errors: {st['errors']}")
for line in log.splitlines():
    if "CONSOLE" in line and ("Uncaught" in line or "Error" in line):
        problems.append(f"console: {line.strip()}")
want = {"attempt": 5, "retry": 3, "exhausted": 1, "recovered": 1, "delivery": 1,
        "notification": 5, "slot_due": 2}
if st.get("lanes") != 2 or st.get("expected_lanes") != 2:
    problems.append(f"lanes {st.get('lanes')} (page expects {st.get('expected_lanes')}), want 2")
if st.get("marks") != st.get("expected_marks"):
    problems.append(f"marks {st.get('marks')}, the page drew {st.get('expected_marks')}")
for k, n in want.items():
    if st.get("kinds", {}).get(k) != n:
        problems.append(f"{st.get('kinds', {}).get(k)} {k} marks, want {n}")
if st.get("status_rows") != 1 or st.get("first_change_rows") != 1:
    problems.append(f"status rows {st.get('status_rows')}/{st.get('first_change_rows')}, want 1")
if problems:
    for p in problems:
        print("browser:", p)
    sys.exit(1)
print(f"browser: ok, {st['lanes']} lanes, {st['marks']} marks {sorted(st['kinds'].items())}, no script errors")
PY
