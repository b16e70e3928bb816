"""A board's signed release follows every write that changes what it carries, by job, before anyone downloads it: the
human rows rebuilt when a study participant's submission finishes or the participant withdraws, and a difficulty
predictor installed or its predictions made (docs/releases.md, "When a release is made"). The audit saw the board page
cite release 1, without the human rows and the difficulty block, until a download made release 2."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.test import Client

from evaluation.models import Submission
from leaderboard.models import Release
from leaderboard.releases import key_create
from submissions.services import submission_create, submissions_publish
from tests.test_studies import SKILLED

pytestmark = pytest.mark.django_db(transaction=True)  # the jobs run in-process once each change commits


def latest() -> Release:
    return Release.objects.order_by("-number").first()


def member(release: Release, name: str) -> bytes:
    with default_storage.open(release.file, "rb") as handle, zipfile.ZipFile(handle) as archive:
        return archive.read(name)


def board_json(release: Release) -> dict:
    return json.loads(member(release, "board.json"))


def cited(client, pack) -> str:
    """The digest the board page's "Cite this board" block names."""
    content = client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
    return content.split('id="cite-release"')[1].split("</p>")[0]


def publish(team, pack, data: bytes) -> Submission:
    made = submission_create(team=team, pack=pack, prompter="first", filename="p.jsonl", data=data)
    assert submissions_publish(submissions=Submission.objects.filter(pk=made.pk)) == 1
    return made


def participant_done(pack):
    """One study participant, from invitation to the last prompt; their submission is evaluated in-process."""
    from studies.models import Invitation
    from studies.services import invitations_create, study_create

    study = study_create(name="Pilot", pack=pack, per_category=1, rounds=1)
    person, token = Client(), invitations_create(study=study, count=1)[0].token
    url = f"/study/{token}/"
    assert person.post(url + "consent", {"agree": "yes"}).status_code == 302
    assert person.post(url + "questionnaire", SKILLED).status_code == 302
    participant = study.participants.get(invitation__digest=Invitation.digest_of(token))
    for assignment in participant.assignments.order_by("position"):
        if assignment.intro:
            person.post(url + "intro")
        person.post(url + "submit", {"position": assignment.position, "text": f"a red kite over {assignment.task.task_id}, flat poster"})
    participant.refresh_from_db()
    return participant


def test_the_human_rows_are_released_when_they_are_rebuilt_not_when_the_board_is_downloaded(client, team, sample_pack, example_prompts):
    from studies.services import participant_withdraw

    key_create()
    publish(team, sample_pack, example_prompts)
    first = latest()
    assert first.number == 1 and board_json(first)["humans"]["rows"] == []

    participant = participant_done(sample_pack)  # finishing rebuilds the human rows: the release job follows
    assert participant.submission.status == "done"
    second = latest()
    assert second.number == 2 and second.previous == first.digest
    rows = board_json(second)["humans"]["rows"]
    assert rows and {r["tier"] for r in rows} >= {"all"} and all(r["participants"] == 1 for r in rows)
    assert len(member(second, "humans.jsonl").splitlines()) == 1
    assert second.digest in cited(client, sample_pack) and first.digest not in cited(client, sample_pack)

    participant_withdraw(participant=participant)  # the rows are rebuilt without them: released again
    third = latest()
    assert third.number == 3 and board_json(third)["humans"]["rows"] == [] and member(third, "humans.jsonl") == b""
    assert third.digest in cited(client, sample_pack)


def test_a_predictor_installed_and_its_predictions_are_released_at_once(team, sample_pack, example_prompts, settings, trained, tmp_path):
    from evaluation.difficulty import predict_submission
    from tasks.difficulty import predictor_written

    key_create()
    made = publish(team, sample_pack, example_prompts)  # no predictor yet: the release has no difficulty block
    assert latest().number == 1 and board_json(latest())["difficulty"] is None

    settings.ATELIER_DIFFICULTY_MODEL = tmp_path / "models" / "difficulty"
    shutil.copytree(trained[0], settings.ATELIER_DIFFICULTY_MODEL)
    predictor_written(settings.ATELIER_DIFFICULTY_MODEL)  # what train_difficulty and combine_difficulty call once installed
    installed = latest()
    assert installed.number == 2 and board_json(installed)["difficulty"]["predictor"] == trained[1]["version"]
    assert all(json.loads(line)["predicted_score"] is None for line in member(installed, "breakdown.jsonl").splitlines())

    assert predict_submission(made.pk) > 0  # the difficulty job's work: the prompts scored, the board released
    predicted = latest()
    assert predicted.number == 3 and predicted.previous == installed.digest
    rows = [json.loads(line) for line in member(predicted, "breakdown.jsonl").splitlines()]
    assert rows and all(r["predicted_score"] is not None and r["difficulty_predictor"] == trained[1]["version"] for r in rows)
    assert board_json(predicted)["difficulty"]["rows"]  # the agreement with the judge, now that prompts are predicted
