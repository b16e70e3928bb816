from django.contrib import admin

from .models import Notice, NotificationSetting


@admin.register(Notice)
class NoticeAdmin(admin.ModelAdmin):
    list_display = ("submission", "event", "created", "recipients", "error")
    list_filter = ("event",)
    readonly_fields = ("submission", "event", "created", "recipients", "error")


@admin.register(NotificationSetting)
class NotificationSettingAdmin(admin.ModelAdmin):
    list_display = ("user", "email_enabled", "updated")
    list_filter = ("email_enabled",)
