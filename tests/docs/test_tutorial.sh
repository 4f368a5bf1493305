#!/usr/bin/env bash
# Goal: docs/tutorial.md works as written: every command of its `sh` blocks
# runs, in order, in an empty directory, with the built binary as
# `rehearse`, and exits as the tutorial says (0, or the code a trailing
# "# exit N" names). The text it quotes from the failing run is what the
# run prints.
# Method: extract the `sh` blocks, run each line with bash, compare exit
# codes; fewer than 8 commands (a renamed fence, an emptied block) fails.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/../cli/lib.sh"
mkdir -p "$work/bin"
ln -s "$(readlink -f "$R")" "$work/bin/rehearse"
export PATH="$work/bin:$PATH"
commands=$(awk '/^```sh$/{on=1; next} /^```/{on=0} on && !/^#/ && NF' "$SRC/docs/tutorial.md")
count=0
cd "$work" || exit 1
while IFS= read -r line; do
  count=$((count + 1))
  want=0
  if [[ "$line" =~ \#\ exit\ ([0-9]+)$ ]]; then want="${BASH_REMATCH[1]}"; fi
  bash -c "$line" >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" = "$want" ]; then
    pass=$((pass + 1))
  else
    echo "FAIL exit $rc, expected $want: $line"; head -c 800 "$work/err"; head -c 800 "$work/out"
    fail=$((fail + 1))
  fi
  # The failing run's findings are quoted in the tutorial.
  if [ "$want" = 1 ]; then
    for quoted in "expect /expect/jobs/sync/failed_slots: expected 0, got 1" \
                  "expect /expect/jobs/sync/final_status: expected ok, got retry_exhausted"; do
      if grep -qF "$quoted" "$work/out" && grep -qF "$quoted" "$SRC/docs/tutorial.md"; then
        pass=$((pass + 1))
      else
        echo "FAIL the tutorial and the run disagree on: $quoted"; fail=$((fail + 1))
      fi
    done
  fi
done <<<"$commands"
[ "$count" -ge 8 ] || { echo "FAIL only $count tutorial commands found"; fail=$((fail + 1)); }
for f in run.xml check.xml tune.svg; do
  [ -s "$work/$f" ] && pass=$((pass + 1)) || { echo "FAIL the tutorial wrote no $f"; fail=$((fail + 1)); }
done
finish "tutorial"
