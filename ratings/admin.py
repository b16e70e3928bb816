from django.contrib import admin

from .models import Exemplar, ExpertRating


@admin.register(Exemplar)
class ExemplarAdmin(admin.ModelAdmin):
    list_display = ("task_id", "category", "kind", "source", "created")
    list_filter = ("category", "kind", "source")
    search_fields = ("task_id", "text")
    readonly_fields = ("embedding", "embedding_model", "content_sha")


@admin.register(ExpertRating)
class ExpertRatingAdmin(admin.ModelAdmin):
    list_display = ("rater", "entry", "render", "source", "created")
    list_filter = ("rater", "source")
