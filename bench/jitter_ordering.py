#!/usr/bin/env python3
"""The ordering of Brooker's jitter comparison, reproduced by the simulated fleet.

Marc Brooker's "Exponential Backoff and Jitter" (AWS Architecture Blog, 2015)
compares the four backoff shapes for clients contending for one resource:
without jitter the clients retry in lockstep and make the most calls and the
highest peaks; full and decorrelated jitter make the fewest. This runs
`rehearse tune SCENARIO --fleet` with one policy in the four shapes on
bench/scenarios/fleet-storm-1000.json (a thousand jobs, one provider with a
capacity, an outage) and checks the ordering, never absolute numbers:

  - no jitter makes the most calls and has the highest peak after the outage;
  - the fewest calls, and the lowest peak, are full's or decorrelated's
    (equal jitter is never the best of the four on either);
  - every shape recovers at least as many of the slots the outage hit as no
    jitter does.

Usage: jitter_ordering.py REHEARSE SCENARIO [--seeds N] [--threads T]
Prints the four rows and "jitter ordering: N held, 0 broken"; exit 1 when a
relation does not hold, 2 on bad usage or a failed command.
"""

import argparse
import json
import subprocess
import sys

SHAPES = ["none", "equal", "full", "decorrelated"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rehearse")
    p.add_argument("scenario")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--grid", default="attempts=8;delay=30s;backoff=exponential;"
                                     "jitter=none,equal,full,decorrelated")
    p.add_argument("--outages", default="10s")
    return p.parse_args()


def sweep(args):
    cmd = [args.rehearse, "tune", args.scenario, "--fleet", "--grid", args.grid,
           "--outages", args.outages, "--seeds", str(args.seeds), "--threads", str(args.threads),
           "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        print(f"jitter ordering: `{' '.join(cmd)}` exited {p.returncode}:\n{p.stderr[-2000:]}",
              file=sys.stderr)
        sys.exit(2)
    rows = {row["jitter"]: row for row in json.loads(p.stdout)["policies"]}
    missing = [s for s in SHAPES if s not in rows]
    if missing:
        print(f"jitter ordering: the sweep has no row for {missing}", file=sys.stderr)
        sys.exit(2)
    return rows


def relations(rows):
    """(description, held) of every relation the benchmark checks."""
    calls = {s: rows[s]["calls"] for s in SHAPES}
    peak = {s: rows[s]["peak_after_per_minute"] for s in SHAPES}
    recovery = {s: rows[s]["recovery"] for s in SHAPES}
    out = []
    for s in SHAPES[1:]:
        out.append((f"calls: none {calls['none']:.1f} > {s} {calls[s]:.1f}",
                    calls["none"] > calls[s]))
        out.append((f"peak after the outage: none {peak['none']:.1f} > {s} {peak[s]:.1f}",
                    peak["none"] > peak[s]))
        out.append((f"recovery: {s} {recovery[s]:.3f} >= none {recovery['none']:.3f}",
                    recovery[s] >= recovery["none"]))
    fewest = min(SHAPES, key=lambda s: (calls[s], SHAPES.index(s)))
    lowest = min(SHAPES, key=lambda s: (peak[s], SHAPES.index(s)))
    out.append((f"the fewest calls: {fewest} ({calls[fewest]:.1f}), one of full and decorrelated",
                fewest in ("full", "decorrelated")))
    out.append((f"the lowest peak: {lowest} ({peak[lowest]:.1f}), one of full and decorrelated",
                lowest in ("full", "decorrelated")))
    return out


def main():
    args = parse_args()
    if args.seeds < 1:
        print("jitter ordering: --seeds must be at least 1", file=sys.stderr)
        return 2
    rows = sweep(args)
    print(f"{'jitter':<13}{'calls':>10}{'ampl.':>8}{'peak after':>12}{'recovery':>10}"
          f"{'metastable':>12}")
    for s in SHAPES:
        r = rows[s]
        ampl = r["work_amplification"]
        print(f"{s:<13}{r['calls']:>10.1f}{(ampl if ampl is not None else float('nan')):>8.2f}"
              f"{r['peak_after_per_minute']:>12.1f}{r['recovery']:>10.3f}"
              f"{r['metastable_share']:>12.2f}")
    checked = relations(rows)
    broken = [text for text, held in checked if not held]
    for text, held in checked:
        print(f"{'ok  ' if held else 'FAIL'} {text}")
    print(f"jitter ordering: {len(checked) - len(broken)} held, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
