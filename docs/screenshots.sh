#!/usr/bin/env bash
# Regenerates the report screenshots in docs/ (docs/report.md):
#   docs/screenshots.sh [REHEARSE_BINARY]
# Runs four bundled scenarios with --report (one job through a quota outage,
# a restart mid retry chain, two call jobs of the user's own, a 24-job fleet)
# and photographs each page with headless Chromium; writes the tune heat
# maps of three of them (Debian package `chromium`, installed by .ci/deps.sh).
# Default binary: build/release/sim/cli/rehearse (cmake --preset release &&
# cmake --build --preset release --target rehearse).
set -euo pipefail
cd "$(dirname "$0")/.."
R="${1:-build/release/sim/cli/rehearse}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shoot() {  # shoot SCENARIO HEIGHT
  local name
  name=$(basename "$1" .json)
  "$R" run "$1" --once --report "$work/$name.html" >/dev/null
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --window-size=1260,"$2" \
    --screenshot="docs/report-$name.png" "file://$work/$name.html" >/dev/null 2>&1
  echo "docs/report-$name.png"
}
# The tune heat maps of three of them, as SVG (a small grid for the fleet:
# each of its runs is the whole 24-job world).
heat() {  # heat SCENARIO JOB [ARGS...]
  "$R" tune "scenarios/$1.json" --job "$2" "${@:3}" --svg "docs/tune-$1.svg" >/dev/null
  echo "docs/tune-$1.svg"
}
heat weekly-quota-6h weekly-summary --seeds 40
heat my-api-outage invoice-sync --seeds 40
heat fleet-quota-outage fleet-10 --seeds 20 --grid 'attempts=2-4;delay=15m,1h;backoff=exponential'
shoot scenarios/weekly-quota-6h.json 700
shoot scenarios/restart-mid-retry-chain.json 700
shoot scenarios/my-api-outage.json 760
shoot scenarios/fleet-quota-outage.json 1100
