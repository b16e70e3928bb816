"""Issue 32 in a real browser at 1400 and 390 px: a filtered board, a prompter's page with its chart, and the state
of the art over time, each without a console error, a failed request or a page wider than the window."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from teams.models import Prompter
from tests.browser import check_page, network_browser
from tests.test_board_stats import JUDGE
from tests.test_prompter_cards import carded_board  # noqa: F401 (the fixture)

pytestmark = pytest.mark.sqlite_pass(
    reason="it checks how the pages render in a browser; their queries (the JSON filters included) are tested on both databases in tests/test_prompter_cards.py"
)

WIDTHS = (1400, 390)


def test_a_filtered_board_a_prompter_page_and_the_state_of_the_art_read_at_both_widths(live_server, carded_board) -> None:  # noqa: F811
    pack, made = carded_board
    board, judge = f"{pack.pk}:{pack.revision}", f"{JUDGE['judge_id']}|{JUDGE['judge_version']}"
    card = Prompter.objects.get(name="Lantern")
    pages = {
        "filtered board": "/?" + urlencode({"board": board, "kind": "mllm", "params_max": "10B"}),
        "prompter page": f"/prompters/{card.pk}/",
        "state of the art": "/sota/?" + urlencode({"board": board, "judge": judge}),
    }
    problems = []
    with network_browser(live_server.url) as browser:
        for name, path in pages.items():
            for width in WIDTHS:
                _, found = check_page(browser, path, width)
                problems += [f"{name} at {width} px: {p}" for p in found]
                charted = browser.driver.execute_script("return document.querySelectorAll('.chart svg.main-svg').length")
                rows = browser.driver.execute_script("return document.querySelectorAll('main table tbody tr').length")
                if name != "filtered board" and not charted:
                    problems.append(f"{name} at {width} px: no chart drawn")
                if not rows:
                    problems.append(f"{name} at {width} px: no table rows")
                browser.shot(f"cards-{name.replace(' ', '-')}-{width}")
            if name == "filtered board":
                shown = browser.driver.execute_script(
                    "return [...document.querySelectorAll('#board-table tbody a[href^=\"/submissions/\"]')].map(a => a.textContent)"
                )
                assert shown == ["Lantern"], shown
    assert problems == [], "\n".join(problems)
