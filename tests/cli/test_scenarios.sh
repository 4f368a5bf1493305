#!/bin/sh
# Goal: the bundled scenario catalogue (scenarios/, docs/scenarios.md) holds
# end to end: every scenario runs with every invariant and every hand-derived
# expectation holding, and runs without random faults are deterministic across
# seeds.
# Method: (1) refuse a catalogue with fewer files than docs/scenarios.md
# derives (an emptied or renamed glob must not pass as "nothing failed");
# (2) `rehearse run DIR` must exit 0; (3) each scenario runs with two seeds
# (both runs must pass) and, unless the seed legitimately shapes it, both runs
# must report the same trace hash. The seed shapes a run through the run's one
# generator only: faults with a rate below 1 (which calls they hit), torn
# writes (where the write is cut, docs/sim-disk.md) and state corruption (the
# garbage bytes). Everything else must not depend on it: brokerage token
# values come from a stream fixed by the brokerage's name (sim/world/brokerage.cpp),
# not from the seed.
# Usage: test_scenarios.sh REHEARSE_EXE REPO_DIR
set -eu

exe=${1:?usage: test_scenarios.sh REHEARSE_EXE REPO_DIR}
repo=${2:?usage: test_scenarios.sh REHEARSE_EXE REPO_DIR}
dir="$repo/scenarios"
# How many scenarios docs/scenarios.md derives. Raise it when adding one.
expected_min=58

count=0
for f in "$dir"/*.json; do
  [ -f "$f" ] && count=$((count + 1))
done
if [ "$count" -lt "$expected_min" ]; then
  echo "FAIL: $dir holds $count scenario files, expected at least $expected_min" >&2
  exit 1
fi
echo "catalogue: $count scenario files"

rc=0
"$exe" run "$dir" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: rehearse run $dir exited $rc (want 0)" >&2
  exit 1
fi

# The trace hash of one run, from the --json summary (first "trace_hash").
trace_hash() {
  out=$("$exe" run "$1" --seed "$2" --json) || {
    echo "FAIL: rehearse run $1 --seed $2 --json failed" >&2
    return 1
  }
  printf '%s\n' "$out" | grep -o '"trace_hash": *"[0-9a-fA-F]*"' | head -n 1 |
    sed 's/.*"\([0-9a-fA-F]*\)"$/\1/'
}

failures=0
checked=0
for f in "$dir"/*.json; do
  # Seeded draws (see the header): any "rate" below 1 (0, 0.25, 1e-3 ...),
  # a torn_write or state_corrupted fault. Those
  # scenarios still run under both seeds (they must pass); only their hashes
  # may differ.
  random=no
  # So are retry delays with jitter: a "jitter" above 0 or a shape by name
  # (equal, full, decorrelated), Step Functions' FULL strategy, Celery's
  # retry_jitter (on unless false with a backoff) and every Sidekiq delay.
  if grep -Eq '"rate"[[:space:]]*:[[:space:]]*(0([.][0-9]*)?|[.][0-9]+|[0-9.]+[eE]-[0-9]+)[[:space:]]*[,}]' "$f" ||
    grep -Eq '"kind"[[:space:]]*:[[:space:]]*"(torn_write|state_corrupted)"' "$f" ||
    grep -Eq '"?jitter"?[[:space:]]*:[[:space:]]*(0?[.][0-9]*[1-9]|1|"(equal|full|decorrelated)")|"JitterStrategy"[[:space:]]*:[[:space:]]*"FULL"|"sidekiq"[[:space:]]*:|"retry_backoff"' "$f"; then
    random=yes
  fi
  h1=$(trace_hash "$f" 7) || { failures=$((failures + 1)); continue; }
  h2=$(trace_hash "$f" 1234567) || { failures=$((failures + 1)); continue; }
  if [ -z "$h1" ] || [ -z "$h2" ]; then
    echo "FAIL: $f: no trace_hash in the --json summary" >&2
    failures=$((failures + 1))
    continue
  fi
  if [ "$random" = no ]; then
    checked=$((checked + 1))
    if [ "$h1" != "$h2" ]; then
      echo "FAIL: $f has no random fault but its trace differs between seeds ($h1 vs $h2)" >&2
      failures=$((failures + 1))
    fi
  fi
done
echo "seed-independence checked on $checked scenarios"
if [ "$checked" -eq 0 ]; then
  echo "FAIL: no scenario without random faults was checked" >&2
  exit 1
fi
[ "$failures" -eq 0 ]
