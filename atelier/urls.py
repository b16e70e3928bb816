from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.static import serve

urlpatterns = [
    path("admin/", admin.site.urls),
    path("django-rq/", include("django_rq.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("tasks.urls")),
    path("", include("ratings.urls")),
    path("", include("submissions.urls")),
    path("", include("leaderboard.urls")),
]
# Targets and rendered images. A large deployment serves MEDIA_ROOT from its web server and sets ATELIER_SERVE_MEDIA=0.
if settings.ATELIER_SERVE_MEDIA:
    urlpatterns.append(re_path(rf"^{settings.MEDIA_URL.strip('/')}/(?P<path>.*)$", serve, {"document_root": settings.MEDIA_ROOT}))
