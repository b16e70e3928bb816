"""Whose address the token limiter and django-axes count: ipware reads X-Forwarded-For, trusting ATELIER_PROXY_COUNT
proxies (AXES_IPWARE_PROXY_COUNT) and nothing a client wrote to the left of them."""

from __future__ import annotations

import pytest
from axes.helpers import get_client_ip_address
from django.test import RequestFactory

from teams.ratelimit import client_address


def request(forwarded: str | None = None, remote: str = "10.0.0.9"):
    headers = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/api/v1/submissions/1", **headers)


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, None, "10.0.0.9"),
        (0, "203.0.113.5", "10.0.0.9"),  # no proxy in front: the header is the client's own, ignored
        (1, "198.51.100.7", "198.51.100.7"),  # the address nginx saw
        (1, "203.0.113.5, 198.51.100.7", "198.51.100.7"),  # a forged entry stands left of nginx's: never read
        (1, "unknown, 198.51.100.7", "198.51.100.7"),
        (1, "198.51.100.7:4711", "198.51.100.7"),
        (2, "203.0.113.5, 198.51.100.7, 10.0.0.2", "198.51.100.7"),  # the outer proxy's word, after the inner one's
        (2, "198.51.100.7", "10.0.0.9"),  # too short to hold the trusted proxies: REMOTE_ADDR
        (1, "", "10.0.0.9"),
        (1, "not-an-address", "10.0.0.9"),
    ],
)
def test_client_address_trusts_only_the_configured_proxies(settings, proxies, forwarded, expected):
    settings.AXES_IPWARE_PROXY_COUNT = proxies
    assert client_address(request(forwarded)) == expected


def test_axes_asks_the_same_client_address(settings):
    settings.AXES_IPWARE_PROXY_COUNT = 1
    assert get_client_ip_address(request("203.0.113.5, 198.51.100.7")) == "198.51.100.7"


def test_a_forged_forwarded_for_does_not_escape_the_token_lockout(client, db, settings):
    settings.AXES_IPWARE_PROXY_COUNT, settings.ATELIER_TOKEN_FAILURE_LIMIT = 1, 3
    for n in range(3):
        forged = {"HTTP_X_FORWARDED_FOR": f"203.0.113.{n}, 198.51.100.7", "HTTP_AUTHORIZATION": "Bearer atl_wrong"}
        assert client.get("/api/v1/submissions/1", **forged).status_code == 401
    wrong = {"HTTP_AUTHORIZATION": "Bearer atl_wrong"}
    assert client.get("/api/v1/submissions/1", HTTP_X_FORWARDED_FOR="203.0.113.99, 198.51.100.7", **wrong).status_code == 429
    assert client.get("/api/v1/submissions/1", HTTP_X_FORWARDED_FOR="198.51.100.8", **wrong).status_code == 401
