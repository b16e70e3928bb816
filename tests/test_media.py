"""Media with the pages' permissions: renders of unpublished submissions are private, names cannot be guessed."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from evaluation.models import Exemplar, Render, Submission
from submissions.services import submission_create, submissions_publish
from tasks.models import TargetReference, Task

PROMPT = b'{"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"}\n'


@pytest.fixture
def rendered(team, sample_pack):
    """One unpublished submission with its renders (in-process, the offline judge)."""
    submission = submission_create(team=team, pack=sample_pack, prompter="private", filename="p.jsonl", data=PROMPT)
    submission.refresh_from_db()
    assert submission.status == "done", submission.error
    return submission


def url_of(render: Render) -> str:
    return render.image.url


@pytest.mark.django_db(transaction=True)
def test_renders_are_named_by_content_and_private_until_published(rendered, client, owner, stranger, admin_user):
    render = Render.objects.filter(entry__submission=rendered).first()
    assert re.fullmatch(r"renders/[0-9a-f]{2}/[0-9a-f]{64}\.png", render.image.name) and render.image.name.endswith(f"{render.sha256}.png")
    url = url_of(render)
    assert client.get(url).status_code == 404  # anonymous
    client.force_login(stranger)
    assert client.get(url).status_code == 404  # another team
    client.force_login(owner)
    mine = client.get(url)
    assert (
        mine.status_code == 200 and mine["Cache-Control"] == "private, no-store" and b"".join(mine.streaming_content).startswith(b"\x89PNG")
    )
    client.force_login(admin_user)
    assert client.get(url).status_code == 200  # staff
    client.logout()
    submissions_publish(submissions=Submission.objects.filter(pk=rendered.pk))
    public = client.get(url)
    assert public.status_code == 200 and "immutable" in public["Cache-Control"] and public["Content-Type"] == "image/png"


@pytest.mark.django_db(transaction=True)
def test_a_shared_image_is_public_through_the_published_submission_only(rendered, team, sample_pack, client):
    again = submission_create(team=team, pack=sample_pack, prompter="published twin", filename="p.jsonl", data=PROMPT)
    shared = Render.objects.filter(entry__submission=again).first()
    assert Render.objects.filter(image=shared.image.name).count() == 2  # the same prompt and seed: one file
    submissions_publish(submissions=Submission.objects.filter(pk=again.pk))
    assert client.get(url_of(shared)).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_targets_are_public_references_and_exemplars_staff_only(sample_pack, client, admin_user, tmp_path):
    call_command("render_targets", "--pack", "sample", "--backend", "smoke-sd-fast", "--candidates", "2", "--references")
    target = Task.objects.exclude(target_image="").first()
    reference = TargetReference.objects.first()
    assert client.get(target.target_image.url).status_code == 200
    assert client.get(reference.image.url).status_code == 404
    exemplar = tmp_path / "ex.png"
    target.target_image.open("rb")
    exemplar.write_bytes(target.target_image.read())
    lines = '{"side": "image", "category": "IM", "task_id": "im-s01", "image": "ex.png", "scores": {"mood_atmosphere": 3, "visual_composition": 3, "color_lighting": 3, "technical_flawlessness": 3}}'
    (tmp_path / "ex.jsonl").write_text(lines)
    call_command("import_exemplars", str(tmp_path / "ex.jsonl"))
    exemplar_url = Exemplar.objects.get().image.url
    assert client.get(exemplar_url).status_code == 404
    client.force_login(admin_user)
    assert client.get(reference.image.url).status_code == 200 and client.get(exemplar_url).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_unknown_paths_and_traversal_are_404_and_accel_redirect_hands_over(rendered, client, admin_user, settings):
    client.force_login(admin_user)
    for path in ("/media/renders/00/nothing.png", "/media/../atelier/settings.py", "/media/renders/../../db.sqlite3", "/media/tasks.json"):
        assert client.get(path).status_code == 404, path
    settings.ATELIER_MEDIA_ACCEL_REDIRECT = "/protected-media/"
    render = Render.objects.filter(entry__submission=rendered).first()
    response = client.get(url_of(render))
    assert (
        response.status_code == 200 and response["X-Accel-Redirect"] == f"/protected-media/{render.image.name}" and response.content == b""
    )
