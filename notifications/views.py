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
        address_change(request, address.cleaned_data["email"])
        return redirect("notifications")
    return render(request, "notifications/settings.html", {"form": form, "address": address})


def address_change(request: HttpRequest, email: str) -> None:
    """Remove the address at once; a new one is mailed a link first (services.address_confirmation_send)."""
    if not email:
        services.address_set(user_id=request.user.pk, email="")
        messages.success(request, "Removed: your account has no e-mail address, so you get no notifications.")
    elif email == request.user.email:
        messages.info(request, f"{email} is already your address.")
    else:
        try:
            sent = services.address_confirmation_send(user=request.user, email=email)
        except services.ConfirmationLimited as limited:
            messages.warning(request, str(limited))
            return
        if sent:
            messages.success(
                request, f"We sent a link to {email}: open it to use that address (it works for {services.ADDRESS_LINK_DAYS} days)."
            )
        else:
            messages.error(request, "The confirmation e-mail could not be sent; nothing changed. Try again in an hour.")


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
