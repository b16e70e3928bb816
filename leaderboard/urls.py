from django.urls import path

from . import views

urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("about/smoke/", views.about_smoke, name="about-smoke"),
    path("board.zip", views.board_download, name="board-download"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission"),
    path("submissions/<int:submission_id>/breakdown.<str:fmt>", views.breakdown_download, name="breakdown"),
]
