"""Signing up with an e-mail address in a real browser, at a phone's width and a desktop's: the address waits for its
link; the link's page asks, its button confirms; the settings page then names the address. No console error, failed
request or page wider than the window on the way."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from tests.browser import check_page, network_browser

pytestmark = pytest.mark.sqlite_pass(
    reason="it checks the pages and forms in a browser; the address rules and their queries are tested on both databases in tests/test_notifications.py"
)


def test_a_newcomer_signs_up_with_an_address_and_confirms_it_from_the_mailed_link(live_server, mailoutbox) -> None:
    with network_browser(live_server.url) as browser:
        problems = walk(browser, mailoutbox)
    assert get_user_model().objects.get(username="newcomer").email == "new@example.org"
    assert problems == [], "\n".join(problems)


def walk(browser, mailoutbox) -> list[str]:
    problems = []
    _, found = check_page(browser, "/accounts/signup/", 390)
    problems += [f"sign-up at 390 px: {p}" for p in found]
    for name, value in (("username", "newcomer"), ("email", "new@example.org"), ("password1", "a-long-pass-phrase-9")):
        browser.find(f"input[name={name}]").send_keys(value)
    browser.find("input[name=password2]").send_keys("a-long-pass-phrase-9")
    browser.click_and_wait("main form button[type=submit]")
    assert browser.driver.current_url.endswith("/teams/"), browser.driver.current_url
    assert "We sent a link to new@example.org" in browser.find("body").text
    assert get_user_model().objects.get(username="newcomer").email == ""  # not before the link is opened
    assert [m.to for m in mailoutbox] == [["new@example.org"]]
    link = re.search(r"(/account/notifications/address/\S+/)", mailoutbox[0].body).group(1)
    for width in (390, 1400):
        _, found = check_page(browser, link, width)
        problems += [f"the link's page at {width} px: {p}" for p in found]
        browser.shot(f"account-address-confirm-{width}")
    browser.click_and_wait("#address-form button")
    assert "now go to new@example.org" in browser.find("#address-confirmed").text
    for width in (1400, 390):
        _, found = check_page(browser, "/account/notifications/", width)
        problems += [f"settings at {width} px: {p}" for p in found]
        assert browser.find("#email-address").text == "new@example.org"
        browser.shot(f"account-notifications-{width}")
    return problems
