#!/usr/bin/env python3
"""Writes a fleet scenario for the HTML report's size and readability checks.

usage: make_fleet_scenario.py JOBS DAYS OUT.json [HOURLY_EVERY]

JOBS group jobs (every HOURLY_EVERY-th hourly, default 4; the rest daily) over DAYS days, with a 5 h quota outage on day 2,
a network blip and a restart on day 4 (when the run lasts that long). The
scenario has no expectations beyond "no invariant fires": it is a load for the
report, not a behaviour test.
"""
import json
import sys


def main() -> int:
    jobs, days, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    hourly_every = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    start = "2026-12-01T00:00:00Z"
    until = f"2026-12-{1 + days:02d}T00:00:00Z"
    spec = []
    for i in range(jobs):
        hourly = i % hourly_every == 0
        spec.append({
            "id": f"job-{i:04d}",
            "kind": "group",
            "schedule": f"{i % 60} * * * *" if hourly else f"{i % 60} {(i * 7) % 24} * * *",
            "retry_policy": {"attempts": 3, "backoff": {"type": "exponential", "delay": "5m"}},
            "tasks": [{"id": "work", "produces": "summary"}],
            "targets": ["team"],
        })
    faults = [{"at": "2026-12-02T09:00:00Z", "for": "5h", "kind": "quota_exhausted"}]
    if days >= 4:
        faults.append({"at": "2026-12-04T15:00:00Z", "for": "40m", "kind": "network_errors",
                       "service": "model-api"})
        faults.append({"at": "2026-12-04T20:00:00Z", "kind": "restart", "down_for": "10m"})
    doc = {
        "format": 1,
        "scenario": f"fleet-{jobs}-jobs-{days}-days",
        "description": "generated load for the HTML report (tests/cli/make_fleet_scenario.py)",
        "start": start,
        "until": until,
        "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
        "jobs": spec,
        "faults": faults,
        "expect": {"violations": []},
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
