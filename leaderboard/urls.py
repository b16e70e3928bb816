from django.urls import path, re_path

from . import views

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("about/smoke/", views.about_smoke, name="about-smoke"),
    path("board.zip", views.board_download, name="board-download"),
    path("releases/", views.release_list, name="releases"),
    path("releases/keys.json", views.release_keys, name="release-keys"),
    re_path(r"^releases/keys/(?P<fingerprint>[0-9a-f]{64})\.pem$", views.release_key_pem, name="release-key"),
    re_path(r"^releases/(?P<digest>[0-9a-f]{64})\.zip$", views.release_file, name="release"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission"),
    path("compare/", views.compare, name="compare"),
    path("submissions/<int:submission_id>/breakdown.<str:fmt>", views.breakdown_download, name="breakdown"),
]
