"""The fault suite's figures: each scenario of tests/faults.py on a small deployment of its own
(redis-server, `manage.py work` per queue group, `manage.py scheduler`, scripted judge, smoke backends).

    .venv/bin/python bench/faults.py [scenario ...]     # default: all, the no-fault baseline first

Prints per scenario: units, lost, duplicated, failed (with / without a reason), time to finish, and the
recovery time (fault -> submission finished) beside the baseline's time measured in the same run.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import faults  # noqa: E402


def main(names: list[str]) -> int:
    names = names or list(faults.SCENARIOS)
    unknown = [n for n in names if n not in faults.SCENARIOS]
    if unknown:
        print(f"unknown scenario(s) {unknown}; choose from {list(faults.SCENARIOS)}", file=sys.stderr)
        return 2
    outcomes, started = [], time.monotonic()
    for number, name in enumerate(names, start=1):
        print(f"[{number}/{len(names)}] {name} …", flush=True)
        with tempfile.TemporaryDirectory(prefix=f"faults-{name}-") as tmp:
            outcome = faults.SCENARIOS[name](Path(tmp))
        outcomes.append(outcome)
        print(
            f"      {outcome.status}: {outcome.seconds:.1f} s, lost {outcome.lost}, duplicated {outcome.duplicated}; {'; '.join(outcome.notes)}",
            flush=True,
        )
    base = next((o.seconds for o in outcomes if o.fault_at is None and o.scenario.startswith("no fault")), None)
    print(
        f"\n{'scenario':<48} {'status':<10} {'renders':>7} {'judg.':>5} {'lost':>4} {'dup.':>4} {'failed+why':>10} {'failed-why':>10} {'finish s':>8} {'recovery s':>10} {'vs base':>7}"
    )
    for o in outcomes:
        ratio = f"{o.seconds / base:.2f}x" if base else "—"
        recovery = f"{o.recovery:.1f}" if o.recovery is not None else "—"
        print(
            f"{o.scenario:<48} {o.status:<10} {o.renders:>7} {o.judgements:>5} {o.lost:>4} {o.duplicated:>4} {o.failed_with_reason:>10} {o.failed_without_reason:>10} {o.seconds:>8.1f} {recovery:>10} {ratio:>7}"
        )
    bad = [o for o in outcomes if o.status != "done" or o.lost or o.duplicated or o.failed_without_reason]
    print(
        f"\n{len(outcomes)} scenario(s) in {time.monotonic() - started:.0f} s: {sum(o.lost for o in outcomes)} unit(s) lost, "
        f"{sum(o.duplicated for o in outcomes)} duplicated, {len(bad)} scenario(s) not ending done-once"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
