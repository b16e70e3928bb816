from django.contrib import admin

from .models import Exemplar, ExemplarEmbedding, ExpertRating


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
    list_display = ("rater", "entry", "render", "source", "created")
    list_filter = ("rater", "source")
