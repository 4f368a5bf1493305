#!/usr/bin/python3
"""Differential check: random small fleets, rehearse against the SimPy peer.

usage: simpy_differential.py FLEET_EXPORT [--cases N] [--first-case K]
                             [--keep DIR] [--json]

Case K derives a fleet from Python's random.Random(K) (Mersenne Twister,
seeded by the case number only): one to four workers, 20-300 jobs, a 20-120
minute span, every-minute to hourly schedules, one to three calls per run,
10-60% failures with a retryable status, and retry policies in the three
forms (auto, {max, backoff_sec}, BullMQ fixed or exponential). Each case is
written as a fleet file (bench/scenarios/fleet-100k.json with its `queue`
and `fleet` replaced), run once by FLEET_EXPORT (bench/fleet_export.cpp,
through REHEARSE_FLEET_FILE) and replayed by bench/simpy_fleet.py; the run
and retry counts must be equal.

The peer is an independent model of the scheduling and retry rules
(docs/performance.md, "The SimPy peer"); a difference is a disagreement
between it and the real core, to be read in both. Each failing case prints
the command that replays it; --keep DIR keeps every case's fleet file there.
Exits 1 when a case differs or no case ran, 2 on bad usage.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, "bench", "simpy_fleet.py")
BASE = os.path.join(ROOT, "bench", "scenarios", "fleet-100k.json")

CRONS = ["* * * * *", "*/2 * * * *", "*/5 * * * *", "*/10 * * * *", "*/15 * * * *",
         "7 * * * *"]
STATUSES = [429, 500, 503]


def random_policy(rng):
    form = rng.randrange(3)
    if form == 0:
        return "auto"
    if form == 1:
        policy = {"max": rng.randrange(4), "backoff_sec": rng.choice([5, 10, 30, 60, 120])}
        if policy["max"] == 0:
            policy["reason"] = "never retried, to test the budget's edge"
        return policy
    kind = rng.choice(["fixed", "exponential"])
    return {"attempts": rng.randrange(1, 6),
            "backoff": {"type": kind, "delay": rng.choice([2000, 5000, 30000, 60000])}}


def weighted(rng, items):
    """A non-empty random subset of items, each with a weight 1..5."""
    chosen = rng.sample(items, rng.randrange(1, len(items) + 1))
    return [dict(item, weight=rng.randrange(1, 6)) for item in chosen]


def case_fleet(case):
    """The case's scenario document, its job count and span."""
    rng = random.Random(case)
    with open(BASE, encoding="utf-8") as f:
        doc = json.load(f)
    doc["scenario"] = f"simpy-differential-{case}"
    doc["description"] = f"bench/simpy_differential.py case {case}"
    doc["queue"]["concurrency"] = rng.randrange(1, 5)
    doc["fleet"]["kinds"] = [{"weight": 1, "kind": "call", "calls": rng.randrange(1, 4)}]
    doc["fleet"]["schedules"] = weighted(rng, [{"cron": c} for c in CRONS])
    doc["fleet"]["policies"] = [{"weight": rng.randrange(1, 6), "retry_policy": random_policy(rng)}
                                for _ in range(rng.randrange(1, 4))]
    doc["fleet"]["failure_rates"] = [
        {"weight": rng.randrange(1, 6), "rate": rng.choice([0.1, 0.2, 0.3, 0.45, 0.6]),
         "status": rng.choice(STATUSES)} for _ in range(rng.randrange(1, 3))]
    return doc, rng.randrange(20, 301), rng.randrange(20, 121) * 60000


def run_case(fleet_export, case, workdir):
    """(equal?, detail, replay command) for one case."""
    doc, jobs, span_ms = case_fleet(case)
    fleet = os.path.join(workdir, f"case-{case}.json")
    export = os.path.join(workdir, f"case-{case}.export.json")
    with open(fleet, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    replay = (f"REHEARSE_FLEET_FILE={fleet} {fleet_export} {jobs} {span_ms} {export} && "
              f"{PEER} {export}")
    env = dict(os.environ, REHEARSE_FLEET_FILE=fleet)
    ours = subprocess.run([fleet_export, str(jobs), str(span_ms), export], env=env,
                          capture_output=True, text=True)
    if ours.returncode != 0:
        return False, "fleet_export failed: " + ours.stderr.strip(), replay
    peer = subprocess.run(["/usr/bin/python3", PEER, export, "--json"],
                          capture_output=True, text=True)
    if peer.returncode not in (0, 1):
        return False, "simpy_fleet.py failed: " + peer.stderr.strip(), replay
    r = json.loads(peer.stdout)
    detail = (f"{jobs} jobs, {span_ms // 60000} min, concurrency {doc['queue']['concurrency']}: "
              f"runs {r['ours_runs']} / SimPy {r['runs']}, "
              f"retries {r['ours_retries']} / SimPy {r['retries']}")
    return r["counts_equal"], detail, replay


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fleet_export")
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--first-case", type=int, default=1)
    ap.add_argument("--keep", help="keep each case's fleet and export files here")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.cases < 1:
        print("simpy_differential: --cases must be at least 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or scratch
        os.makedirs(workdir, exist_ok=True)
        results = []
        for case in range(args.first_case, args.first_case + args.cases):
            equal, detail, replay = run_case(os.path.abspath(args.fleet_export), case, workdir)
            results.append({"case": case, "equal": equal, "detail": detail, "replay": replay})
            print(f"case {case}: {'equal' if equal else 'DIFFERENT'}: {detail}", file=sys.stderr)
            if not equal:
                print(f"  replay: {replay}" + ("" if args.keep else " (add --keep DIR)"),
                      file=sys.stderr)
    differ = [r for r in results if not r["equal"]]
    if args.json:
        print(json.dumps({"cases": len(results), "different": len(differ), "results": results}))
    print(f"simpy differential: {len(results) - len(differ)} equal, {len(differ)} different "
          f"(cases {args.first_case}..{args.first_case + args.cases - 1})")
    return 1 if differ or not results else 0


if __name__ == "__main__":
    sys.exit(main())
