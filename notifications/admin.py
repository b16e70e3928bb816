from django.contrib import admin, messages

from . import services
from .models import Notice, NotificationSetting


@admin.action(description="Send the selected failed notices again")
def send_again(modeladmin, request, queryset):
    count = services.notices_retry(notices=queryset)
    messages.success(request, f"{count} failed notice(s) queued to be sent again, {services.TRIES} tries each; others were left alone.")


@admin.register(Notice)
class NoticeAdmin(admin.ModelAdmin):
    # A failed notice is one that every try refused: its error is the mail backend's last reason.
    list_display = ("submission", "event", "status", "attempts", "created", "tried_at", "next_try", "recipients", "error")
    list_filter = ("status", "event")
    readonly_fields = ("submission", "event", "status", "attempts", "created", "tried_at", "next_try", "recipients", "error")
    actions = [send_again]


@admin.register(NotificationSetting)
class NotificationSettingAdmin(admin.ModelAdmin):
    list_display = ("user", "email_enabled", "updated")
    list_filter = ("email_enabled",)
