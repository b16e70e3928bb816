from django.urls import path

from . import api, views

urlpatterns = [
    path("teams/", views.teams, name="teams"),
    path("teams/<slug:slug>/", views.team, name="team"),
    path("teams/<slug:slug>/submit/", views.submit, name="submit"),
    path("examples/prompts.jsonl", views.example_prompts, name="example-prompts"),
    path("teams/<slug:slug>/prompters/new/", views.prompter_edit, name="prompter-new"),
    path("teams/<slug:slug>/prompters/<int:prompter_id>/", views.prompter_edit, name="prompter-edit"),
    path("teams/<slug:slug>/tokens/", views.token_new, name="token-new"),
    path("teams/<slug:slug>/tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path("teams/<slug:slug>/endpoints/new/", views.endpoint_new, name="endpoint-new"),
    path("teams/<slug:slug>/endpoints/<int:endpoint_id>/", views.endpoint_detail, name="endpoint"),
    path("teams/<slug:slug>/endpoints/<int:endpoint_id>/test/", views.endpoint_test, name="endpoint-test"),
    path("teams/<slug:slug>/endpoints/<int:endpoint_id>/run/", views.endpoint_run, name="endpoint-run"),
    path("teams/<slug:slug>/endpoints/<int:endpoint_id>/archive/", views.endpoint_archive, name="endpoint-archive"),
    path("submissions/<int:submission_id>/retry/", views.submission_retry, name="submission-retry"),
    path("submissions/<int:submission_id>/cancel/", views.submission_cancel, name="submission-cancel"),
    path("submissions/<int:submission_id>/board/", views.submission_board, name="submission-board"),
    path("submissions/<int:submission_id>/calls/", views.call_log_page, name="call-log"),
    path("submissions/<int:submission_id>/calls.<str:fmt>", views.call_log_download, name="call-log-download"),
    path("api/v1/submissions", api.submit, name="api-submit"),
    path("api/v1/submissions/<int:submission_id>", api.status, name="api-status"),
    path("api/v1/submissions/<int:submission_id>/calls", api.calls, name="api-calls"),
    path("api/v1/submissions/<int:submission_id>/cancel", api.cancel, name="api-cancel"),
    path("api/v1/endpoints", api.endpoints, name="api-endpoints"),
    path("api/v1/endpoints/<int:endpoint_id>/test", api.endpoint_test, name="api-endpoint-test"),
    path("api/v1/endpoints/<int:endpoint_id>/runs", api.endpoint_runs, name="api-endpoint-runs"),
    path("api/v1/prompters", api.prompters, name="api-prompters"),
    path("api/v1/prompters/<int:prompter_id>", api.prompter, name="api-prompter"),
    path("api/v1/prompters/<int:prompter_id>/versions", api.prompter_versions, name="api-prompter-versions"),
]
