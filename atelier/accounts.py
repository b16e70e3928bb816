"""Sign-up: Django's form and an optional e-mail address. It lives on top of the apps because it joins two of them:
the account (then the teams page, submissions/) and the address, which notifications/ confirms by a mailed link
before any mail is sent to it."""

from __future__ import annotations

from django import forms
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from notifications.views import address_change


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
            address_change(request, form.cleaned_data["email"])
        return redirect("teams")
    return render(request, "registration/signup.html", {"form": form})
