from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.http import HttpResponseRedirect
from django.urls import reverse

from evaluation.models import Exemplar, ExemplarEmbedding

from .models import ExpertRating, RatingAssignment, StoredReport, TaskPool
from .services import HIDDEN_PERMISSION, RATE_PERMISSION, rater_role_grant, rater_role_revoke, reports_follow, sees_hidden


@admin.register(Exemplar)
class ExemplarAdmin(admin.ModelAdmin):
    list_display = ("task_id", "category", "side", "source", "created")
    list_filter = ("category", "side", "source")
    search_fields = ("task_id", "text")
    readonly_fields = ("content_sha",)


@admin.register(ExemplarEmbedding)
class ExemplarEmbeddingAdmin(admin.ModelAdmin):
    list_display = ("exemplar", "model", "created")
    list_filter = ("model",)
    readonly_fields = ("exemplar", "model", "vector")


@admin.register(ExpertRating)
class ExpertRatingAdmin(admin.ModelAdmin):
    list_display = ("rater", "entry", "render", "pool", "scripted", "source", "created")
    list_filter = ("pool", "scripted", "rater", "source")  # scripted: the demo's rule raters, never pooled with people's

    # /judge/'s statistics follow any change made here (their jobs are sent once it commits).
    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        reports_follow()

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)
        reports_follow()

    def delete_queryset(self, request, queryset) -> None:
        super().delete_queryset(request, queryset)
        reports_follow()


@admin.register(StoredReport)
class StoredReportAdmin(admin.ModelAdmin):
    """/judge/'s statistics as their jobs stored them (ratings/reports.py): when, how long, and why a job failed."""

    list_display = ("kind", "scripted", "subject", "computed_at", "seconds", "error", "failed_at")
    list_filter = ("kind", "scripted")
    readonly_fields = [f.name for f in StoredReport._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False  # written by their job only


@admin.register(TaskPool)
class TaskPoolAdmin(admin.ModelAdmin):
    list_display = ("task", "pool", "created")
    list_filter = ("pool", "task__category")
    readonly_fields = ("task", "pool", "created")  # decided once, at the first assignment: never edited

    def has_add_permission(self, request) -> bool:
        return False  # rating_queue_fill decides pools


@admin.register(RatingAssignment)
class RatingAssignmentAdmin(admin.ModelAdmin):
    list_display = ("rater", "task_id", "pool", "created", "done_at")
    list_filter = ("pool", "entry__task__split", "rater", ("done_at", admin.EmptyFieldListFilter))  # split: who holds hidden items
    list_select_related = ("rater", "entry__task")
    raw_id_fields = ("entry", "render")

    @admin.display(ordering="entry__task__task_id")
    def task_id(self, obj: RatingAssignment) -> str:
        return obj.entry.task.task_id


# --- the raters' roles, on the admin's Users list -------------------------------------------------


def _still_holding(queryset, permission: str) -> list[str]:
    """Who still has `permission` after a revoke (their own permission or a superuser's), re-read: permissions are cached."""
    return [u.get_username() for u in queryset.model.objects.filter(pk__in=queryset.values("pk")) if u.has_perm(permission)]


@admin.action(description="Make the selected users expert raters (they can open /rate/)", permissions=["change"])
def make_expert_raters(modeladmin, request, queryset):
    gained = rater_role_grant(users=queryset)
    modeladmin.message_user(request, f"{gained} user(s) made expert raters; give them items on the rating queue page.", messages.SUCCESS)


@admin.action(
    description="Make the selected users hidden-item raters (expert raters who may rate hidden test-split items)", permissions=["change"]
)
def make_hidden_item_raters(modeladmin, request, queryset):
    gained = rater_role_grant(users=queryset, hidden=True)
    modeladmin.message_user(request, f"{gained} user(s) made hidden-item raters (and expert raters).", messages.SUCCESS)


@admin.action(description="Take hidden-item rating away from the selected users", permissions=["change"])
def revoke_hidden_items(modeladmin, request, queryset):
    lost = rater_role_revoke(users=queryset, hidden_only=True)
    modeladmin.message_user(request, f"{lost} user(s) are no longer hidden-item raters.", messages.SUCCESS)
    if still := _still_holding(queryset, HIDDEN_PERMISSION):
        modeladmin.message_user(request, f"Still allowed (own permission or superuser): {', '.join(still)}.", messages.WARNING)


@admin.action(description="Take both rater roles away from the selected users", permissions=["change"])
def revoke_rater_roles(modeladmin, request, queryset):
    lost = rater_role_revoke(users=queryset)
    modeladmin.message_user(request, f"{lost} user(s) are no longer expert raters.", messages.SUCCESS)
    if still := _still_holding(queryset, RATE_PERMISSION):
        modeladmin.message_user(request, f"Still allowed (own permission or superuser): {', '.join(still)}.", messages.WARNING)


@admin.action(description="Give the selected expert raters items to rate…")
def give_items(modeladmin, request, queryset):
    return HttpResponseRedirect(reverse("rate_queue") + "?" + urlencode([("raters", pk) for pk in queryset.values_list("pk", flat=True)]))


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class RaterUserAdmin(UserAdmin):
    """Django's user admin with the raters' roles: a column, and actions that grant, take away and fill the queue."""

    list_display = (*UserAdmin.list_display, "rater_role")
    actions = [make_expert_raters, make_hidden_item_raters, revoke_hidden_items, revoke_rater_roles, give_items]

    @admin.display(description="rater")
    def rater_role(self, user) -> str:
        if not user.has_perm(RATE_PERMISSION):
            return ""
        return "expert + hidden items" if sees_hidden(user) else "expert"
