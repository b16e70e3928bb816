"""The models that moved to teams/ and evaluation/ kept their tables: a database built before the move, with a row in
every moved table and in every table that points at one, migrates in place and keeps every row and every link."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("submissions", "0012_submission_judge_endpoint"),
    ("leaderboard", "0011_humanrow_scripted"),
    ("ratings", "0005_hidden_item_raters"),
    ("studies", "0002_participant_scripted"),
    ("teams", None),
    ("evaluation", None),
]
MOVED = {
    "teams": ["Team", "Membership", "ApiToken", "Endpoint"],
    "evaluation": [
        "Submission",
        "PromptEntry",
        "Render",
        "Judgement",
        "PromptCall",
        "Figure",
        "HumanRow",
        "BoardStats",
        "BoardRow",
        "Exemplar",
        "ExemplarEmbedding",
    ],
}
POINTING = {"ratings": ["ExpertRating", "RatingAssignment"], "studies": ["Study", "Participant"]}


def _rows_before_the_move(apps) -> None:
    get = lambda label: apps.get_model(*label.split("."))  # noqa: E731
    user = get("auth.User").objects.create(username="expert")
    team = get("submissions.Team").objects.create(name="t", slug="t")
    get("submissions.Membership").objects.create(team=team, user=user, is_owner=True)
    get("submissions.ApiToken").objects.create(team=team, name="ci", prefix="atl_", digest="d" * 64)
    endpoint = get("submissions.Endpoint").objects.create(team=team, name="e", base_url="http://127.0.0.1:9/v1", model="m")
    pack = get("tasks.TaskPack").objects.create(name="p", version="1")
    task = get("tasks.Task").objects.create(pack=pack, task_id="OE-1", category="OE", title="t", brief="b")
    submission = get("submissions.Submission").objects.create(team=team, pack=pack, prompter="m", endpoint=endpoint, origin="endpoint")
    entry = get("submissions.PromptEntry").objects.create(submission=submission, task=task, text="a red door")
    render = get("submissions.Render").objects.create(entry=entry, backend="b", image_index=0, seed=1, config_hash="c", prompt_sha="s")
    get("submissions.Judgement").objects.create(
        submission=submission, entry=entry, render=render, skill="s", judge_id="j", judge_version="v"
    )
    get("submissions.PromptCall").objects.create(submission=submission, task=task)
    get("leaderboard.Figure").objects.create(
        submission=submission, judge_id="j", judge_version="v", scope="overall", key="overall", value=50
    )
    get("leaderboard.HumanRow").objects.create(pack=pack, revision=1, tier="all", judge_id="j", judge_version="v")
    get("leaderboard.BoardStats").objects.create(pack=pack, revision=1, judge_id="j", judge_version="v")
    get("leaderboard.BoardRow").objects.create(
        pack=pack, revision=1, judge_id="j", judge_version="v", submission=submission, overall=50, score=50
    )
    exemplar = get("ratings.Exemplar").objects.create(side="prompt", category="OE", task_id="OE-9", text="x", content_sha="x" * 64)
    get("ratings.ExemplarEmbedding").objects.create(exemplar=exemplar, model="m", vector=[0.0])
    get("ratings.ExpertRating").objects.create(rater="expert", entry=entry, render=render)
    get("ratings.RatingAssignment").objects.create(rater=user, entry=entry, render=render, pool="evaluation")
    study = get("studies.Study").objects.create(
        name="s", slug="s", pack=pack, protocol_version="1", consent_text="c", questionnaire={}, tier_rule={}, modules={}, team=team
    )
    invitation = get("studies.Invitation").objects.create(study=study)
    get("studies.Participant").objects.create(study=study, invitation=invitation, submission=submission)


def _migrate(targets) -> object:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state([t for t in targets if t[1]]).apps  # (app, None): unapplied


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_every_row_and_link() -> None:
    from django.contrib.contenttypes.models import ContentType

    apps = _migrate(BEFORE)
    _rows_before_the_move(apps)
    types = apps.get_model("contenttypes", "ContentType")
    for model in ("submission", "team"):  # what admin history and permissions hang on
        types.objects.get_or_create(app_label="submissions", model=model)
    ContentType.objects.clear_cache()

    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    apps = _migrate(leaves)
    counts = {f"{app}.{name}": apps.get_model(app, name).objects.count() for app, names in {**MOVED, **POINTING}.items() for name in names}
    assert counts == dict.fromkeys(counts, 1)
    made = {t for t in connection.introspection.table_names() if t.startswith(("teams_", "evaluation_"))}
    # no table made for a moved model: only those of models new since (the prompter cards, the judge's batches)
    assert made == {"teams_prompter", "teams_prompterversion", "evaluation_judgebatch"}
    from evaluation.models import BoardRow, Judgement, Submission
    from ratings.models import ExpertRating
    from studies.models import Participant

    judgement = Judgement.objects.select_related("render__entry__submission__endpoint__team").get()
    assert judgement.render.entry.submission.endpoint.team.slug == "t"
    assert ExpertRating.objects.get().render == judgement.render and BoardRow.objects.get().submission == judgement.submission
    assert Participant.objects.get().submission == Submission.objects.get() and Submission.objects.get().team.study.slug == "s"
    assert set(ContentType.objects.filter(model__in=["submission", "team"]).values_list("app_label", "model")) == {
        ("evaluation", "submission"),
        ("teams", "team"),
    }
