# Shared prelude of the CLI test scripts (sourced after `R="$1"`): a scratch
# directory removed at exit, the pass/fail counters (ok, bad), three checks:
#   expect_rc NAME WANT_RC ARGS...  runs "$R" ARGS..., stdout/stderr kept in
#                                   $work/out and $work/err
#   contains NAME FILE TEXT         FILE holds TEXT
#   lacks NAME FILE TEXT            FILE does not hold TEXT
#   json_check NAME EXPR ARGS...    a Python expression over the parsed
#                                   stdout `d` and exit code `rc` holds
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
# json_check NAME PYTHON-EXPR ARGS...: the expression over the parsed stdout
# `d` and the exit code `rc` of "$R" ARGS... must be true.
json_check() {
  local name="$1" expr="$2"
  shift 2
  local out rc
  out=$("$R" "$@" 2>/dev/null)
  rc=$?
  if python3 -c 'import json, sys; d = json.loads(sys.argv[1]); rc = int(sys.argv[3]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$out" "$expr" "$rc" 2>/dev/null; then
    ok
  else
    bad "$name: '$expr' is not true of exit $rc, stdout: $(echo "$out" | head -c 900)"
  fi
}
lacks() {
  if grep -qF -- "$3" "$2"; then bad "$1: $(basename "$2") has '$3'"; else ok; fi
}
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
}
