"""Signing up with an e-mail address in a real browser, at a phone's width and a desktop's: the address waits for its
link; the link's page asks, its button confirms; the settings page then names the address; then a forgotten password
is reset from the login page through the mailed link. No console error, failed request or page wider than the window
on the way."""

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
    problems += password_reset(browser, mailoutbox)
    return problems


def password_reset(browser, mailoutbox) -> list[str]:
    """Forgot the password: from the login page's link, the mailed link's form sets a new one."""
    problems = []
    browser.driver.delete_all_cookies()  # logged out
    _, found = check_page(browser, "/accounts/login/", 390)
    problems += [f"login at 390 px: {p}" for p in found]
    browser.click_and_wait("#password-reset-link")
    browser.find("input[name=email]").send_keys("new@example.org")
    browser.click_and_wait("#password-reset-form button")
    assert "If that address belongs to an account" in browser.find("#password-reset-sent").text
    link = re.search(r"https?://[^/\s]+(/accounts/reset/\S+/)", mailoutbox[-1].body).group(1)
    for width in (1400, 390):
        _, found = check_page(browser, link, width)  # the first visit swaps the token for a session key
        problems += [f"the reset link's page at {width} px: {p}" for p in found]
        link = browser.driver.current_url.removeprefix(browser.base_url)
    browser.find("input[name=new_password1]").send_keys("another-pass-phrase-7")
    browser.find("input[name=new_password2]").send_keys("another-pass-phrase-7")
    browser.click_and_wait("#password-set-form button")
    assert "Your new password is set" in browser.find("#password-reset-complete").text
    assert get_user_model().objects.get(username="newcomer").check_password("another-pass-phrase-7")
    return problems
