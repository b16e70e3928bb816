from django.urls import path

from . import api, views

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("teams/", views.teams, name="teams"),
    path("teams/<slug:slug>/", views.team, name="team"),
    path("teams/<slug:slug>/submit/", views.submit, name="submit"),
    path("teams/<slug:slug>/tokens/", views.token_new, name="token-new"),
    path("teams/<slug:slug>/tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path("submissions/<int:submission_id>/retry/", views.submission_retry, name="submission-retry"),
    path("api/v1/submissions", api.submit, name="api-submit"),
    path("api/v1/submissions/<int:submission_id>", api.status, name="api-status"),
]
