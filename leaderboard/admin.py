from django.contrib import admin

from .models import SubmissionScore


@admin.register(SubmissionScore)
class SubmissionScoreAdmin(admin.ModelAdmin):
    list_display = ("submission", "scope", "key", "value", "n", "failures")
    list_filter = ("scope",)
