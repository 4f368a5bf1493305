#!/usr/bin/env bash
# Goal: `rehearse check --random-jobs` and `rehearse check` without a scenario
# keep their contract (docs/check.md): the generated or randomized case is an
# ordinary scenario (--emit) that `rehearse validate` accepts and `rehearse
# run` replays; the same seed emits the same file; the replay line names
# --random-jobs; exit codes as for check (0 or 1 for a run, 2 for bad input).
# Method: the built binary, a bundled scenario, a temporary directory.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"

# --help names both.
expect_rc help 0 check --help
contains help-usage "$work/out" "usage: rehearse check [SCENARIO|DIR...]"
contains help-random "$work/out" "--random-jobs"

# Generated worlds: emitted, valid, replayable, the same for the same seed.
"$R" check --seeds 3 --first-seed 5 --threads 1 --emit "$work/a" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then ok; else bad "worlds: exit $rc: $(head -c 600 "$work/err")"; fi
contains worlds-summary "$work/out" "check: 3 cases"
for s in 5 6 7; do
  if [ -f "$work/a/world.seed-$s.json" ]; then ok; else bad "worlds: world.seed-$s.json missing: $(ls "$work/a")"; fi
done
expect_rc worlds-validate 0 validate "$work/a/world.seed-5.json"
"$R" run "$work/a/world.seed-6.json" --seed 6 >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then ok; else bad "worlds-run: exit $rc: $(head -c 600 "$work/err")"; fi
"$R" check --seeds 1 --first-seed 6 --threads 1 --emit "$work/b" >/dev/null 2>&1
if cmp -s "$work/a/world.seed-6.json" "$work/b/world.seed-6.json"; then ok; else bad "worlds: seed 6 differs between two runs"; fi
if cmp -s "$work/a/world.seed-5.json" "$work/a/world.seed-6.json"; then bad "worlds: seeds 5 and 6 gave the same world"; else ok; fi
"$R" check --seeds 2 --first-seed 5 --threads 1 --json >"$work/out" 2>"$work/err"
contains worlds-json-replay "$work/out" '"replay": "rehearse check --seeds 1 --first-seed 5"'
contains worlds-json-name "$work/out" '"scenario": "world"'

# --random-jobs on a bundled scenario: emitted, valid, the replay names it.
base="$SRC/scenarios/weekly-quota-6h.json"
"$R" check "$base" --random-jobs --seeds 2 --threads 1 --json --emit "$work/c" >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then ok; else bad "random-jobs: exit $rc: $(head -c 600 "$work/err")"; fi
contains random-jobs-replay "$work/out" "--first-seed 1 --random-jobs"
expect_rc random-jobs-validate 0 validate "$work/c/weekly-quota-6h.seed-2.json"
contains random-jobs-description "$work/c/weekly-quota-6h.seed-2.json" "Jobs randomized"
"$R" check "$base" --seeds 1 --first-seed 2 --threads 1 --emit "$work/d" >/dev/null 2>&1
if cmp -s "$work/c/weekly-quota-6h.seed-2.json" "$work/d/weekly-quota-6h.seed-2.json"; then
  bad "random-jobs: the same document with and without --random-jobs"
else ok; fi

# Bad input is still exit 2 without a scenario.
expect_rc worlds-zero-seeds 2 check --seeds 0
expect_rc random-jobs-missing 2 check "$work/nope.json" --random-jobs --seeds 1

finish "cli check worlds"
