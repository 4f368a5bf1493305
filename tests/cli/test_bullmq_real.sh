#!/usr/bin/env bash
# Goal: a real BullMQ incident, exported by tools/bullmq-export/export.mjs
# (docs/bullmq-export.md) and read by `rehearse import --bullmq`
# (docs/import.md), replays: the export holds what BullMQ itself recorded,
# and the imported scenario's expectations are that job's observed attempts.
# Method: a private redis-server on a free loopback port; tests/bullmq/
# worker.mjs runs the scripted partner-sync incident on it (one `sync` job,
# 5 attempts, fixed 2 s backoff, HTTP 429 for the first 5 s after it was
# added: three failures, then success on the fourth attempt, about 6.4 s
# in); the exporter writes the queue; the export is checked against BullMQ
# 5's recorded semantics, imported and replayed. An export whose job lost its
# `opts` exits 2 naming the file and the pointer.
# redis-server (Debian redis-server, .ci/deps.sh), node and npm are required:
# without them this test fails, it does not skip.
set -u
R="$1"
SRC="$2"
. "$(dirname "$0")/lib.sh"
EXPORTER="$SRC/tools/bullmq-export/export.mjs"
WORKER="$SRC/tests/bullmq/worker.mjs"

give_up() {
  finish "cli bullmq real"
  exit 1
}

# ---- the tools: missing ones fail the test ----
for tool in redis-server node npm python3; do
  command -v "$tool" >/dev/null 2>&1 || bad "$tool is not installed (.ci/deps.sh installs it)"
done
[ "$fail" -eq 0 ] || give_up
if [ ! -d "$SRC/tools/bullmq-export/node_modules/bullmq" ]; then
  if npm ci --prefix "$SRC/tools/bullmq-export" --no-audit --no-fund >"$work/npm.log" 2>&1; then
    ok
  else
    bad "npm ci --prefix tools/bullmq-export failed: $(tail -n 5 "$work/npm.log")"
    give_up
  fi
fi

# ---- a private Redis, stopped at exit (before lib.sh removes $work) ----
redis_pid=
stop_redis() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null
    wait "$redis_pid" 2>/dev/null
    redis_pid=
  fi
}
# lib.sh's trap (removing $work) kept, after stop_redis: `trap -p` quotes it.
eval "set -- $(trap -p EXIT)"
# shellcheck disable=SC2064 # lib.sh's command, expanded now on purpose
trap "stop_redis; ${3:-}" EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# redis_ping PORT: the server answers PING with PONG (redis-cli, or bash's /dev/tcp).
redis_ping() {
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]
    return
  fi
  local line
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 2 line <&3
  exec 3<&-
  [ "${line%$'\r'}" = "+PONG" ]
}
# start_redis: a server on a free port (another port if one was taken meanwhile).
start_redis() {
  mkdir -p "$work/redis"
  for _ in 1 2 3; do
    port=$(free_port) || return 1
    (cd "$work/redis" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize no --dir "$work/redis" >"$work/redis/log" 2>&1) &
    redis_pid=$!
    for _ in $(seq 1 100); do
      if redis_ping "$port"; then return 0; fi
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.1
    done
    stop_redis
  done
  return 1
}
if start_redis; then ok; else bad "redis-server did not answer PING: $(tail -n 5 "$work/redis/log")"; give_up; fi
URL="redis://127.0.0.1:$port"

# ---- the exporter's arguments ----
if node "$EXPORTER" --help >"$work/out" 2>&1; then ok; else bad "export --help"; fi
contains export-help "$work/out" "--queue NAME"
node "$EXPORTER" --redis "$URL" >"$work/out" 2>"$work/err"
if [ $? = 2 ]; then ok; else bad "export without --queue: not exit 2"; fi
contains export-no-queue "$work/err" "--queue"
node "$EXPORTER" --redis "$URL" --queue q --frobnicate >"$work/out" 2>"$work/err"
if [ $? = 2 ]; then ok; else bad "export with an unknown option: not exit 2"; fi
contains export-unknown "$work/err" "unknown option --frobnicate"

# ---- the incident, on BullMQ itself ----
if timeout 60 node "$WORKER" --redis "$URL" --queue partner-sync 2>"$work/worker.err"; then
  ok
else
  bad "worker.mjs: $(tail -n 8 "$work/worker.err")"
  give_up
fi
if timeout 60 node "$EXPORTER" --redis "$URL" --queue partner-sync --out "$work/export.json" 2>"$work/export.err"; then
  ok
else
  bad "export.mjs: $(tail -n 5 "$work/export.err")"
  give_up
fi

# The export, as BullMQ 5 recorded the incident: attemptsMade counts every
# attempt that ended (3 failures and the success: 4); processedOn and
# finishedOn are the last attempt's; failedReason and stacktrace keep the
# failures' even though the job completed. A failure that will be retried
# writes no `failed` event: with a backoff it writes `delayed` (its `delay`
# field is the instant the job is due, not a duration); `failed` (and
# `retries-exhausted`) come only when the job fails for good.
if python3 - "$work/export.json" "$SRC/tools/bullmq-export/node_modules/bullmq/package.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d) == ["format", "version", "bullmq", "exported_at", "queues"], list(d)
assert d["format"] == "rehearse-bullmq-export" and d["version"] == 1, d
assert d["bullmq"] == json.load(open(sys.argv[2]))["version"], d["bullmq"]
assert isinstance(d["exported_at"], int)
assert [q["name"] for q in d["queues"]] == ["partner-sync"], d["queues"]
q = d["queues"][0]
assert q["prefix"] == "bull" and len(q["jobs"]) == 1, q
j = q["jobs"][0]
assert list(j) == ["id", "name", "data", "opts", "timestamp", "processedOn", "finishedOn",
                   "attemptsMade", "failedReason", "stacktrace", "returnvalue", "state"], list(j)
assert (j["id"], j["name"], j["data"], j["state"]) == ("1", "sync", {}, "completed"), j
assert j["opts"] == {"attempts": 5, "backoff": {"type": "fixed", "delay": 2000}}, j["opts"]
assert j["attemptsMade"] == 4, j["attemptsMade"]
assert j["returnvalue"] == {"ok": True}, j["returnvalue"]
assert j["failedReason"] == "HTTP 429 Too Many Requests", j["failedReason"]
assert len(j["stacktrace"]) == 3 and all("HTTP 429" in s for s in j["stacktrace"]), j["stacktrace"]
assert j["timestamp"] <= j["processedOn"] <= j["finishedOn"], j
PY
then ok; else bad "export: the queue and its job"; fi
if python3 - "$work/export.json" <<'PY'
import json, sys
q = json.load(open(sys.argv[1]))["queues"][0]
j, ev = q["jobs"][0], q["events"]
for e in ev:
    assert list(e) == ["id", "at", "event", "jobId", "fields"], e
    assert e["at"] == int(e["id"].split("-")[0]), e
    assert all(isinstance(v, str) for v in e["fields"].values()), e
ids = [tuple(map(int, e["id"].split("-"))) for e in ev]
assert ids == sorted(ids), "not in stream order"
names = [e["event"] for e in ev if e["jobId"] == "1"]
assert names == ["added", "waiting", "active", "delayed", "waiting", "active", "delayed",
                 "waiting", "active", "delayed", "waiting", "active", "completed"], names
assert not any(e["event"] in ("failed", "retries-exhausted") for e in ev), "a failed event"
active = [e for e in ev if e["event"] == "active"]
delayed = [e for e in ev if e["event"] == "delayed"]
assert all(e["fields"] == {"prev": "waiting"} for e in active), active
completed = [e for e in ev if e["event"] == "completed"][0]
assert json.loads(completed["fields"]["returnvalue"]) == {"ok": True}, completed
# Stream ids are Redis's clock, job stamps the worker's: the same machine here.
assert abs(j["processedOn"] - active[-1]["at"]) <= 50, (j["processedOn"], active[-1])
assert abs(j["finishedOn"] - completed["at"]) <= 50, (j["finishedOn"], completed)
for i, e in enumerate(delayed):
    due = int(e["fields"]["delay"])
    assert 1990 <= due - e["at"] <= 2010, ("delay is the due instant", e)
    # each attempt works 100 ms; the retry starts once due, give or take the load
    assert 90 <= e["at"] - active[i]["at"] <= 1000, (active[i], e)
    assert -5 <= active[i + 1]["at"] - due <= 1000, ("retry early or late", e, active[i + 1])
    # the 429 window: [timestamp, timestamp + 5000 ms)
    assert e["at"] - j["timestamp"] <= 5000 + 50, ("a failure after the window", e)
assert completed["at"] - j["timestamp"] >= 5000, ("a success inside the window", completed)
PY
then ok; else bad "export: the event stream"; fi

# ---- the import: the incident as a scenario, replayed ----
expect_rc import 0 import --bullmq "$work/export.json" --out "$work/incident.json"
expect_rc replay 0 run "$work/incident.json"
if python3 - "$work/incident.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
jobs = d["expect"]["jobs"]
assert len(jobs) == 1, list(jobs)
slots = next(iter(jobs.values()))["slots"]
assert len(slots) == 1 and slots[0]["attempts"] == 4, slots
PY
then ok; else bad "imported scenario: one slot of 4 attempts"; fi

# ---- a job without opts: exit 2, the file and the pointer named ----
python3 - "$work/export.json" "$work/no-opts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["queues"][0]["jobs"][0]["opts"]
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
expect_rc no-opts 2 import --bullmq "$work/no-opts.json" --out "$work/never.json"
contains no-opts-file "$work/err" "no-opts.json"
contains no-opts-pointer "$work/err" "/queues/0/jobs/0/opts"
if [ ! -e "$work/never.json" ]; then ok; else bad "a bad export wrote a file"; fi

finish "cli bullmq real"
