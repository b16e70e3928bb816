"""Password reset by e-mail (Django's views, the site's pages, atelier/accounts.py's limit): a member with an address
gets a link, the link sets a new password once; the page says the same for an unknown address, an account without a
usable password and a spent limit, and none of them is sent anything."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.sqlite_pass(
    reason="Django's own auth views and a limit kept in the cache: no query of ours that PostgreSQL could answer differently"
)
SENT = "If that address belongs to an account"


@pytest.fixture
def member(django_user_model):
    return django_user_model.objects.create_user("ada", email="ada@example.org", password="old-pass-phrase-1")


def ask(client: Client, email: str) -> str:
    reply = client.post("/accounts/password_reset/", {"email": email}, follow=True)
    assert reply.redirect_chain[-1][0] == "/accounts/password_reset/done/"
    return reply.content.decode()


def test_a_member_resets_the_password_from_the_mailed_link_once(member, mailoutbox, settings):
    client = Client()
    login = client.get("/accounts/login/").content.decode()
    assert (
        'id="password-reset-link" href="/accounts/password_reset/"' in login
        or 'href="/accounts/password_reset/" id="password-reset-link"' in login
    )
    settings.ATELIER_SITE_URL = "https://atelier.example.org"  # the mail's link: the site's, never the request's Host
    done = " ".join(ask(client, "ADA@example.org").split())  # Django matches the address without regard to case
    assert SENT in done and "for 3 days" in done and "at most 3 such messages an hour" in done
    assert [m.to for m in mailoutbox] == [["ada@example.org"]] and mailoutbox[0].subject == "AtelierEval: choose a new password"
    link = re.search(r"^    https://atelier\.example\.org(/accounts/reset/\S+/)$", mailoutbox[0].body, re.M).group(1)
    form = client.get(link, follow=True)  # Django swaps the token for a session key and redirects
    assert 'id="password-set-form"' in form.content.decode()
    set_url = form.redirect_chain[-1][0]
    done = client.post(set_url, {"new_password1": "new-pass-phrase-2", "new_password2": "new-pass-phrase-2"}, follow=True)
    assert 'id="password-reset-complete"' in done.content.decode()
    member.refresh_from_db()
    assert member.check_password("new-pass-phrase-2") and not member.check_password("old-pass-phrase-1")
    again = Client().get(link, follow=True).content.decode()
    assert 'id="password-reset-invalid"' in again  # the link worked once


def test_unknown_addresses_unusable_passwords_and_a_spent_limit_get_the_same_page_and_no_mail(
    member, django_user_model, mailoutbox, settings
):
    settings.ATELIER_PASSWORD_RESET_LIMIT = 2
    client = Client()
    nobody = ask(client, "nobody@example.org")
    django_user_model.objects.create_user("sso", email="sso@example.org")  # no usable password
    assert ask(client, "sso@example.org") == nobody and mailoutbox == []
    assert SENT in ask(client, "ada@example.org") and SENT in ask(client, "ada@example.org")
    assert len(mailoutbox) == 2
    assert ask(client, "ada@example.org") == ask(Client(), "nobody@example.org")  # the third within the hour: not sent
    assert len(mailoutbox) == 2


def test_a_member_changes_the_password_from_the_settings_page(member):
    client = Client()
    client.force_login(member)
    assert 'id="password-change-link"' in client.get("/account/notifications/").content.decode()
    form = {"old_password": "old-pass-phrase-1", "new_password1": "new-pass-phrase-3", "new_password2": "new-pass-phrase-3"}
    done = client.post("/accounts/password_change/", form, follow=True).content.decode()
    assert 'id="password-change-done"' in done and "AtelierEval" in done
    member.refresh_from_db()
    assert member.check_password("new-pass-phrase-3")
