from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path

from leaderboard.media import media_file

from . import team_api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("django-rq/", include("django_rq.urls")),
    path("api/v1/submissions/<int:submission_id>/breakdown.<str:fmt>", team_api.breakdown, name="api-breakdown"),
    path("api/v1/boards", team_api.boards, name="api-boards"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("ratings.urls")),
    path("", include("studies.urls")),
    path("", include("submissions.urls")),
    path("", include("leaderboard.urls")),
]
# Renders, targets and references, with the pages' visibility rules (leaderboard/media.py); never a plain file server.
urlpatterns.append(re_path(rf"^{settings.MEDIA_URL.strip('/')}/(?P<name>.+)$", media_file, name="media"))
