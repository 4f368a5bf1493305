#!/usr/bin/env python3
"""The mutant zoo's kill matrix (docs/mutants.md).

For every mutant of tests/mutants/mutants.json, runs its `rehearse` binary
(built by the `mutants` preset) on the bundled scenarios
(`rehearse run DIR --json --once`) and, with --seeds K > 0 and a binary that
has the `check` command, on a bounded swarm (`rehearse check DIR --seeds K
--json`): for the mutants the bundled scenarios do not kill, two seeds at a
time up to the first chunk that kills, or for every mutant and every seed
with --swarm-all. Prints a matrix mutant x invariant and fails when

  - a mutant is killed by no invariant monitor (a `violations` entry the
    production core does not show on the same scenario): a mutant caught only
    by an expectation count (`expect_failures`), by a core assertion or by
    nothing survives, because the swarm has no expectations to compare with;
    a mutant the table marks `not_yet_killable` (with its reason) is reported
    and does not fail the run;
  - the production `rehearse` does not pass the same scenarios, or any
    production file carries a mutant's marker, or a mutant binary lacks its
    own marker (it would not be the mutant).

Exit 0 when every unmarked mutant is killed, 1 otherwise, 2 on bad usage.
"""

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import threading

MARKER = b"REHEARSE_MUTANT="
RUN_TIMEOUT_S = 900
# Seeds per `check` call of a mutant's swarm when it stops at the first kill.
SWARM_CHUNK = 2


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", required=True, help="tests/mutants/mutants.json")
    p.add_argument("--bin-dir", required=True, help="<build>/tests/mutants/bin")
    p.add_argument("--rehearse", required=True, help="the production rehearse of the same build")
    p.add_argument("--production-file", action="append", default=[],
                   help="another production file that must carry no mutant marker")
    p.add_argument("--scenarios", required=True, help="the bundled scenarios' directory")
    p.add_argument("--seeds", type=int, default=0, help="swarm seeds per scenario (0: none)")
    p.add_argument("--swarm-all", action="store_true",
                   help="run the whole swarm for every mutant (default: only for those the "
                        "bundled scenarios do not kill, up to the first seeds that kill, which "
                        "is all a verdict needs)")
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--first-kill", action="store_true",
                   help="judge each mutant first on the bundled scenarios its table entry lists "
                        "as `killed_on` and stop there when one of them kills it; a mutant they "
                        "do not kill (or without the key) gets the whole matrix (CI's slice)")
    p.add_argument("--write-killed-on", action="store_true",
                   help="rewrite the table's `killed_on` of every mutant run with the bundled "
                        "scenarios that killed it (the first two by name), or else the swarm case "
                        "that did first (FILE#seed=N)")
    p.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    p.add_argument("--jobs", type=int, default=2, help="mutants run side by side")
    p.add_argument("--json-out", help="also write the matrix as JSON here")
    p.add_argument("--markdown", action="store_true", help="print the matrix as a Markdown table")
    return p.parse_args()


def load_table(path, only):
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    mutants = table["mutants"]
    names = [m["name"] for m in mutants]
    if len(set(names)) != len(names):
        sys.exit(f"{path}: a mutant name appears twice")
    if only:
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            print(f"kill_matrix: unknown mutant(s) in --only: {', '.join(unknown)}", file=sys.stderr)
            sys.exit(2)
        mutants = [m for m in mutants if m["name"] in wanted]
    return mutants


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {RUN_TIMEOUT_S} s: {' '.join(cmd)}"
    return p, ""


def scenario_rows(binary, scenarios):
    """{scenario: {violations, expect_failures, outcome}} of `run --json --once`
    over a directory or a list of files."""
    paths = scenarios if isinstance(scenarios, list) else [scenarios]
    p, err = run([binary, "run", *paths, "--json", "--once"])
    if p is None:
        return None, err
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        tail = p.stderr.decode(errors="replace")[-400:]
        return None, f"exit {p.returncode}, no JSON report: {tail}"
    rows = {}
    for row in doc.get("scenarios", []):
        name = row.get("scenario") or row.get("path")
        rows[name] = {
            "file": os.path.basename(row.get("path", "")),
            "violations": sorted({v["invariant"] for v in row.get("violations", [])}),
            "expect_failures": len(row.get("expect_failures", [])),
            "outcome": row.get("outcome", row.get("result")),
        }
    return {"exit_code": p.returncode, "rows": rows}, ""


def has_check(binary):
    p, _ = run([binary, "check", "--help"])
    return p is not None and p.returncode == 0


def case_records(stdout):
    """Every object with a seed and a violations list, from JSON or JSON Lines."""
    docs = []
    try:
        docs.append(json.loads(stdout))
    except json.JSONDecodeError:
        for line in stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    docs.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    out = []

    def walk(node):
        if isinstance(node, dict):
            if "seed" in node and "violations" in node and "verdict" in node:
                out.append(node)
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for d in docs:
        walk(d)
    return out


def swarm_records(binary, scenarios, seeds, first_seed):
    cmd = [binary, "check", scenarios, "--seeds", str(seeds), "--first-seed", str(first_seed),
           "--json"]
    p, err = run(cmd)
    if p is None:
        return None, err
    records = case_records(p.stdout.decode(errors="replace"))
    if not records:
        tail = p.stderr.decode(errors="replace")[-400:]
        return None, f"exit {p.returncode}, no case records: {tail}"
    return records, ""


def swarm_failures(records):
    """{(scenario, seed): set of invariants} of the failed cases."""
    out = {}
    for r in records:
        if r.get("verdict") == "fail" and r.get("violations"):
            out[(r.get("scenario", "?"), int(r["seed"]))] = set(r["violations"])
    return out


def swarm_chunks(seeds, first_seed, chunk):
    """(first seed, count) of consecutive chunks covering the seed range."""
    return [(first_seed + i, min(chunk, seeds - i)) for i in range(0, seeds, chunk)]


def swarm(binary, scenarios, seeds, first_seed, baseline, stop_at_kill):
    """The mutant's swarm: invariants that fired beyond what the production
    core shows on the same (scenario, seed), and the position (1-based) in
    the seed range of the first seed where one did. With stop_at_kill the
    seeds run in chunks and the rest are skipped once a chunk kills: a
    verdict needs one kill, and most swarm kills come in the first seeds."""
    chunk = SWARM_CHUNK if stop_at_kill else seeds
    fired = {}
    first_fail = None
    first_case = None
    cases = errors = 0
    for start, count in swarm_chunks(seeds, first_seed, chunk):
        records, err = swarm_records(binary, scenarios, count, start)
        if records is None:
            return None, err
        cases += len(records)
        errors += sum(1 for r in records if r.get("verdict") == "error")
        for (scenario, seed), invariants in swarm_failures(records).items():
            new = invariants - baseline.get((scenario, seed), set())
            if not new:
                continue
            for inv in new:
                fired.setdefault(inv, set()).add(scenario)
            position = seed - first_seed + 1
            if first_fail is None or position < first_fail:
                first_fail = position
                first_case = (scenario, seed)
        if fired and stop_at_kill:
            break
    return {"cases": cases, "errors": errors, "first_fail": first_fail, "first_case": first_case,
            "fired": {k: sorted(v) for k, v in fired.items()}}, ""


def swarm_case(binary, scenarios, case, baseline_binary):
    """The invariants the mutant's swarm case `FILE#seed=N` shows beyond the
    production core's on the same case, or None with the error."""
    file, seed = case.split("#seed=")
    path = os.path.join(scenarios, file)
    found = []
    for b in (baseline_binary, binary):
        records, err = swarm_records(b, path, 1, int(seed))
        if records is None:
            return None, err
        found.append(set().union(*swarm_failures(records).values()) if records else set())
    return sorted(found[1] - found[0]), ""


def first_kill(m, binary, scenarios, baseline, args, result):
    """Judges the mutant on its `killed_on` slice: bundled scenario files, and
    swarm cases `FILE#seed=N`. True when one of them killed it."""
    files = [os.path.join(scenarios, f) for f in m["killed_on"] if "#seed=" not in f]
    if files:
        rows, _ = scenario_rows(binary, files)
        if rows is not None:
            judge_rows(result, rows, baseline)
            if result["fired"]:
                return True
    for case in (c for c in m["killed_on"] if "#seed=" in c):
        new, _ = swarm_case(binary, scenarios, case, args.rehearse)
        if new:
            file, seed = case.split("#seed=")
            result["swarm"] = {"cases": 1, "errors": 0, "first_fail": None,
                               "first_case": None, "fired": {inv: [file] for inv in new},
                               "killed_on": case}
            return True
    result.update(fired={}, expect_only=[], asserts=[], killing_files=[])
    return False


def markers_in(path):
    with open(path, "rb") as f:
        data = f.read()
    found = set()
    start = 0
    while True:
        i = data.find(MARKER, start)
        if i < 0:
            return found
        end = i + len(MARKER)
        while end < len(data) and (chr(data[end]).isalnum() or data[end] == ord("_")):
            end += 1
        found.add(data[i + len(MARKER):end].decode())
        start = end


def judge_mutant(m, bin_dir, scenarios, baseline, args, swarm_baseline):
    name = m["name"]
    binary = os.path.join(bin_dir, name, "rehearse")
    result = {"name": name, "problems": [], "fired": {}, "expect_only": [], "asserts": [],
              "swarm": None}
    if not os.path.exists(binary):
        result["problems"].append(f"binary missing: {binary}")
        return result
    if markers_in(binary) != {name}:
        result["problems"].append(f"{binary} does not carry exactly its own marker")
    if args.first_kill and m.get("killed_on") and first_kill(m, binary, scenarios, baseline, args,
                                                             result):
        return result
    rows, err = scenario_rows(binary, scenarios)
    if rows is None:
        result["problems"].append(f"scenarios: {err}")
        return result
    judge_rows(result, rows, baseline)
    # A mutant the bundled scenarios killed needs no swarm for its verdict;
    # --swarm-all measures it anyway (the matrix's swarm cells, seeds to the
    # first failing seed).
    if swarm_baseline is not None and (args.swarm_all or not result["fired"]):
        failed, err = swarm_baseline.get()
        if failed is None:
            result["problems"].append(err)
            return result
        s, err = swarm(binary, scenarios, args.seeds, args.first_seed, failed,
                       stop_at_kill=not args.swarm_all)
        if s is None:
            result["problems"].append(f"swarm: {err}")
        result["swarm"] = s
    return result


def judge_rows(result, rows, baseline):
    """Adds to `result` the invariants the mutant's rows show beyond the
    production core's on the same scenario."""
    for scenario, row in sorted(rows["rows"].items()):
        base = baseline["rows"].get(scenario, {"violations": []})
        new = [v for v in row["violations"] if v not in base["violations"]]
        for inv in new:
            result["fired"].setdefault(inv, []).append(scenario)
        if not new and row["expect_failures"] > 0:
            result["expect_only"].append(scenario)
        if row["outcome"] == "assertion_failed":
            result["asserts"].append(scenario)
        if new:
            result.setdefault("killing_files", []).append(row["file"])


def killers(r):
    names = set(r["fired"])
    if r["swarm"]:
        names |= set(r["swarm"]["fired"])
    return names


def verdict(m, r):
    if r["problems"]:
        return "ERROR"
    if killers(r):
        return "killed"
    return "marked" if m.get("not_yet_killable") else "SURVIVED"


def print_matrix(mutants, results, invariants, use_swarm, markdown):
    head = ["mutant"] + invariants + ["expect only", "assert", "verdict"]
    if use_swarm:
        head.insert(-1, "seeds to 1st fail")
    lines = []
    for m in mutants:
        r = results[m["name"]]
        cells = [m["name"]]
        for inv in invariants:
            n = len(r["fired"].get(inv, []))
            s = r["swarm"]["fired"].get(inv) if r["swarm"] else None
            cell = str(n) if n else ""
            if s:
                cell += ("+" if cell else "") + f"s{len(s)}"
            cells.append(cell or ".")
        cells.append(str(len(r["expect_only"])) if r["expect_only"] else ".")
        cells.append(str(len(r["asserts"])) if r["asserts"] else ".")
        if use_swarm:
            if r["swarm"] is None and r["fired"]:
                cells.append("0")  # killed on the bundled scenarios: no seed needed
            else:
                ff = r["swarm"]["first_fail"] if r["swarm"] else None
                cells.append(str(ff) if ff else "-")
        cells.append(verdict(m, r))
        lines.append(cells)
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for cells in lines:
            print("| " + " | ".join(cells) + " |")
        return
    widths = [max(len(row[i]) for row in [head] + lines) for i in range(len(head))]
    for row in [head] + lines:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def check_production(args):
    problems = []
    for path in [args.rehearse] + args.production_file:
        found = markers_in(path)
        if found:
            problems.append(f"production file {path} carries mutant marker(s) {sorted(found)}")
    baseline, err = scenario_rows(args.rehearse, args.scenarios)
    if baseline is None:
        problems.append(f"production rehearse: {err}")
    elif baseline["exit_code"] != 0:
        problems.append(f"production rehearse fails the bundled scenarios (exit "
                        f"{baseline['exit_code']}): the matrix needs a passing core")
    return baseline, problems


def summary(mutants, results, use_swarm):
    failures = []
    for m in mutants:
        r = results[m["name"]]
        v = verdict(m, r)
        for p in r["problems"]:
            failures.append(f"{m['name']}: {p}")
        if v == "SURVIVED":
            why = "only by expectation counts in " + ", ".join(r["expect_only"]) \
                if r["expect_only"] else "by nothing"
            if r["asserts"]:
                why += "; a core assertion fired in " + ", ".join(r["asserts"])
            failures.append(f"{m['name']}: survived every invariant (killed {why})")
        elif v == "marked":
            print(f"note: {m['name']} survives, marked not yet killable: {m['not_yet_killable']}")
        elif v == "killed" and m.get("not_yet_killable"):
            print(f"note: {m['name']} is marked not yet killable but was killed by "
                  f"{sorted(killers(r))}: drop the mark")
        if v == "killed":
            missing = sorted(set(m.get("killed_by", [])) - killers(r))
            if missing:
                print(f"note: {m['name']}: expected killer(s) {missing} did not fire "
                      f"(fired: {sorted(killers(r))})")
    if use_swarm:
        firsts = [results[m["name"]]["swarm"]["first_fail"] for m in mutants
                  if results[m["name"]]["swarm"] and results[m["name"]]["swarm"]["first_fail"]]
        if firsts:
            print(f"swarm: seeds to the first failing seed over {len(firsts)} mutant(s): "
                  f"median {statistics.median(firsts)}, worst {max(firsts)}")
    return failures


class SwarmBaseline:
    """The production core's failed swarm cases, every kill is judged against.
    Run once, when the first mutant needs its swarm: a matrix the bundled
    scenarios settle never pays for it."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.done = False
        self.failed = None
        self.error = ""

    def get(self):
        """(failed cases, "") or (None, the error)."""
        with self.lock:
            if not self.done:
                self.done = True
                a = self.args
                records, err = swarm_records(a.rehearse, a.scenarios, a.seeds, a.first_seed)
                if records is None:
                    self.error = f"production rehearse check: {err}"
                else:
                    self.failed = swarm_failures(records)
                    if self.failed:
                        print(f"note: the production core fails {len(self.failed)} swarm "
                              f"case(s) itself (first: {sorted(self.failed)[0]}); those cases' "
                              f"invariants are not counted as kills")
            return self.failed, self.error


def production_swarm(args, mutants):
    """(use the swarm?, the production core's swarm baseline)."""
    probe = os.path.join(args.bin_dir, mutants[0]["name"], "rehearse") if mutants else ""
    if args.seeds <= 0:
        return False, None
    if not probe or not has_check(probe):
        print("note: `rehearse check` is not in this build: scenarios only")
        return False, None
    return True, SwarmBaseline(args)


def judge_all(mutants, args, baseline, swarm_baseline):
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {m["name"]: pool.submit(judge_mutant, m, args.bin_dir, args.scenarios, baseline,
                                          args, swarm_baseline) for m in mutants}
        return {name: f.result() for name, f in futures.items()}


def scenario_files(scenarios):
    """{scenario name: its file name} of the bundled scenarios."""
    out = {}
    for f in sorted(os.listdir(scenarios)):
        if f.endswith(".json"):
            try:
                with open(os.path.join(scenarios, f), encoding="utf-8") as h:
                    out[json.load(h).get("scenario", f[:-5])] = f
            except (OSError, json.JSONDecodeError):
                pass
    return out


def killing_slice(r, files_by_name):
    """The first two bundled files that killed the mutant, or else the swarm
    case that did first (`FILE#seed=N`)."""
    files = sorted(set(r.get("killing_files", [])))[:2]
    if files:
        return files
    s = r.get("swarm") or {}
    if s.get("killed_on"):
        return [s["killed_on"]]
    if s.get("first_case"):
        scenario, seed = s["first_case"]
        return [f"{files_by_name.get(scenario, scenario + '.json')}#seed={seed}"]
    return []


def write_killed_on(path, results, scenarios):
    """Records, per killed mutant, the slice --first-kill tries first."""
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    files_by_name = scenario_files(scenarios)
    for m in table["mutants"]:
        r = results.get(m["name"])
        if r is None:
            continue
        found = killing_slice(r, files_by_name)
        if found:
            m["killed_on"] = found
        else:
            m.pop("killed_on", None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(table, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    args = parse_args()
    mutants = load_table(args.table, args.only)
    baseline, problems = check_production(args)
    if baseline is None:
        print("\n".join(problems), file=sys.stderr)
        return 1
    use_swarm, swarm_baseline = production_swarm(args, mutants)
    print(f"kill matrix: {len(mutants)} mutant(s) x {len(baseline['rows'])} bundled scenario(s)"
          + (f" + swarm of {args.seeds} seed(s) per scenario" if use_swarm else ""))
    results = judge_all(mutants, args, baseline, swarm_baseline if use_swarm else None)
    invariants = sorted(set().union(*[killers(r) for r in results.values()]) if results else set())
    print_matrix(mutants, results, invariants, use_swarm, args.markdown)
    print("cells: scenarios where the invariant fired (+sN: swarm scenarios); "
          "expect only: scenarios failed only by expectation counts")
    failures = problems + summary(mutants, results, use_swarm)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"seeds": args.seeds if use_swarm else 0, "results": results}, f, indent=1,
                      default=sorted)
    if args.write_killed_on:
        write_killed_on(args.table, results, args.scenarios)
    for line in failures:
        print(f"FAIL {line}")
    print(f"kill matrix: {sum(verdict(m, results[m['name']]) == 'killed' for m in mutants)} of "
          f"{len(mutants)} killed by an invariant; {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
