"""Third-party conformance: schemathesis (every check it has) against the live API with a team's token.

The server is a real HTTP server (pytest-django's live_server) on a database with the sample pack, one team, its
token, one submission and one endpoint, so the routes with path parameters have something to find. schemathesis
generates requests from /api/v1/openapi.json and checks each answer against the document (status declared, body
matching its schema, content type, headers), plus its stateful and negative-data checks; the test fails on any
failure it reports. Bounded: a fixed seed, a number of examples per operation and a time budget.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}
CONFIG = Path(__file__).with_name("schemathesis.toml")  # two refusals no schema can express, with the reasons
# A deeper run by hand: ATELIER_SCHEMATHESIS_EXAMPLES=100 ATELIER_SCHEMATHESIS_SEED=1 ATELIER_SCHEMATHESIS_BUDGET_S=600
EXAMPLES = int(os.environ.get("ATELIER_SCHEMATHESIS_EXAMPLES", "10"))  # per operation and phase
SEED = os.environ.get("ATELIER_SCHEMATHESIS_SEED", "20261129")
BUDGET_S = int(os.environ.get("ATELIER_SCHEMATHESIS_BUDGET_S", "40"))  # schemathesis's own time budget for the whole run


@pytest.fixture
def served_api(live_server, sample_pack, team, no_backends, settings):
    from evaluation.models import Submission
    from submissions.services import token_create
    from teams.models import Endpoint
    from teams.services import card_for

    settings.ATELIER_DAILY_SUBMISSIONS = 1000  # the cap is declared (429); a low one would make most uploads just that
    # schemathesis's authentication checks send wrong tokens on purpose: with the lockout's 20, every wrong token after
    # the 20th would get 429 (declared) and those checks would test only that
    settings.ATELIER_TOKEN_FAILURE_LIMIT = 1_000_000
    Submission.objects.create(team=team, pack=sample_pack, prompter="seeded", status="done")
    Endpoint.objects.create(team=team, name="seeded", base_url="https://prompter.example.org/v1", model="m")  # not resolvable here
    card_for(team=team, name="seeded")  # a prompter card, for the routes under /api/v1/prompters/{prompter_id}
    return live_server.url, token_create(team=team, name="schemathesis")[1]


def test_schemathesis_finds_nothing_wrong_with_the_api(served_api, tmp_path: Path):
    url, token = served_api
    report = tmp_path / "report.json"
    # read first: the server's first answer imports the site (7-10 s on a busy machine), and schemathesis gives its
    # schema 10 s to load
    with urllib.request.urlopen(f"{url}/api/v1/openapi.json", timeout=120) as response:
        paths = json.load(response)["paths"]
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run", f"{url}/api/v1/openapi.json"),
        *("--checks", "all", "--header", f"Authorization: Bearer {token}", "--seed", SEED),
        *("--max-examples", str(EXAMPLES), "--max-time", str(BUDGET_S), "--request-timeout", "30", "--workers", "1"),
        *("--report", "json", "--report-json-path", str(report), "--no-color", "--warnings", "off"),
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=BUDGET_S + 120)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(report.read_text())
    operations = {f"{method.upper()} {path}" for path, item in paths.items() for method in item if method in METHODS}
    cases = summary["test_cases"]
    tested = re.search(r"Tested: (\d+)", done.stdout)
    print(
        f"schemathesis: {tested and tested[1]} of {len(operations)} operations tested, {cases['generated']} test cases, {cases['with_failures']} with failures, {len(summary['errors'])} errors"
    )
    assert done.returncode == 0, done.stdout[-8000:]
    assert cases["with_failures"] == 0 and cases["errored"] == 0 and summary["errors"] == []
    # every operation the document names was exercised; the document itself may be left out, as the schema it read
    # (whether schemathesis exercises it varies with the document; tests/test_cli.py validates it either way)
    assert set(summary["valid_rates"]) >= operations - {"GET /api/v1/openapi.json"} and set(summary["valid_rates"]) <= operations
    assert tested and int(tested[1]) >= len(operations) - 1
