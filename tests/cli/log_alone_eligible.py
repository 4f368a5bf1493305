#!/usr/bin/env python3
"""Exit 0 when a scenario can be rebuilt from its worker's log alone
(docs/import.md, "Without --into"): only call jobs, no fault left once the
log's faults are removed, the default memory queue and one worker, no
service capacity (a rate limit is sized by nothing in the log), and no
policy that draws its delays at random (the log holds no draws).

usage: log_alone_eligible.py BASE_SCENARIO
"""
import json
import sys


def eligible(d):
    if "fleet" in d or not d.get("jobs"):
        return False
    if any(j.get("kind") != "call" for j in d["jobs"]):
        return False
    if d.get("faults"):
        return False
    queue = d.get("queue", {})
    if queue.get("store", "memory") != "memory" or queue.get("workers", 1) != 1:
        return False
    if any(isinstance(s, dict) and "capacity" in s for s in d.get("services", {}).values()):
        return False
    for j in d["jobs"]:
        policy = json.dumps(j.get("retry_policy"))
        if any(word in policy for word in ("jitter", "decorrelated", "sidekiq")):
            return False
    return True


sys.exit(0 if eligible(json.load(open(sys.argv[1]))) else 1)
