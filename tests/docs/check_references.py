#!/usr/bin/env python3
"""Goal: a reader of this repository alone can follow every reference.

Method: collect every `docs/...` path cited in code, tests, scripts and docs,
every relative Markdown link in docs/ and README.md, and every `§N` citation
of docs/semantics.md; each must resolve to a file (and anchor) in the tree.
Any mention of design files kept outside the repository fails too.
docs/README.md is the map of docs/: every other docs/*.md must be linked from
it, so a new page cannot go unlisted.
Prints 'references: N passed, M failed'.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
SOURCE_DIRS = ["model", "sim", "tests", "docs", "bench", "cmake", ".ci", "scenarios"]
TEXT_SUFFIXES = {".cpp", ".hpp", ".md", ".sh", ".py", ".json", ".txt", ".cmake", ".in", ""}
# Design notes kept beside the repository, never inside it (spelt in parts so
# this line does not cite them itself).
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", "shared/" + "design", "shared/" + "seeds",
                               "interfaces" + r"\.md", "architecture" + r"\.md"]))
CITED_PATH = re.compile(r"(?<![\w/])docs/[A-Za-z0-9_./-]+\.(?:md|json|png|sh)")
BARE_SEMANTICS = re.compile(r"(?<![/\w])semantics\.md")
SECTION = re.compile(r"docs/semantics\.md\s*§(\d+)")
MD_LINK = re.compile(r"\]\(([^)#\s]+)?(?:#([A-Za-z0-9_-]+))?\)")

passed, failures = 0, []


def files():
    yield root / "README.md"
    yield root / "CMakeLists.txt"
    for d in SOURCE_DIRS:
        for p in sorted((root / d).rglob("*")):
            # node_modules: a vector generator's installed packages (git-ignored).
            skipped = "corpus" in p.parts or "node_modules" in p.parts
            if p.is_file() and p.suffix in TEXT_SUFFIXES and not skipped:
                yield p


def anchors(md: pathlib.Path):
    text = md.read_text(encoding="utf-8")
    ids = set(re.findall(r'<a id="([^"]+)"', text))
    for heading in re.findall(r"^#+\s+(.*)$", text, flags=re.M):
        slug = re.sub(r"[^\w\s-]", "", heading.lower()).strip().replace(" ", "-")
        ids.add(slug)
    return ids


def check(ok, what):
    global passed
    if ok:
        passed += 1
    else:
        failures.append(what)


semantics = root / "docs" / "semantics.md"
semantic_ids = anchors(semantics) if semantics.exists() else set()
for path in files():
    rel = path.relative_to(root)
    if rel == pathlib.Path("tests/docs/check_references.py"):
        continue
    text = path.read_text(encoding="utf-8", errors="replace")
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{rel}:{n}"
        if OUTSIDE.search(line):
            check(False, f"{where}: cites a file outside the repository: {line.strip()}")
        for cited in CITED_PATH.findall(line):
            cited = cited.rstrip(".")
            check((root / cited).exists(), f"{where}: {cited} does not exist")
        if path.suffix != ".md" and BARE_SEMANTICS.search(line):
            check(False, f"{where}: cites semantics.md without its place (docs/semantics.md)")
        elif path.suffix == ".md" and BARE_SEMANTICS.search(line):
            check((path.parent / "semantics.md").exists() or semantics.exists(),
                  f"{where}: semantics.md does not exist")
        for section in SECTION.findall(line):
            check(f"s{section}" in semantic_ids, f"{where}: docs/semantics.md §{section} has no anchor s{section}")
        if path.suffix == ".md":
            for target, anchor in MD_LINK.findall(line):
                if target and re.match(r"^[a-z]+:", target):
                    continue  # an external address
                dest = (path.parent / target).resolve() if target else path
                exists = dest.exists()
                check(exists, f"{where}: link target {target} does not exist")
                if exists and anchor and dest.suffix == ".md":
                    check(anchor in anchors(dest), f"{where}: {target or dest.name}#{anchor} has no such anchor")

docs_map = root / "docs" / "README.md"
check(docs_map.exists(), "docs/README.md (the map of docs/) does not exist")
if docs_map.exists():
    mapped = set()
    for target, _anchor in MD_LINK.findall(docs_map.read_text(encoding="utf-8")):
        if target and not re.match(r"^[a-z]+:", target):
            mapped.add((docs_map.parent / target).resolve())
    for page in sorted((root / "docs").glob("*.md")):
        if page.name != "README.md":
            check(page.resolve() in mapped, f"docs/README.md: docs/{page.name} is not linked from the map")

for f in failures:
    print(f)
print(f"references: {passed} passed, {len(failures)} failed")
sys.exit(1 if failures or passed == 0 else 0)
