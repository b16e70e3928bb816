from django.contrib import admin

from evaluation.models import Figure


@admin.register(Figure)
class FigureAdmin(admin.ModelAdmin):
    list_display = ("submission", "judge_id", "judge_version", "scope", "key", "value", "scale", "n", "failures")
    list_filter = ("scope", "scale")
