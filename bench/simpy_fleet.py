#!/usr/bin/python3
"""The benchmark fleet in SimPy 3: the peer that rehearse's speed is compared with.

usage: simpy_fleet.py EXPORT.json [--json]

EXPORT.json is written by fleet_export (bench/fleet_export.cpp) from the same
`fleet` block rehearse runs: per job its schedule as (first slot, period), its
policy as the core resolved it, and which of its runs failed in rehearse's
run, keyed (slot, retry?, attempt), with how long each held its worker (a
job with several calls may fail at any of them). SimPy replays those failures instead of
drawing its own, so the two runs face identical jobs and identical failures;
equal run and retry counts then mean both schedule, retry and give up alike.

SimPy runs NO real core: no state store, no journal, no delivery ledger, no
logs, no monitors. One SimPy process per job; a shared CoreQueue of the
queue's concurrency that grants waiting runs in the core's order
((ready_at, insertion), once per instant; simpy.Resource is first come,
first served and lets a retry start before or after the next slot where the
core would not); each run holds a worker for the calls' latency. Rules kept
(docs/semantics.md §2, §4): a slot exactly at start and at until runs; one
run per job at a time; retry n waits delay (fixed) or round(factor^(n-1) *
delay) (exponential) after the failed run ends; per_slot: each slot has its
own budget; per_episode: the count carries until a success, and a regular slot
coming due (or a regular run starting) drops the pending retry, also one
already waiting for a worker.

Prints runs, retries, events, CPU seconds, job executions/s, events/s and peak
resident memory; exits 1 when the counts differ from rehearse's.
Needs Debian's python3-simpy3 (python3-simpy is the 2.x API).
"""
import heapq
import json
import resource
import sys
import time

import simpy


def backoff_ms(policy, n):
    """The delay before retry n (n >= 1), as model/retry_policy.hpp computes it."""
    d = policy["delay_ms"]
    if policy["backoff"] == "fixed":
        return d
    x = (policy["factor"] ** (n - 1)) * d
    return int(x + 0.5)  # JavaScript Math.round for positive numbers


class CoreQueue:
    """The queue's concurrency as the core dispatches it (docs/scheduler.md,
    "The loop"): at each instant every run due has asked before any is
    granted, then free workers take runs in (ready_at, insertion) order."""

    def __init__(self, env, capacity):
        self.env = env
        self.free = capacity
        self.waiting = []  # heap of (key, event); keys are unique (one request per job)
        self.dispatch = None

    def request(self, key):
        event = self.env.event()
        heapq.heappush(self.waiting, (key, event))
        self._dispatch_later()
        return event

    def cancel(self, event):
        """Withdraws a request not granted yet."""
        self.waiting = [w for w in self.waiting if w[1] is not event]
        heapq.heapify(self.waiting)

    def release(self):
        self.free += 1
        self._dispatch_later()

    def _dispatch_later(self):
        if self.dispatch is None:  # once per instant, after its NORMAL events
            self.dispatch = simpy.events.Event(self.env)
            self.dispatch._ok, self.dispatch._value = True, None
            self.dispatch.callbacks.append(self._grant)
            self.env.schedule(self.dispatch, priority=2)

    def _grant(self, _event):
        self.dispatch = None
        while self.free and self.waiting:
            self.free -= 1
            heapq.heappop(self.waiting)[1].succeed()


class Stats:
    def __init__(self):
        self.runs = 0
        self.retries = 0


def job_process(env, job, index, queue, latency, span, stats):
    policy = job["policy"]
    per_episode = policy["budget"] == "per_episode"
    max_retries = policy["max_retries"]
    # (slot, retry?, attempt) -> how long the failed run held its worker
    failures = {(f[0], f[1], f[2]): f[3] for f in job["failures"]}
    period = job["period_ms"]
    next_slot = job["first_ms"]
    pending = []  # retries not yet due: [due, slot, attempt, count, queued_at]
    ready = []    # runs due, in order: [slot, retry?, attempt, count, due, queued_at]
    episode = 0   # per_episode: the job's retry count
    while True:
        # Everything due by now, in due order: a regular slot drops the
        # pending retries under per_episode.
        while True:
            retry_due = min((p[0] for p in pending), default=None)
            if next_slot <= span and next_slot <= env.now and (
                    retry_due is None or next_slot <= retry_due):
                if per_episode:
                    pending.clear()
                    ready[:] = [r for r in ready if not r[1]]
                ready.append([next_slot, False, 1, 0, next_slot, next_slot])
                next_slot += period
            elif retry_due is not None and retry_due <= env.now:
                p = min(pending)
                pending.remove(p)
                ready.append([p[1], True, p[2], p[3], p[0], p[4]])
            else:
                break
        if not ready:
            wake = min([next_slot] + [p[0] for p in pending])
            if wake > span:
                return
            yield env.timeout(wake - env.now)
            continue
        slot, is_retry, attempt, count, due, queued_at = ready.pop(0)
        # The core's queue order: (ready_at, insertion id). A regular slot is
        # queued at its own instant, the due jobs in job order; a retry when
        # the failure that scheduled it is committed.
        request = queue.request((due, queued_at, index))
        if per_episode and is_retry and next_slot <= span:
            # The core drops a per-episode retry still waiting for a worker
            # when the job's next regular slot comes due (the slot is queued
            # and supersedes it before the instant's workers are granted).
            yield request | env.timeout(next_slot - env.now)
            if not request.triggered:
                queue.cancel(request)
                continue
        else:
            yield request
        if env.now > span:
            return
        stats.runs += 1
        if is_retry:
            stats.retries += 1
        elif per_episode:
            pending.clear()
            ready[:] = [r for r in ready if not r[1]]
        held = failures.get((slot, 1 if is_retry else 0, attempt))
        failed = held is not None
        yield env.timeout(held if failed else latency * job["calls"])
        queue.release()
        if not failed:
            episode = 0
            continue
        n = (episode if per_episode else count) + 1
        if n <= max_retries:
            if per_episode:
                episode = n
            pending.append([env.now + backoff_ms(policy, n), slot, n + 1, n, env.now])


def run(export):
    env = simpy.Environment()
    queue = CoreQueue(env, export["concurrency"])
    stats = Stats()
    span = export["span_ms"]
    for index, job in enumerate(export["jobs"]):
        env.process(job_process(env, job, index, queue, export["latency_ms"], span, stats))
    events = 0
    cpu0 = time.process_time()
    while True:
        try:
            if env.peek() > span:
                break
            env.step()
        except simpy.core.EmptySchedule:
            break
        events += 1
    cpu = time.process_time() - cpu0
    return stats, events, cpu


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        export = json.load(f)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    stats, events, cpu = run(export)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ours = export["ours"]
    result = {
        "jobs": len(export["jobs"]),
        "runs": stats.runs,
        "retries": stats.retries,
        "events": events,
        "cpu_s": cpu,
        "job_exec_per_s": stats.runs / cpu if cpu > 0 else 0.0,
        "events_per_s": events / cpu if cpu > 0 else 0.0,
        "peak_rss_bytes": rss,
        "rss_growth_bytes": rss - rss_before,
        "ours_runs": ours["runs"],
        "ours_retries": ours["retries"],
        "counts_equal": stats.runs == ours["runs"] and stats.retries == ours["retries"],
    }
    if "--json" in sys.argv[2:]:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0 if result["counts_equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
