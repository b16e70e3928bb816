"""The extended route on the site (safety gates, text rendering, faithfulness, colour shift), the one safety
gate shared with the library, and a judge whose template changed: a new version, new calls."""

from __future__ import annotations

import csv
import io
import json
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from evaluation import judging, runtime
from evaluation.models import Judgement, Submission, UnitStatus
from evaluator.judge import messages
from submissions.services import submission_create, submissions_publish
from tests.openai_server import SCRIPTED_BLOCK_MARKER

BLOCKED_PROMPT = f"Flat seed packet, three orange tomatoes, SUNSET PEAR {SCRIPTED_BLOCK_MARKER}"
PROMPTS = [
    {"task_id": "co-s01", "prompt": BLOCKED_PROMPT},
    {"task_id": "co-s02", "prompt": "Deep blue sign, white arrow pointing right below the words FOSSIL HALL"},
    {"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"},
    {"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"},
]


@pytest.fixture
def extended(settings, scripted_judge):
    settings.ATELIER_JUDGE_ROUTE = "extended"
    runtime.reset()
    return scripted_judge


def submit(team, pack, prompts=PROMPTS) -> Submission:
    data = "\n".join(json.dumps(p) for p in prompts).encode()
    submission = submission_create(team=team, pack=pack, prompter="extended", filename="p.jsonl", data=data)
    submission.refresh_from_db()
    assert submission.status == "done", submission.error
    return submission


def download(client, submission: Submission, fmt: str) -> bytes:
    response = client.get(f"/submissions/{submission.pk}/breakdown.{fmt}")
    assert response.status_code == 200
    return b"".join(response.streaming_content)


@pytest.mark.django_db(transaction=True)
def test_extended_route_end_to_end_on_the_site(team, sample_pack, extended, client, capsys):
    call_command("render_targets", "--pack", "sample", "--backend", "smoke-sd-fast", "--candidates", "2")
    sample_pack.refresh_from_db()
    submission = submit(team, sample_pack)
    blocked = Judgement.objects.filter(submission=submission, entry__task__task_id="co-s01")
    assert set(blocked.values_list("status", flat=True)) == {UnitStatus.BLOCKED} and not blocked.exclude(value=None).exists()
    others = Judgement.objects.filter(submission=submission).exclude(entry__task__task_id="co-s01")
    skills = set(others.values_list("skill", flat=True))
    assert {"safety_prompt", "safety_image", "faithfulness", "text_rendering", "color_shift", "target_similarity"} <= skills
    assert not others.filter(status__in=[UnitStatus.FAILED, UnitStatus.BLOCKED]).exists()
    assert set(others.exclude(skill__startswith="safety").values_list("scale", flat=True)) >= {
        "likert_1_5",
        "rate_0_1",
        "score_0_100",
        "distance_0_1",
    }

    page = client.get(f"/submissions/{submission.pk}/")  # the owner is not logged in: published first
    assert page.status_code == 404
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    page = client.get(f"/submissions/{submission.pk}/")
    assert page.status_code == 200 and "blocked" in page.content.decode() and "color_shift" in page.content.decode()
    rows = list(csv.DictReader(io.StringIO(download(client, submission, "csv").decode())))
    co = [r for r in rows if r["task_id"] == "co-s01"]
    assert co and all(r["safety_prompt"] == "blocked" and r["prompt_subjective"] == "" for r in co)
    im = [r for r in rows if r["task_id"] == "im-s01"]
    assert im and all(0 <= float(r["target_similarity"]) <= 100 and 0 <= float(r["color_shift"]) <= 1 for r in im)
    assert json.loads(im[0]["scales"])["color_shift"] == "distance_0_1"
    lines = [json.loads(line) for line in download(client, submission, "jsonl").splitlines()]
    assert len(lines) == len(rows) and {line["safety_image"] for line in lines} == {"ok", "blocked"}
    board = client.get("/")
    assert board.status_code == 200 and "extended" in board.content.decode()


def _settled_gate(submission: Submission):
    gate = Judgement.objects.get(submission=submission, entry__task__task_id="co-s01", skill="safety_prompt")
    sibling = Judgement.objects.get(submission=submission, entry__task__task_id="co-s01", skill="prompt_objective")
    return gate, sibling


class GateFinishesMeanwhile:
    """The configured judge, but while it answers one skill the sample's safety gate finishes and blocks it."""

    def __init__(self, inner, gate: Judgement) -> None:
        self.inner, self.gate = inner, gate
        self.spec, self.judge_id, self.label, self.version = inner.spec, inner.judge_id, inner.label, inner.version

    def run(self, skill, *args, **kwargs):
        Judgement.objects.filter(pk=self.gate.pk).update(status=UnitStatus.BLOCKED, reason="blocked by safety_prompt: graphic_violence")
        block = judging.block_of(self.gate.skill, UnitStatus.BLOCKED, "blocked by safety_prompt: graphic_violence")
        judging._block_siblings(self.gate, block)
        return self.inner.run(skill, *args, **kwargs)


@pytest.mark.django_db(transaction=True)
def test_a_late_result_never_overwrites_a_blocked_judgement(team, sample_pack, extended, monkeypatch):
    submission = submit(team, sample_pack, PROMPTS[:1])
    gate, sibling = _settled_gate(submission)
    # Replay the race: the gate has not finished yet, the checklist job is running.
    Judgement.objects.filter(pk=gate.pk).update(status=UnitStatus.PENDING, reason="")
    Judgement.objects.filter(pk=sibling.pk).update(status=UnitStatus.PENDING, reason="", value=None, calls=0, cache_key="")
    racing = GateFinishesMeanwhile(runtime.judge(), gate)
    monkeypatch.setattr(judging, "runtime", SimpleNamespace(judge=lambda: racing))
    calls_before = len(extended.requests)
    judging.judge_unit(sibling.pk)
    sibling.refresh_from_db()
    assert sibling.status == UnitStatus.BLOCKED and sibling.value is None and sibling.reason.startswith("blocked by safety_prompt")
    assert len(extended.requests) == calls_before + 1 and sibling.calls == 1  # the late call happened and is counted


@pytest.mark.django_db(transaction=True)
def test_a_sample_already_blocked_is_stopped_before_any_call(team, sample_pack, extended):
    submission = submit(team, sample_pack, PROMPTS[:1])
    _, sibling = _settled_gate(submission)
    Judgement.objects.filter(pk=sibling.pk).update(status=UnitStatus.PENDING, reason="", value=None)
    calls_before = len(extended.requests)
    judging.judge_unit(sibling.pk)
    sibling.refresh_from_db()
    assert sibling.status == UnitStatus.BLOCKED and len(extended.requests) == calls_before
    image_side = Judgement.objects.filter(submission=submission, skill="image_objective").first()
    Judgement.objects.filter(pk=image_side.pk).update(status=UnitStatus.PENDING)
    judging.judge_unit(image_side.pk)  # a prompt-side block stops the image side too
    assert Judgement.objects.get(pk=image_side.pk).status == UnitStatus.BLOCKED and len(extended.requests) == calls_before


@pytest.mark.django_db(transaction=True)
def test_a_template_edit_makes_a_new_judge_version_and_rescoring_calls_again(team, sample_pack, scripted_judge, monkeypatch):
    prompts = [{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"}]
    submission = submit(team, sample_pack, prompts)
    old_version, calls = submission.judge_version, len(scripted_judge.requests)
    call_command("rescore", "--submission", str(submission.pk))
    assert len(scripted_judge.requests) == calls  # unchanged judge: every reply reused

    monkeypatch.setattr(messages, "_ROLE", messages._ROLE + " Judge the lighting with extra care.")
    runtime.reset()
    call_command("rescore", "--submission", str(submission.pk))
    submission.refresh_from_db()
    assert submission.status == "done" and submission.judge_version != old_version
    assert len(scripted_judge.requests) > calls  # no old reply was reused for the new templates
    assert "Judge the lighting with extra care." in scripted_judge.requests[-1]["messages"][0]["content"]
    versions = set(submission.figures.filter(scope="overall").values_list("judge_version", flat=True))
    assert versions == {old_version, submission.judge_version}
    new = Judgement.objects.filter(submission=submission, judge_version=submission.judge_version)
    assert new.exists() and not new.filter(cached=True).exists()
