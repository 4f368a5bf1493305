#!/usr/bin/env python3
"""Checks that an HTML page from rehearse is well-formed and self-contained.

usage: check_report_html.py FILE.html [--svg] [--expect-lanes N] [--expect KIND=N ...]

- the page parses with html.parser and every element is closed in order
  (void elements excepted);
- nothing is fetched: no src=/href= to a URL, no <link>, no @import, no url(http;
- with --svg: the <svg id="timeline"> element parses as XML; its lanes
  (g.lane) and marks (g with data-mark) are counted and compared with
  --expect-lanes and --expect KIND=N, and with the svg's own data-lanes /
  data-marks attributes.
Prints "report html: ok ..." and exits 0, or names what is wrong and exits 1.
"""
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "wbr", "source"}
SVG_NS = "{http://www.w3.org/2000/svg}"


class Balance(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.urls = [], [], []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href") and value and re.match(r"^[a-z]+:", value):
                self.urls.append(f"{tag} {name}={value}")
        if tag == "link":
            self.urls.append("a <link> element")
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"line {self.getpos()[0]}: </{tag}> closes "
                               f"{self.stack[-1][0] if self.stack else 'nothing'}")
            return
        self.stack.pop()


def main() -> int:
    args = sys.argv[1:]
    path = args.pop(0)
    want_svg = "--svg" in args
    lanes_wanted, kinds_wanted = None, {}
    for i, a in enumerate(args):
        if a == "--expect-lanes":
            lanes_wanted = int(args[i + 1])
        if a == "--expect":
            k, n = args[i + 1].split("=")
            kinds_wanted[k] = int(n)
    text = open(path, encoding="utf-8").read()
    problems = []
    p = Balance()
    p.feed(text)
    p.close()
    problems += p.errors
    problems += [f"unclosed <{t}> from line {pos[0]}" for t, pos in p.stack]
    problems += [f"external reference: {u}" for u in p.urls]
    if re.search(r"@import|url\(\s*['\"]?https?:", text):
        problems.append("CSS fetches something")
    summary = f"{len(text)} bytes"
    if want_svg:
        m = re.search(r"<svg .*?</svg>", text, re.S)
        if not m:
            problems.append("no <svg> element")
        else:
            try:
                svg = ET.fromstring(m.group(0))
            except ET.ParseError as e:
                print(f"report html: svg is not well-formed XML: {e}")
                return 1
            lanes = [g for g in svg.iter(SVG_NS + "g") if "lane" in g.get("class", "").split()]
            marks = [g for g in svg.iter(SVG_NS + "g") if g.get("data-mark")]
            kinds = {}
            for g in marks:
                kinds[g.get("data-mark")] = kinds.get(g.get("data-mark"), 0) + 1
            if str(len(lanes)) != svg.get("data-lanes"):
                problems.append(f"{len(lanes)} lanes drawn, data-lanes says {svg.get('data-lanes')}")
            if str(len(marks)) != svg.get("data-marks"):
                problems.append(f"{len(marks)} marks drawn, data-marks says {svg.get('data-marks')}")
            if lanes_wanted is not None and len(lanes) != lanes_wanted:
                problems.append(f"{len(lanes)} lanes, expected {lanes_wanted}")
            for k, n in kinds_wanted.items():
                if kinds.get(k, 0) != n:
                    problems.append(f"{kinds.get(k, 0)} {k} marks, expected {n}")
            summary += f", {len(lanes)} lanes, {len(marks)} marks {sorted(kinds.items())}"
    if problems:
        for pr in problems:
            print(f"report html: {path}: {pr}")
        return 1
    print(f"report html: ok {path}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
