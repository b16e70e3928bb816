"""The judge's endpoint is never public: labels name the model, route and CLIP weights; staff see the host without
credentials; stored labels are rewritten by a data migration (issue 18, item 6)."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluation import runtime
from evaluation.models import Status, Submission
from submissions.services import submission_create, submissions_publish, token_create

PROMPTS = b'{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"}\n{"task_id": "im-s01", "prompt": "A red sun over three blue hills"}\n'


def body(response) -> str:
    return (b"".join(response.streaming_content) if response.streaming else response.content).decode()


@pytest.mark.django_db(transaction=True)
def test_no_public_page_api_or_download_names_the_judge_host_or_its_credentials(
    client, admin_client, team, sample_pack, scripted_judge, settings
):
    host = scripted_judge.base_url.split("/")[2]  # 127.0.0.1:PORT
    settings.OPENAI_BASE_URL = f"http://user:secret@{host}/v1"
    runtime.reset()
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS)
    submission.refresh_from_db()
    assert submission.status == Status.DONE, submission.error
    assert submissions_publish(submissions=Submission.objects.filter(pk=submission.pk)) == 1
    assert submission.judge_label == "AtelierJudge via scripted-judge, route ateliereval; CLIP ViT-B-32 smoke (random weights)"
    assert submission.judge_endpoint == host

    urls = [
        "/",
        "/judge/",
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/breakdown.csv",
        f"/submissions/{submission.pk}/breakdown.jsonl",
    ]
    responses = {url: client.get(url) for url in urls}
    assert all(r.status_code == 200 for r in responses.values()), {u: r.status_code for u, r in responses.items()}
    texts = {url: body(r) for url, r in responses.items()}
    assert submission.judge_label in texts["/"] and submission.judge_label in texts[f"/submissions/{submission.pk}/"]
    link = texts["/"].split('id="board-download"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    with zipfile.ZipFile(io.BytesIO(b"".join(client.get(link).streaming_content))) as archive:
        texts.update({f"board.zip:{name}": archive.read(name).decode() for name in archive.namelist()})
    assert submission.judge_label in texts["board.zip:board.json"]
    _, token = token_create(team=team, name="t")
    texts["api"] = client.get(f"/api/v1/submissions/{submission.pk}", HTTP_AUTHORIZATION=f"Bearer {token}").content.decode()
    for where, text in texts.items():
        for secret in ("secret", "user:", host):
            assert secret not in text, (where, secret)

    staff = body(admin_client.get(f"/submissions/{submission.pk}/"))
    assert f'id="judge-endpoint">{host}<' in staff and "secret" not in staff
    admin = body(admin_client.get(f"/admin/evaluation/submission/{submission.pk}/change/"))
    assert host in admin and "secret" not in admin


OLD_LABEL = "AtelierJudge via gpt-x at user:pw@judge.internal:8443; CLIP ViT-B-32 (laion2b)"
OLD_ENSEMBLE = "ensemble of 2 judges: AtelierJudge via a at h1:1; CLIP ViT-B-32 (w); AtelierJudge via b at h2:2; CLIP ViT-B-32 (w)"


@pytest.mark.django_db(transaction=True)
def test_the_data_migration_takes_hosts_and_credentials_out_of_stored_labels():
    before = [("submissions", "0011_judgement_remote_text"), ("leaderboard", "0008_figure_coverage")]
    after = [("submissions", "0012_submission_judge_endpoint"), ("leaderboard", "0009_public_judge_labels")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    Team, TaskPack = apps.get_model("submissions", "Team"), apps.get_model("tasks", "TaskPack")
    Submission_, Figure, BoardStats = (
        apps.get_model("submissions", "Submission"),
        apps.get_model("leaderboard", "Figure"),
        apps.get_model("leaderboard", "BoardStats"),
    )
    team, pack = Team.objects.create(name="t", slug="t"), TaskPack.objects.create(name="p", version="1")
    one = Submission_.objects.create(
        team=team,
        pack=pack,
        prompter="m",
        judge_id="openai:gpt-x",
        judge_version="rubric-v2+abc",
        judge_label=OLD_LABEL,
        judge_spec={"route": "extended"},
    )
    two = Submission_.objects.create(
        team=team, pack=pack, prompter="e", judge_id="ensemble:openai:a+openai:b", judge_version="v", judge_label=OLD_ENSEMBLE
    )
    Figure.objects.create(
        submission=one, judge_id="openai:gpt-x", judge_version="rubric-v2+abc", judge_label=OLD_LABEL, scope="overall", key="overall"
    )
    BoardStats.objects.create(pack=pack, revision=1, judge_id="openai:gpt-x", judge_version="rubric-v2+abc", judge_label=OLD_LABEL)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    apps = executor.loader.project_state(after).apps
    Submission_, Figure, BoardStats = (
        apps.get_model("submissions", "Submission"),
        apps.get_model("leaderboard", "Figure"),
        apps.get_model("leaderboard", "BoardStats"),
    )
    new = "AtelierJudge via gpt-x, route extended; CLIP ViT-B-32 (laion2b)"
    assert Submission_.objects.values_list("judge_label", "judge_endpoint").get(pk=one.pk) == (new, "judge.internal:8443")
    assert Figure.objects.get().judge_label == new and BoardStats.objects.get().judge_label == new
    ensemble = Submission_.objects.get(pk=two.pk)  # no stored spec: no route word
    assert ensemble.judge_label == "ensemble of 2 judges: AtelierJudge via a; CLIP ViT-B-32 (w); AtelierJudge via b; CLIP ViT-B-32 (w)"
    assert ensemble.judge_endpoint == "h1:1, h2:2"
    assert Submission_.objects.filter(judge_id="openai:gpt-x", judge_version="rubric-v2+abc").exists()  # the judge's identity stays
    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
