#!/usr/bin/env python3
"""The command synopsis and the exit codes have one source: docs/cli.md.

The README's "The command" block must list exactly the lines of docs/cli.md's
first code block, `rehearse --help` must name exactly the exit codes
docs/cli.md defines, and every `rehearse <cmd> --help` that prints an
exit-code line must not name a code docs/cli.md does not define. Prints what differs;
exit 1 when anything does.
"""
import re
import subprocess
import sys


def first_block(text, after=None):
    start = text.index(after) if after else 0
    m = re.search(r"```\n(.*?)```", text[start:], re.S)
    return [line.rstrip() for line in m.group(1).splitlines() if line.strip()]


def main():
    root, exe = sys.argv[1], sys.argv[2]
    cli = open(f"{root}/docs/cli.md").read()
    readme = open(f"{root}/README.md").read()
    problems = []
    want = first_block(cli)
    got = first_block(readme, "## The command")
    for line in want:
        if line not in got:
            problems.append(f"README lacks: {line}")
    for line in got:
        if line not in want:
            problems.append(f"README has what docs/cli.md does not: {line}")
    defined = {int(c) for c in re.findall(r"`([0-4])`", cli.split("| command |")[0])}
    # The top-level help names every code docs/cli.md defines.
    top = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    m = re.search(r"Exit codes[^:]*:(.*?)\n\n|Exit codes[^:]*:(.*)$", top, re.S)
    named = {int(c) for c in re.findall(r"\b([0-9])\b", (m.group(1) or m.group(2)) if m else "")}
    if named != defined:
        problems.append(f"rehearse --help names exit codes {sorted(named)}, "
                        f"docs/cli.md defines {sorted(defined)}")
    for cmd in ["run", "check", "validate", "tune", "status", "merge", "cron", "policy", "new"]:
        out = subprocess.run([exe, cmd, "--help"], capture_output=True, text=True).stdout
        for m in re.finditer(r"[Ee]xit codes?[^.]*", out.replace("\n", " ")):
            for code in re.findall(r"\b([0-9])\b", m.group(0)):
                if int(code) not in defined:
                    problems.append(f"rehearse {cmd} --help names exit code {code}, "
                                    f"which docs/cli.md does not define")
    for p in problems:
        print(p)
    print(f"cli synopsis: {len(want)} lines, exit codes {sorted(defined)}; "
          f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
