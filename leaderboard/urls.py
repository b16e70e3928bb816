from django.urls import path, re_path

from . import views
from .feeds import BoardFeed

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("about/smoke/", views.about_smoke, name="about-smoke"),
    path("board.zip", views.board_download, name="board-download"),
    path("board.atom", BoardFeed(), name="board-feed"),
    path("sota/", views.sota, name="sota"),
    path("releases/", views.release_list, name="releases"),
    path("releases/keys.json", views.release_keys, name="release-keys"),
    path("releases/latest.json", views.release_latest, name="release-latest"),
    re_path(r"^releases/keys/(?P<fingerprint>[0-9a-f]{64})\.pem$", views.release_key_pem, name="release-key"),
    re_path(r"^releases/(?P<digest>[0-9a-f]{64})\.zip$", views.release_file, name="release"),
    re_path(r"^releases/(?P<digest>[0-9a-f]{64})\.json$", views.release_json, name="release-json"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission"),
    path("compare/", views.compare, name="compare"),
    path("prompters/<int:prompter_id>/", views.prompter, name="prompter"),
    path("submissions/<int:submission_id>/breakdown.<str:fmt>", views.breakdown_download, name="breakdown"),
]
