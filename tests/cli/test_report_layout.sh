#!/usr/bin/env bash
# Goal: the pictures read by eye: for three reports (one job through a quota
# outage, two call jobs of the user's own, a 24-job fleet) headless Chromium
# lays the page out and the page's own self-test finds every colour class
# and shape a mark uses explained in the legend, no two marks of one kind on
# one lane closer than 3 px (closer ones are one merged mark whose hover text
# counts them), and no text past its box or the timeline's edge; the tune
# heat map has no text outside the picture or over another text. A report
# whose legend lost an entry is caught (the check can fail).
# Method: rehearse run --report; chromium --dump-dom; the self-test's JSON
# in <pre id="selftest">. (docs/screenshots.sh photographs the same pages.)
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "report layout: chromium is not installed (.ci/deps.sh installs it)"
  exit 1
fi
browse() {  # browse HTML OUT [--screenshot=PNG]
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --window-size=1320,900 --hide-scrollbars "${@:3}" \
    "file://$1" >"$2" 2>"$work/log"
}
selftest() {  # selftest DOM EXPR: EXPR over the self-test's JSON `st`
  python3 - "$1" "$2" <<'PY'
import html, json, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<pre id="selftest"[^>]*>(.*?)</pre>', dom, re.S)
st = json.loads(html.unescape(m.group(1))) if m and m.group(1).strip() else {}
ok = bool(st) and eval(sys.argv[2])
if not ok:
    print("  self-test:", {k: st.get(k) for k in ("errors", "unexplained", "crowded", "overflow", "marks")})
sys.exit(0 if ok else 1)
PY
}
for name in weekly-quota-6h my-api-outage fleet-quota-outage; do
  "$R" run "$SRC/scenarios/$name.json" --once --report "$work/$name.html" >/dev/null 2>&1
  if ! browse "$work/$name.html" "$work/$name.dom" --dump-dom; then
    echo "FAIL $name: chromium failed: $(tail -3 "$work/log")"; fail=$((fail + 1)); continue
  fi
  if selftest "$work/$name.dom" 'not st["errors"] and not st["unexplained"] and st["crowded"] == 0 and not st["overflow"] and st["marks"] > 0'; then
    pass=$((pass + 1))
  else
    echo "FAIL $name: the layout self-test found problems"; fail=$((fail + 1))
  fi
done
# The check can fail: a legend without its "success" entry leaves green marks unexplained.
sed 's/<span data-cls="t-good">/<span>/' "$work/weekly-quota-6h.html" >"$work/tampered.html"
browse "$work/tampered.html" "$work/tampered.dom" --dump-dom
if selftest "$work/tampered.dom" '"t-good" in st["unexplained"]' >/dev/null; then
  pass=$((pass + 1))
else
  echo "FAIL the self-test missed a legend entry removed"; fail=$((fail + 1))
fi
# The tune heat map: no text outside the picture or over another text
# (the verdict wraps; the axis names keep clear of each other).
"$R" tune "$SRC/scenarios/my-api-outage.json" --job invoice-sync --seeds 8 --threads 1 \
  --svg "$work/tune.svg" >/dev/null 2>&1
{
  echo '<!DOCTYPE html><html><body>'
  sed 1d "$work/tune.svg"
  cat <<'JS'
<pre id="selftest"></pre><script>
var svg=document.querySelector('svg'),w=svg.viewBox.baseVal.width,h=svg.viewBox.baseVal.height;
var boxes=[],overflow=[],overlaps=0;
Array.prototype.forEach.call(svg.querySelectorAll('text'),function(t){var b=t.getBBox();
 if(b.x<-0.5||b.y<-0.5||b.x+b.width>w+0.5||b.y+b.height>h+0.5)overflow.push(t.textContent);
 boxes.forEach(function(o){if(b.x<o.x+o.width-0.5&&o.x<b.x+b.width-0.5&&b.y<o.y+o.height-0.5&&o.y<b.y+b.height-0.5)overlaps++;});
 boxes.push(b);});
document.getElementById('selftest').textContent=JSON.stringify({errors:[],unexplained:[],crowded:overlaps,overflow:overflow,marks:boxes.length});
</script></body></html>
JS
} >"$work/tune.html"
browse "$work/tune.html" "$work/tune.dom" --dump-dom
if selftest "$work/tune.dom" 'not st["overflow"] and st["crowded"] == 0 and st["marks"] > 20'; then
  pass=$((pass + 1))
else
  echo "FAIL the tune heat map has text outside it or text over text"; fail=$((fail + 1))
fi

finish "report layout"
