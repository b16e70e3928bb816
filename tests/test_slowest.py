"""scripts/slowest.py, which .ci/run calls at its end: the slowest tests of a pass's JUnit XML, with their outcome; a
pass that wrote no report is said in one line, an unreadable report is an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slowest.py"
REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" tests="4">
<testcase classname="tests.test_a" name="test_quick" time="0.5" />
<testcase classname="tests.test_b" name="test_slow[x]" time="95.25"><failure message="boom">trace</failure></testcase>
<testcase classname="tests.test_a" name="test_middle" time="12.0"><skipped message="no redis" /></testcase>
<testcase classname="tests.test_c" name="test_fixture_heavy" time="130.0" />
</testsuite></testsuites>"""


def slowest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_the_slowest_come_first_with_their_outcome(tmp_path) -> None:
    report = tmp_path / "sqlite.xml"
    report.write_text(REPORT)
    done = slowest(str(report), "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "-- sqlite.xml: 4 tests, 238 s of test time; the 3 slowest:",
        "   130.0 s  tests.test_c::test_fixture_heavy",
        "    95.2 s  tests.test_b::test_slow[x]  (failed)",
        "    12.0 s  tests.test_a::test_middle  (skipped)",
    ]


def test_a_missing_report_is_one_line_and_a_broken_one_an_error(tmp_path) -> None:
    missing = slowest(str(tmp_path / "postgres.xml"))
    assert missing.returncode == 0 and missing.stdout.startswith("-- postgres.xml: no report")
    broken = tmp_path / "sqlite.xml"
    broken.write_text(REPORT[:200])  # a pass killed while pytest wrote it
    done = slowest(str(broken))
    assert done.returncode == 1 and "unreadable junit report" in done.stderr and not done.stdout
