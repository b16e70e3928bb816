"""Static files go out compressed where `make demo` and `make serve` serve them (issue 42): runserver with DEBUG on,
whitenoise reading the source folders (whitenoise.runserver_nostatic) and atelier/static_gzip.py gzipping as they
leave. Deployed, collectstatic's compressed copies do it (tests/test_deploy.py). A real runserver in a subprocess on a
throw-away SQLite file, as the Makefile starts it."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest

from tests.test_deploy import environment, fetch, free_port, serving

PLOTLY = "/static/vendor/plotly/plotly.min.js"


@pytest.fixture
def runserver(tmp_path: Path):
    port = free_port()
    demo = {"DEBUG": "true", "ATELIER_DEMO_JUDGE": "true", "ATELIER_SITE_URL": f"http://127.0.0.1:{port}"}
    env = environment(tmp_path, **demo)
    for production_only in ("ATELIER_BEHIND_TLS_PROXY", "STATIC_ROOT"):
        env.pop(production_only)
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    with serving(command, env, port, "/static/css/site.css") as server:
        yield port, server


def test_runserver_sends_static_files_gzipped_to_clients_that_accept_it(runserver):
    port, server = runserver
    assert server.poll() is None, server.stdout.read()
    status, headers, plain = fetch(port, PLOTLY)
    assert status == 200 and "Content-Encoding" not in headers and len(plain) > 1_000_000  # plotly.js whole, to anyone
    status, headers, packed = fetch(port, PLOTLY, **{"Accept-Encoding": "gzip, deflate, br"})
    assert status == 200 and headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in headers["Vary"]
    assert gzip.decompress(packed) == plain and len(packed) < len(plain) / 2
    status, _, body = fetch(port, PLOTLY, **{"Accept-Encoding": "gzip", "If-None-Match": headers["ETag"]})
    assert status == 304 and body == b""  # a browser's revalidation of what it holds is not sent again
    status, headers, _ = fetch(port, "/static/css/site.css", **{"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip" and headers["Content-Type"].startswith("text/css")
    status, headers, _ = fetch(port, "/no-such-page/", **{"Accept-Encoding": "gzip"})
    assert status == 404 and "Content-Encoding" not in headers  # pages are not compressed (BREACH)
