from django.conf import settings
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic.base import RedirectView

from leaderboard.media import media_file

from . import accounts, health, openapi, team_api


class FaviconView(RedirectView):
    """/favicon.ico, which browsers ask for on every page, to the static icon (its hashed name is looked up per request)."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs) -> str:
        return static("favicon.svg")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("django-rq/", include("django_rq.urls")),
    path("api/v1/submissions/<int:submission_id>/breakdown.<str:fmt>", team_api.breakdown, name="api-breakdown"),
    path("api/v1/boards", team_api.boards, name="api-boards"),
    path("api/v1/openapi.json", openapi.description, name="api-openapi"),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/password_reset/", accounts.password_reset, name="password_reset"),
    path("accounts/password_reset/done/", accounts.password_reset_done, name="password_reset_done"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("favicon.ico", FaviconView.as_view()),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics_view, name="metrics"),
    # The demo's scripted prompter and judge and its study's public link: routed only where the demo app is installed
    # (settings.ATELIER_DEMO, DEBUG only); a deployment has no /demo/ route at all.
    *([path("demo/", include("demo.urls"))] if settings.ATELIER_DEMO else []),
    path("", include("tasks.urls")),
    path("", include("ratings.urls")),
    path("", include("studies.urls")),
    path("", include("notifications.urls")),
    path("", include("submissions.urls")),
    path("", include("leaderboard.urls")),
]
# Renders, targets and references, with the pages' visibility rules (leaderboard/media.py); never a plain file server.
urlpatterns.append(re_path(rf"^{settings.MEDIA_URL.strip('/')}/(?P<name>.+)$", media_file, name="media"))
