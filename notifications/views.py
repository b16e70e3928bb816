from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from . import services
from .forms import NotificationForm


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else None  # an unticked box sends no field at all
    form = NotificationForm(data, initial={"email_enabled": services.email_enabled(request.user)})
    if form.is_valid():
        services.email_setting_set(user_id=request.user.pk, enabled=form.cleaned_data["email_enabled"])
        messages.success(request, "Saved: e-mail is " + ("on." if form.cleaned_data["email_enabled"] else "off."))
        return redirect("notifications")
    return render(request, "notifications/settings.html", {"form": form})


# The signed token is the credential, not a session: the link works without logging in, and mail clients POST to it
# with no cookie or CSRF token (List-Unsubscribe-Post, RFC 8058). A GET only asks, so a link scanner changes nothing.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    user_id = services.unsubscribe_user(token)
    if user_id is None or not get_user_model().objects.filter(pk=user_id).exists():
        return render(request, "notifications/unsubscribe.html", {"invalid": True}, status=400)
    if request.method == "POST":
        services.email_setting_set(user_id=user_id, enabled=False)
    return render(request, "notifications/unsubscribe.html", {"done": request.method == "POST"})
