from django.contrib import admin

from .models import Tag, TargetReference, Task, TaskPack
from .services import task_touch


@admin.register(TaskPack)
class TaskPackAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "revision", "source", "loaded_at")
    readonly_fields = ("revision",)


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ("name", "group")
    list_filter = ("group",)


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("task_id", "pack", "category", "split", "title", "version")
    list_filter = ("pack", "category", "split", "tags")
    search_fields = ("task_id", "title", "brief")
    filter_horizontal = ("tags",)
    readonly_fields = ("version", "content_hash")

    def save_related(self, request, form, formsets, change):
        # Tags are saved here, after save_model: only now is the whole edited task known.
        super().save_related(request, form, formsets, change)
        if task_touch(task=form.instance):
            self.message_user(request, f"{form.instance.task_id} is now version {form.instance.version}; its pack's revision went up.")


@admin.register(TargetReference)
class TargetReferenceAdmin(admin.ModelAdmin):
    list_display = ("task", "backend", "config_hash", "seed", "created")
