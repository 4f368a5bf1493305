#!/usr/bin/env bash
# Goal: the files the command writes never replace what is at the path
# (docs/cli.md "Output files"): `--trace -` is standard output; a FIFO is
# written through and stays a FIFO; a symlink stays a link and its target gets
# the trace; a regular file is replaced atomically; an input scenario is never
# overwritten (exit 2, the input byte-identical, nothing left behind).
# Method: only files this script creates in a mktemp directory (never a real
# device); the built binary runs one small scenario.
set -u
R="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
. "$(dirname "$0")/lib.sh"
reader=""
cleanup() {
  [ -n "$reader" ] && kill "$reader" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# Everything runs inside the temporary directory, so that even a broken build
# that writes a file named "-" writes it there.
cd "$work" || exit 1

cat >"$work/s.json" <<'JSON'
{
  "format": 1,
  "scenario": "output-files",
  "start": "2026-12-04T16:00:00Z",
  "until": "2026-12-04T18:00:00Z",
  "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
  "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
            "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
  "expect": {"jobs": {"weekly": {"delivered_slots": 1}}}
}
JSON
cp "$work/s.json" "$work/s.orig"
# The reference trace, written to a fresh regular file.
"$R" run "$work/s.json" --trace "$work/ref.jsonl" >/dev/null 2>&1
if [ -s "$work/ref.jsonl" ] && [ -f "$work/ref.jsonl" ]; then ok; else bad "regular: no trace"; fi

# is_trace FILE: every line parses as a trace event.
is_trace() {
  python3 - "$1" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines, "empty"
for raw in lines:
    e = json.loads(raw)
    assert list(e)[:3] == ["t", "seq", "type"], raw
PY
}

# `--trace -`: the trace on stdout, before the table; no file named "-".
"$R" run s.json --trace - >"$work/stdout" 2>"$work/err"
rc=$?
if [ "$rc" = 0 ]; then ok; else bad "dash: exit $rc: $(cat "$work/err")"; fi
lines=$(wc -l <"$work/ref.jsonl")
head -n "$lines" "$work/stdout" >"$work/dash.jsonl"
if cmp -s "$work/dash.jsonl" "$work/ref.jsonl"; then ok; else bad "dash: stdout does not start with the trace"; fi
if [ ! -e "$work/-" ]; then ok; else bad "dash: wrote a file named -"; fi
# With --json, stdout cannot carry both: bad usage.
"$R" run "$work/s.json" --trace - --json >"$work/stdout" 2>/dev/null
rc=$?
if [ "$rc" = 2 ]; then ok; else bad "dash-json: exit $rc, expected 2"; fi

# A FIFO with a reader: written through, still a FIFO afterwards.
mkfifo "$work/fifo"
timeout 20 cat "$work/fifo" >"$work/fifo.out" &
reader=$!
"$R" run "$work/s.json" --trace "$work/fifo" >/dev/null 2>"$work/err"
rc=$?
wait "$reader"
reader=""
if [ "$rc" = 0 ]; then ok; else bad "fifo: exit $rc: $(cat "$work/err")"; fi
if [ -p "$work/fifo" ]; then ok; else bad "fifo: no longer a FIFO"; fi
if cmp -s "$work/fifo.out" "$work/ref.jsonl"; then ok; else bad "fifo: the reader did not get the trace"; fi

# /dev/fd/N names an open descriptor (here onto a file of ours): written
# through, after what the descriptor already holds; no temporary file anywhere.
echo "already there" >"$work/fd3.out"
"$R" run "$work/s.json" --trace /dev/fd/3 3>>"$work/fd3.out" >/dev/null 2>"$work/err"
rc=$?
if [ "$rc" = 0 ]; then ok; else bad "fd: exit $rc: $(cat "$work/err")"; fi
{ echo "already there"; cat "$work/ref.jsonl"; } >"$work/fd3.want"
if cmp -s "$work/fd3.out" "$work/fd3.want"; then ok; else bad "fd: the descriptor's file lacks the trace"; fi

# A symlink (relative, into a subdirectory): the link survives, the target
# gets the trace, no temporary file is left in either directory.
mkdir "$work/sub"
echo "old content" >"$work/sub/target.jsonl"
ln -s sub/target.jsonl "$work/link.jsonl"
"$R" run "$work/s.json" --trace "$work/link.jsonl" >/dev/null 2>"$work/err"
rc=$?
if [ "$rc" = 0 ]; then ok; else bad "symlink: exit $rc: $(cat "$work/err")"; fi
if [ -L "$work/link.jsonl" ] && [ "$(readlink "$work/link.jsonl")" = sub/target.jsonl ]; then ok; else bad "symlink: the link was replaced"; fi
if cmp -s "$work/sub/target.jsonl" "$work/ref.jsonl"; then ok; else bad "symlink: the target lacks the trace"; fi
if is_trace "$work/sub/target.jsonl"; then ok; else bad "symlink: target is not a trace"; fi
if [ -z "$(ls -A "$work/sub" | grep -v '^target.jsonl$')" ]; then ok; else bad "symlink: left $(ls -A "$work/sub")"; fi
# A dangling symlink: the file is created at the link's target.
ln -s sub/new.jsonl "$work/dangling.jsonl"
"$R" run "$work/s.json" --trace "$work/dangling.jsonl" >/dev/null 2>&1
if [ -L "$work/dangling.jsonl" ] && cmp -s "$work/sub/new.jsonl" "$work/ref.jsonl"; then ok; else bad "dangling symlink"; fi

# An existing regular file keeps its mode.
echo old >"$work/mode.jsonl"
chmod 640 "$work/mode.jsonl"
"$R" run "$work/s.json" --trace "$work/mode.jsonl" >/dev/null 2>&1
if [ "$(stat -c %a "$work/mode.jsonl")" = 640 ] && cmp -s "$work/mode.jsonl" "$work/ref.jsonl"; then ok; else bad "mode: $(stat -c %a "$work/mode.jsonl")"; fi

# The input file itself, directly or through a symlink: exit 2, untouched.
before=$(ls -A "$work")
"$R" run "$work/s.json" --trace "$work/s.json" >"$work/stdout" 2>"$work/err"
rc=$?
if [ "$rc" = 2 ]; then ok; else bad "input: exit $rc, expected 2"; fi
if cmp -s "$work/s.json" "$work/s.orig"; then ok; else bad "input: the scenario was overwritten"; fi
if grep -qF "refusing to write over the input file" "$work/err"; then ok; else bad "input: message: $(cat "$work/err")"; fi
ln -s s.json "$work/alias.json"
before=$(ls -A "$work")
"$R" run "$work/s.json" --trace "$work/alias.json" >/dev/null 2>&1
rc=$?
if [ "$rc" = 2 ] && cmp -s "$work/s.json" "$work/s.orig" && [ -L "$work/alias.json" ]; then ok; else bad "input via symlink: exit $rc"; fi
if [ "$(ls -A "$work")" = "$before" ]; then ok; else bad "input: files appeared: $(ls -A "$work")"; fi
# --json: the refusal is one JSON error object naming the file.
"$R" run "$work/s.json" --trace "$work/s.json" --json >"$work/stdout" 2>/dev/null
if python3 - "$work/stdout" "$work/s.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["error"]["exit_code"] == 2, doc
assert doc["error"]["file"] == sys.argv[2], doc
assert "input file" in doc["error"]["message"], doc
PY
then ok; else bad "input --json: $(cat "$work/stdout")"; fi

# The same rule for every file the command writes: --report onto the input
# scenario is refused; --report onto a symlink writes the link's target;
# status --html onto a state file is refused and leaves it as it was.
"$R" run "$work/s.json" --report "$work/s.json" >/dev/null 2>"$work/err"
rc=$?
if [ "$rc" = 2 ] && cmp -s "$work/s.json" "$work/s.orig"; then ok; else bad "report onto input: exit $rc"; fi
ln -s sub/page.html "$work/page-link.html"
"$R" run "$work/s.json" --report "$work/page-link.html" >/dev/null 2>&1
if [ -L "$work/page-link.html" ] && grep -q "<html" "$work/sub/page.html"; then ok; else bad "report via symlink"; fi
mkdir -p "$work/state"
printf '{"format":1,"journal_seq":0,"jobs":{}}' >"$work/state/retry_state.json"
echo 'kept by the operator' >"$work/state/notes.txt"
"$R" status "$work/state" --html "$work/state/page.html" >/dev/null 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q "<html" "$work/state/page.html"; then ok; else bad "status --html: exit $rc"; fi
"$R" status "$work/state" --html "$work/state/notes.txt" >/dev/null 2>"$work/err"
rc=$?
if [ "$rc" = 2 ] && [ "$(cat "$work/state/notes.txt")" = 'kept by the operator' ]; then ok; else bad "status --html onto a file in the state directory: exit $rc $(cat "$work/err")"; fi

finish "cli output"
