from django.contrib import admin

from .models import Tag, Task, TaskPack


@admin.register(TaskPack)
class TaskPackAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "source", "loaded_at")


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
