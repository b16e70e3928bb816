"""A participant's withdrawal deletes every stored file of theirs that nothing else names; files are stored by content,
so one shared with another submission stays. Checked by listing MEDIA_ROOT before and after, through the site."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evaluation.erasure import file_fields
from evaluation.models import Render, Submission
from studies.models import Participant
from studies.services import study_create
from tests.test_studies import NOVICE, do_all_tasks, link, start


def media(settings) -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_every_file_field_of_the_project_is_found():
    found = {f"{f.model._meta.label}.{f.name}" for f in file_fields()}
    assert found == {
        "tasks.Task.target_image",
        "tasks.TaskVersion.target_image",
        "tasks.TargetReference.image",
        "evaluation.Render.image",
        "evaluation.PromptCall.feedback_image",
        "studies.Attempt.image",
        "evaluation.Exemplar.image",
    }


def test_withdrawal_deletes_the_participants_files_and_keeps_one_another_submission_shares(client, sample_pack, owner, team, settings):
    study = study_create(name="Files", pack=sample_pack, per_category=1, rounds=1)
    url = link(study)
    participant = start(client, url, NOVICE)
    do_all_tasks(client, url, participant)
    participant = Participant.objects.get(pk=participant.pk)
    assert participant.submission.status == "done"
    theirs = set(Render.objects.filter(entry__submission=participant.submission).values_list("image", flat=True))
    assert len(theirs) == 6 and all(theirs)  # 3 tasks × the 2 test backends, one image each

    # A team uploads the participant's very prompt for one task: the same text and seed render the same bytes, one file.
    copied = participant.assignments.order_by("position").first()
    team_client = Client()
    team_client.force_login(owner)
    upload = SimpleUploadedFile("p.jsonl", json.dumps({"task_id": copied.task.task_id, "prompt": copied.text}).encode())
    assert (
        team_client.post(f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "copycat", "file": upload}).status_code == 302
    )
    shared = set(Render.objects.filter(entry__submission__team=team).values_list("image", flat=True))
    assert len(shared) == 2 and shared < theirs

    before = media(settings)
    assert theirs <= before
    assert "were deleted" in client.post(url + "withdraw", {"confirm": "yes"}).content.decode()
    after = media(settings)
    print(
        f"media files: {len(before)} before withdrawal, {len(after)} after; the participant's {len(theirs)}, {len(shared)} of them shared"
    )
    assert before - after == theirs - shared  # their own files went, and nothing else
    assert shared <= after and not after - before
    assert not Submission.objects.filter(origin="human").exists()
    render = Render.objects.filter(entry__submission__team=team).first()
    assert render.image.storage.exists(render.image.name)  # the team's entry still shows its image
