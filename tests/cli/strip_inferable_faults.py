#!/usr/bin/env python3
"""A bundled scenario as the base an incident's log is imported into.

Removes what `rehearse import --log` must find again on its own: the faults
of the services of the user's own (`http_errors`, `timeouts`,
`network_errors`, `quota_exhausted` on a service that is not built in and
that a call job calls), which the worker's `call_failed` lines witness, and the `expect` block,
which the import writes from what the log observed. Every other fault stays:
a log line cannot show a damaged file or a stepped clock (docs/import.md).
Prints the number of faults removed.

usage: strip_inferable_faults.py SCENARIO OUT
"""
import json
import sys

BUILT_IN = {"model-api", "orchestrator", "brokerage", "messenger"}
INFERABLE = {"http_errors", "timeouts", "network_errors", "quota_exhausted"}


def inferable(fault, called):
    service = fault.get("service", "model-api")
    return fault.get("kind") in INFERABLE and service not in BUILT_IN and service in called


def main():
    scenario = json.load(open(sys.argv[1]))
    faults = scenario.get("faults", [])
    called = {c.get("service") for j in scenario.get("jobs", []) for c in j.get("calls", [])}
    kept = [f for f in faults if not inferable(f, called)]
    scenario["faults"] = kept
    scenario.pop("expect", None)
    with open(sys.argv[2], "w") as out:
        json.dump(scenario, out, indent=2)
    print(len(faults) - len(kept))


if __name__ == "__main__":
    main()
