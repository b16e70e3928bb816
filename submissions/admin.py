from django.contrib import admin, messages

from evaluation.models import JudgeBatch, Judgement, PromptEntry, Render, Submission
from evaluation.workqueue import QueueUnavailable
from teams.models import ApiToken, Membership, Prompter, PrompterVersion, Team

from . import services


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created")
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("team", "user", "is_owner")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("team", "name", "prefix", "created", "last_used", "revoked")
    readonly_fields = ("digest", "prefix")


class PrompterVersionInline(admin.TabularInline):
    model = PrompterVersion
    fields = ("number", "created", "user", "token", "changed", "values")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Prompter)
class PrompterAdmin(admin.ModelAdmin):
    """Cards are changed by their teams (each change a version): staff read them here, the contact included."""

    list_display = ("name", "team", "kind", "family", "weights", "updated")
    list_filter = ("kind", "weights")
    search_fields = ("name", "family", "team__name")
    readonly_fields = (
        "team",
        "name",
        "kind",
        "family",
        "weights",
        "parameters",
        "paper_url",
        "code_url",
        "licence",
        "description",
        "contact",
    )
    inlines = [PrompterVersionInline]

    def has_add_permission(self, request) -> bool:
        return False


# With the work queue down, an action changes nothing and says so (an error message on the list it returns to),
# as an upload answers 503: the boards' rebuilds could not be enqueued.
QUEUE_DOWN = "The work queue is unavailable right now, so nothing was changed. Please try again in a minute."


def _change(modeladmin, request, change, done: str) -> None:
    """Run `change` (a service taking the selected rows, returning how many it changed) and tell the user: `done` with
    {count} filled in, or QUEUE_DOWN when the work queue refused and nothing changed."""
    try:
        count = change()
    except QueueUnavailable:
        modeladmin.message_user(request, QUEUE_DOWN, messages.ERROR)
        return
    modeladmin.message_user(request, done.format(count=count), messages.INFO)


@admin.action(description="Publish selected finished submissions on the leaderboard")
def publish(modeladmin, request, queryset):
    done = "Published {count} submission(s); unfinished and already published ones were left as they were."
    _change(modeladmin, request, lambda: services.submissions_publish(submissions=queryset), done)


@admin.action(description="Unpublish selected submissions")
def unpublish(modeladmin, request, queryset):
    _change(modeladmin, request, lambda: services.submissions_unpublish(submissions=queryset), "Unpublished {count} submission(s).")


@admin.action(description="Withdraw and erase selected submissions (prompts out of the board's releases, images deleted)")
def erase(modeladmin, request, queryset):
    done = "Withdrew {count} submission(s): their boards' releases are re-issued without them and their images deleted."
    _change(modeladmin, request, lambda: services.entries_erase(submissions=queryset), done)


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "team", "prompter", "pack", "status", "published", "is_baseline", "judge_id", "created")
    list_filter = ("status", "published", "is_baseline", "pack")
    actions = [publish, unpublish, erase]
    readonly_fields = ("judge_endpoint",)  # recorded when the judge is chosen: the host without credentials, staff only


@admin.register(PromptEntry)
class PromptEntryAdmin(admin.ModelAdmin):
    list_display = ("submission", "task", "sample_index", "line")
    list_select_related = ("task", "submission")


@admin.register(Render)
class RenderAdmin(admin.ModelAdmin):
    list_display = ("entry", "backend", "image_index", "seed", "status", "seconds")
    list_filter = ("status", "backend")


@admin.register(Judgement)
class JudgementAdmin(admin.ModelAdmin):
    list_display = ("submission", "entry", "render", "skill", "judge_id", "status", "value")
    list_filter = ("status", "skill", "judge_id")


@admin.register(JudgeBatch)
class JudgeBatchAdmin(admin.ModelAdmin):
    """The judge's batches (docs/judging.md, "The batch route"): read only, the scheduler keeps them."""

    list_display = ("submission", "provider_id", "status", "total", "completed", "failed", "collected", "created", "finished")
    list_filter = ("status", "collected")
    readonly_fields = [f.name for f in JudgeBatch._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
