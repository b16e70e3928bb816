"""Print the slowest tests of a pytest --junitxml report: python3 scripts/slowest.py REPORT.xml [COUNT].

Standard library only (.ci/run calls it at the end of a run, failed or not, even one whose set-up never built the
venv). A test's seconds are pytest's junit "time": its set-up, call and tear-down together, so a module fixture built by
the first test of a file (the nginx site, a deployment) counts in that test. A missing report (the pass never ran, or
was stopped before pytest wrote it) is said in one line, not an error; an unreadable one is an error.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

DEFAULT_COUNT = 15


def outcome(case: ET.Element) -> str:
    """ "failed", "error", "skipped" or "" (passed), from the child element pytest writes."""
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return "failed" if tag == "failure" else tag
    return ""


def slowest(report: Path, count: int) -> list[str]:
    root = ET.parse(report).getroot()  # <testsuites><testsuite>…</testsuite></testsuites>
    cases = [(float(c.get("time") or 0), f"{c.get('classname', '')}::{c.get('name', '')}", outcome(c)) for c in root.iter("testcase")]
    total = sum(seconds for seconds, _, _ in cases)
    lines = [f"-- {report.name}: {len(cases)} tests, {total:.0f} s of test time; the {min(count, len(cases))} slowest:"]
    for seconds, name, result in sorted(cases, key=lambda c: -c[0])[:count]:
        lines.append(f"{seconds:8.1f} s  {name}" + (f"  ({result})" if result else ""))
    return lines


def main(argv: list[str]) -> int:
    if not 2 <= len(argv) <= 3 or (len(argv) == 3 and not argv[2].isdigit()):
        print("usage: slowest.py REPORT.xml [COUNT]", file=sys.stderr)
        return 2
    report, count = Path(argv[1]), int(argv[2]) if len(argv) == 3 else DEFAULT_COUNT
    if not report.exists():
        print(f"-- {report.name}: no report (the pass did not run, or stopped before pytest wrote it)")
        return 0
    try:
        lines = slowest(report, count)
    except (ET.ParseError, ValueError) as error:
        print(f"-- {report}: unreadable junit report: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
