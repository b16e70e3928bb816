from django.contrib import admin

from evaluation.models import Exemplar, ExemplarEmbedding

from .models import ExpertRating, RatingAssignment, TaskPool


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
    list_display = ("rater", "entry", "render", "pool", "source", "created")
    list_filter = ("pool", "rater", "source")


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
