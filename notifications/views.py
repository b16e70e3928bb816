from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from . import services
from .forms import AddressForm, NotificationForm


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    # two forms on the page: the address form always sends `email` (empty to remove it); an unticked box sends nothing
    posted = request.POST if request.method == "POST" else None
    for_address = posted is not None and "email" in posted
    form = NotificationForm(None if for_address else posted, initial={"email_enabled": services.email_enabled(request.user)})
    address = AddressForm(posted if for_address else None, initial={"email": request.user.email})
    if form.is_valid():
        services.email_setting_set(user_id=request.user.pk, enabled=form.cleaned_data["email_enabled"])
        messages.success(request, "Saved: e-mail is " + ("on." if form.cleaned_data["email_enabled"] else "off."))
        return redirect("notifications")
    if address.is_valid():
        messages.add_message(request, *services.address_change(user=request.user, email=address.cleaned_data["email"]))
        return redirect("notifications")
    return render(request, "notifications/settings.html", {"form": form, "address": address})


# Like unsubscribe: the signed link is the credential, and a GET only asks (mail scanners open links).
@require_http_methods(["GET", "POST"])
def address_confirm(request: HttpRequest, token: str) -> HttpResponse:
    try:
        user_id, email = services.address_confirmed(token)
    except services.AddressRefused as refused:
        return render(request, "notifications/address.html", {"refused": str(refused)}, status=400)
    if request.method == "POST":
        services.address_set(user_id=user_id, email=email)
    return render(request, "notifications/address.html", {"email": email, "done": request.method == "POST"})


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
