"""A submission is judged against the pack revision it was made for (issue 41: one made at revision 3 was judged with
revision 4's checklist, the pack reloaded while it queued, and its figures went to the revision-3 board).

The upload and the reload share one transaction, so the jobs the upload enqueued run only after the pack changed:
the whole pipeline (an endpoint run's prompting too, then render, judge, finish) runs at revision 2 on a submission
made at revision 1."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from PIL import Image

from evaluation import runtime
from evaluation.models import BoardStats, Figure, Judgement, PromptEntry, Render, Submission
from submissions.services import endpoint_create, endpoint_run_create, submission_create, submissions_publish
from tasks.loaders import read_own_pack
from tasks.services import pack_save
from tests.openai_server import image_parts, request_text

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tasks" / "packs" / "sample"
ADDED = " The shop cat sits on the counter."  # revision 2's addition to oe-s01's brief
PROMPTS = (
    b'{"task_id": "oe-s01", "prompt": "Gouache bread loaves in warm morning light, no text"}\n'
    b'{"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"}\n'
)


def revision_two(tmp_path: Path) -> Path:
    """The sample pack with oe-s01's brief and checklists longer and im-s01's seed prompt and target image changed."""
    pack = tmp_path / "sample"
    shutil.copytree(SAMPLE, pack)
    for name, task_id, change in (
        ("oe.jsonl", "oe-s01", {"brief": ADDED, "prompt_checklist": ["The prompt names a cat"], "image_checklist": ["A cat is shown"]}),
        ("im.jsonl", "im-s01", {"seed_prompt": " Green moon."}),
    ):
        rows = [json.loads(line) for line in (pack / name).read_text().splitlines() if line.strip()]
        for row in rows:
            if row["task_id"] == task_id:
                row.update({k: row[k] + v for k, v in change.items()})
        (pack / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    Image.new("RGB", (256, 256), (20, 160, 60)).save(pack / "targets" / "im-s01.png")
    return pack


def spy_on_the_judge(monkeypatch) -> list[tuple]:
    """Every (skill, task, target) the judge is asked to score with; its answers are the real ones."""
    judge, seen = runtime.judge(), []
    run = judge.run

    def recording(skill, task, *args, **kwargs):
        seen.append((skill, task, kwargs.get("target")))
        return run(skill, task, *args, **kwargs)

    monkeypatch.setattr(judge, "run", recording)
    return seen


def test_a_reload_while_queued_leaves_judging_on_the_revision_submitted_to(team, sample_pack, scripted_judge, tmp_path, monkeypatch):
    seen = spy_on_the_judge(monkeypatch)
    with transaction.atomic():  # the upload's jobs are sent when this commits: after the reload
        submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS)
        reloaded, counts = pack_save(data=read_own_pack(revision_two(tmp_path)))
    assert (counts["changed"], reloaded.revision) == (2, 2)
    submission.refresh_from_db()
    assert (submission.status, submission.pack_revision) == ("done", 1), submission.error

    first = {t.task_id: t for t in read_own_pack(SAMPLE).tasks}
    judged = {(task.task_id, task.prompt_checklist, task.image_checklist) for _, task, _ in seen}
    assert judged == {(t, tuple(first[t].prompt_checklist), tuple(first[t].image_checklist)) for t in ("oe-s01", "im-s01")}
    stored = Judgement.objects.get(submission=submission, entry__task__task_id="oe-s01", skill="prompt_objective")
    assert sorted(stored.checklist) == sorted(first["oe-s01"].prompt_checklist)  # jsonb keeps no key order
    targets = [target for _, task, target in seen if target is not None]
    revision_one_target = Image.open(SAMPLE / "targets" / "im-s01.png").convert("RGB").tobytes()
    assert targets and all(target.image.tobytes() == revision_one_target for target in targets)
    configs = runtime.backend_configs()
    assert all(r.seed in configs[r.backend].seeds_for(r.entry.task.task_id, 0) for r in Render.objects.filter(entry__submission=submission))

    assert Figure.objects.filter(submission=submission).exists()
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    assert list(BoardStats.objects.values_list("revision", flat=True)) == [1]
    assert str(submission.pk) in BoardStats.objects.get().entries


def test_a_submission_whose_revision_is_no_longer_kept_fails_with_the_reason(team, sample_pack, scripted_judge):
    from tasks.models import TaskVersion

    with transaction.atomic():
        submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=PROMPTS)
        TaskVersion.objects.filter(task__task_id="im-s01").delete()  # as for a submission made before revisions were kept
    submission.refresh_from_db()
    assert submission.status == "failed"
    assert "revision 1 of sample v1 is no longer kept (im-s01)" in submission.error
    assert not Render.objects.filter(entry__submission=submission).exists() and not scripted_judge.requests
    done = Submission.objects.create(team=team, pack=sample_pack, prompter="earlier", status="done")
    PromptEntry.objects.create(submission=done, task=sample_pack.tasks.get(task_id="im-s01"), text="A red sun")
    with pytest.raises(CommandError, match=r"revision 1 of sample v1 is no longer kept \(im-s01\).*nothing was changed"):
        call_command("rescore", "--submission", str(done.pk))
    done.refresh_from_db()
    assert done.status == "done"


def test_an_endpoint_run_queued_before_a_reload_shows_the_prompter_its_revision(
    team, sample_pack, prompter_server, scripted_judge, settings, tmp_path
):
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    endpoint = endpoint_create(team=team, name="scripted", base_url=prompter_server.base_url, model="m", api_key="sk-test")
    with transaction.atomic():  # the run starts once this commits: after the reload
        run = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack)
        pack_save(data=read_own_pack(revision_two(tmp_path)))
    run.refresh_from_db()
    assert (run.status, run.pack_revision) == ("done", 1), run.error
    shown = [request_text(r) for r in prompter_server.requests]
    assert any("Hi! Our little neighbourhood bakery" in text for text in shown) and not any(ADDED.strip() in text for text in shown)
    target = "data:image/png;base64," + base64.b64encode((SAMPLE / "targets" / "im-s01.png").read_bytes()).decode()
    assert [image_parts(r) for r in prompter_server.requests if image_parts(r)] == [[target]]  # im-s01's revision-1 target
