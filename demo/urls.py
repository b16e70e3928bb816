"""The demo site's own routes, under /demo/ (atelier/urls.py includes them only with settings.ATELIER_DEMO)."""

from django.urls import path

from . import views

urlpatterns = [
    path("prompter/v1/chat/completions", views.prompter_chat, name="demo-prompter"),
    path("judge/v1/chat/completions", views.judge_chat, name="demo-judge"),
    path("study/", views.study_enter, name="demo-study"),
]
