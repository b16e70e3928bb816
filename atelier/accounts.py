"""Accounts: sign-up (Django's form and an optional e-mail address) and a rate-limited password reset. They live on
top of the apps because they join them: the account (then the teams page, submissions/), the address, which
notifications/ confirms by a mailed link before any mail is sent to it, and the limiter submissions/ keeps."""

from __future__ import annotations

import logging

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import PasswordResetForm, UserCreationForm
from django.contrib.auth.views import PasswordResetDoneView, PasswordResetView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from limits import RateLimitItemPerHour

from notifications.links import site_url
from notifications.services import address_change
from teams import ratelimit

log = logging.getLogger(__name__)


class SignupForm(UserCreationForm):
    email = forms.EmailField(
        required=False,
        label="E-mail address (optional)",
        help_text="For notifications about your teams' submissions. We send a link to it first; you can add one later.",
    )


@require_http_methods(["GET", "HEAD", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()  # without the address: it is set when its link is opened
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        if form.cleaned_data["email"]:
            messages.add_message(request, *address_change(user=user, email=form.cleaned_data["email"]))
        return redirect("teams")
    return render(request, "registration/signup.html", {"form": form})


class LimitedPasswordResetForm(PasswordResetForm):
    """Django's reset form, sending at most ATELIER_PASSWORD_RESET_LIMIT messages an hour to one address. The page
    says the same whether or not a message went (and whether the address has an account): it tells nobody which
    addresses are members'."""

    def get_users(self, email: str):
        users = list(super().get_users(email))  # active accounts with this address and a usable password
        address = ratelimit.address_key(email)  # no address is kept in the cache
        if users and not ratelimit.take(RateLimitItemPerHour(settings.ATELIER_PASSWORD_RESET_LIMIT, namespace="password-reset"), address):
            log.warning("password reset: the hourly limit for one address is spent; no message sent")
            return []
        return users

    def save(self, **kwargs) -> None:
        """Django's save, the mailed link under ATELIER_SITE_URL (as every mail's) rather than the request's Host."""
        super().save(**kwargs | {"extra_email_context": (kwargs.get("extra_email_context") or {}) | {"site_url": site_url()}})


password_reset = PasswordResetView.as_view(form_class=LimitedPasswordResetForm)


def password_reset_done(request: HttpRequest) -> HttpResponse:
    """The same page whatever happened, with the link's lifetime and the hourly limit as configured."""
    days, limit = settings.PASSWORD_RESET_TIMEOUT / 86400, settings.ATELIER_PASSWORD_RESET_LIMIT
    return PasswordResetDoneView.as_view(extra_context={"timeout_days": f"{days:g}", "limit": limit})(request)
