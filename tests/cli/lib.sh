# Shared prelude of the CLI test scripts (sourced after `R="$1"`): a scratch
# directory removed at exit, the pass/fail counters (ok, bad), three checks:
#   expect_rc NAME WANT_RC ARGS...  runs "$R" ARGS..., stdout/stderr kept in
#                                   $work/out and $work/err
#   contains NAME FILE TEXT         FILE holds TEXT
#   lacks NAME FILE TEXT            FILE does not hold TEXT
# and `finish LABEL` to end with: the "LABEL: P passed, F failed" line ctest matches,
# and the script's exit status (0 when nothing failed and something passed).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

expect_rc() {
  local name="$1" want="$2"
  shift 2
  "$R" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "$name: exit $rc, expected $want; stderr: $(head -c 600 "$work/err"); stdout: $(head -c 600 "$work/out")"; fi
}
contains() {
  if grep -qF -- "$3" "$2"; then ok; else bad "$1: $(basename "$2") lacks '$3': $(head -c 900 "$2")"; fi
}
lacks() {
  if grep -qF -- "$3" "$2"; then bad "$1: $(basename "$2") has '$3'"; else ok; fi
}
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
}
