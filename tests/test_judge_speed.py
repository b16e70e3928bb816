"""The judge's speed settings change no number: the same inputs judged with the memo, batched images and trimmed
CLIP text give every field of every result bit for bit as the plain path does (memo, batching, trimming off);
and the settings switch as documented."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
import torch
from django.core.management import call_command
from PIL import Image

from evaluation import judging
from evaluation.judging import target_for
from evaluation.models import Judgement
from evaluation.units import task_input
from evaluator.judge import encoders
from evaluator.judge.config import DEFAULTS, JudgeConfig
from evaluator.judge.embedding_judge import EmbeddingJudge
from evaluator.judge.routes import route_for_task
from evaluator.judge.skills import get_skill
from evaluator.judge.types import Side, TargetInput, TaskInput
from submissions.services import submission_create

# Both ways on one thread: the thread count is a setting of its own (its default, torch's, is what judged before),
# and one thread keeps these tests quick on a busy machine.
PLAIN = {"memo": False, "batch": False, "trim_text": False, "threads": 1}
CLIP = (DEFAULTS.clip_model, "random")


@pytest.fixture(autouse=True)
def _fresh():
    encoders._embeddings.clear()
    judging._embedded_ahead.clear()
    yield
    encoders._embeddings.clear()
    judging._embedded_ahead.clear()


def noise(seed: int, size: int = 64) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8))


def test_judging_the_same_inputs_both_ways_gives_identical_results():
    task = TaskInput(
        task_id="im-x",
        category="IM",
        title="Fox",
        brief="A fox in snow, poster style",
        constraints={},
        prompt_checklist=("The prompt names a red fox", "The prompt mentions snow", "The prompt asks for a flat poster style"),
        image_checklist=(
            "A red fox is the main subject",
            "Snow covers the ground",
            "The style is a flat poster",
            "The sky is pale",
            "The fox faces left",
            "There is no text",
        ),
    )
    prompt = "A red fox standing in deep snow, flat poster style. Pale sky, the fox faces left"
    renders = [noise(k) for k in range(4)]
    target = TargetInput(image=noise(100), reference=noise(101))
    judge = EmbeddingJudge(JudgeConfig(clip_model=CLIP[0], clip_pretrained=CLIP[1]))
    skills = route_for_task(task, judge.route)

    def judge_all(ahead: bool) -> list[dict]:
        if ahead:
            assert encoders.remember_images([*renders, target.image, target.reference], *CLIP) == 6
        out = [judge.run(s, task, prompt) for s in skills if get_skill(s).side == Side.PROMPT]
        out += [judge.run(s, task, prompt, image, target=target) for image in renders for s in skills if get_skill(s).side == Side.IMAGE]
        return [dataclasses.asdict(r) for r in out]

    with encoders.speed_settings(**PLAIN):
        plain = judge_all(ahead=False)
    with encoders.speed_settings(threads=1):
        fast = judge_all(ahead=True)
    assert {r["skill"] for r in fast if r["status"] == "ok"} >= {"prompt_objective", "image_objective", "target_similarity"}
    assert fast == plain


def test_clip_text_keeps_the_plain_forwards_bits_and_trims_only_where_this_machine_proves_it():
    """Whether the trimmed forward rounds like the plain one depends on the machine's kernels (it does on some CPUs,
    not on others): _encode_text probes the first batch and keeps to the plain forward on a mismatch, so what it
    returns is the plain forward's bits either way."""
    model, _, tokenizer = encoders.clip_model(*CLIP)
    batches = [
        ["a red fox", "snow covers the ground", "the style is a flat poster", "the sky is pale", "x"],
        [f"item {k}: " + "word " * (3 * k) for k in range(8)],
    ]
    encoders._trim_checked.pop(id(model), None)
    with torch.no_grad():
        first = tokenizer(batches[0])
        proven = torch.equal(encoders._trimmed_text(model, first), model.encode_text(first))
        for texts in batches:
            tokens = tokenizer(texts)
            assert encoders._trimmable(model, tokens)
            for _ in range(2):  # the probing call, then the decided one
                assert torch.equal(encoders._encode_text(model, tokens), model.encode_text(tokens))
    assert encoders._trim_checked[id(model)] == proven  # the probe's verdict is the truth for the batch it tried
    print(f"trimmed CLIP text forward {'used' if proven else 'not used: its bits differ'} on this machine")
    assert not encoders._trimmable(model, tokenizer(["one"]))  # too few rows to round like the full product


@pytest.mark.django_db(transaction=True)
def test_judging_jobs_batch_an_entrys_images_and_store_the_plain_paths_numbers(team, sample_pack, monkeypatch):
    call_command(
        "render_targets", "--pack", "sample", "--backend", "smoke-sd-fast", "--candidates", "2", "--references", stdout=io.StringIO()
    )
    sample_pack.refresh_from_db()
    batched = []
    remember = encoders.remember_images
    monkeypatch.setattr(encoders, "remember_images", lambda images, *clip: batched.append(remember(images, *clip)) or batched[-1])
    monkeypatch.setattr(encoders, "_speed", encoders.Speed(threads=1))  # the defaults, on one thread (see PLAIN)
    data = b'{"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"}\n'
    submission = submission_create(team=team, pack=sample_pack, prompter="m", filename="p.jsonl", data=data)
    submission.refresh_from_db()
    assert submission.status == "done", submission.error
    assert batched and max(batched) >= 3  # an IM entry: two renders, the target and references in one forward
    judge = EmbeddingJudge(JudgeConfig(clip_model=CLIP[0], clip_pretrained=CLIP[1]))
    judged = Judgement.objects.filter(submission=submission, status="ok").select_related("entry__task", "render")
    assert {j.skill for j in judged} >= {"image_objective", "target_similarity", "prompt_objective"}
    with encoders.speed_settings(**PLAIN):
        for j in judged:
            image = judging._image(j.render)
            target = target_for(j.entry.task, j.render.config_hash) if j.render else None  # as the job passes it
            again = judge.run(j.skill, task_input(j.entry.task), j.entry.text, image, target=target)
            stored = {name: getattr(j, name) for name in ("status", "value", "scores", "checklist", "rationales", "raw", "details")}
            assert stored == {name: getattr(again, name) for name in stored}, j.skill


def test_thread_setting_parses_and_pins_the_forward(monkeypatch, request):
    assert encoders.threads_from_env("") is None and encoders.threads_from_env("0") is None
    assert encoders.threads_from_env("1") == 1 and encoders.threads_from_env(" 3 ") == 3
    for bad in ("two", "-1", "1.5"):
        with pytest.raises(ValueError, match="ATELIER_TORCH_THREADS"):
            encoders.threads_from_env(bad)
    monkeypatch.setattr(encoders, "_speed", None)
    monkeypatch.setenv("ATELIER_TORCH_THREADS", "1")
    assert encoders.speed().threads == 1 and encoders.torch_threads() == 1
    model, _, _ = encoders.clip_model(*CLIP)
    original_threads = torch.get_num_threads()
    request.addfinalizer(lambda: torch.set_num_threads(original_threads))
    torch.set_num_threads(3)  # not the pinned 1, whatever OMP_NUM_THREADS the suite runs with (scripts/test: 1)
    seen, before = [], torch.get_num_threads()
    original = model.encode_image
    monkeypatch.setattr(model, "encode_image", lambda pixels: seen.append(torch.get_num_threads()) or original(pixels))
    encoders.image_embeddings([noise(1)], *CLIP)
    assert seen == [1] and torch.get_num_threads() == before  # pinned for the forward, restored after
    with encoders.speed_settings(threads=None):
        encoders.image_embeddings([noise(2)], *CLIP)
    assert seen == [1, before]


def test_memo_and_batching_switch_off(monkeypatch):
    model, _, _ = encoders.clip_model(*CLIP)
    calls = []
    original = model.encode_image
    monkeypatch.setattr(model, "encode_image", lambda pixels: calls.append(len(pixels)) or original(pixels))
    images = [noise(1), noise(2), noise(3)]
    with encoders.speed_settings(memo=False):
        assert encoders.remember_images(images, *CLIP) == 0
        first, again = encoders.image_embeddings(images[:1], *CLIP), encoders.image_embeddings(images[:1], *CLIP)
        assert calls == [1, 1] and np.array_equal(first, again) and first is not again
    assert encoders.speed().memo  # restored
    with encoders.speed_settings(batch=False):
        assert encoders.remember_images(images, *CLIP) == 0
    assert encoders.remember_images(images, *CLIP) == 3 and encoders.remember_images(images, *CLIP) == 0  # once
    calls.clear()
    rows = [encoders.image_embeddings([i], *CLIP) for i in images]
    assert calls == [] and all(np.array_equal(r, encoders.image_embeddings([i], *CLIP)) for r, i in zip(rows, images))


def test_a_stored_image_is_decoded_once_per_storage_root(settings, tmp_path):
    """The units of one render share one decoded image; the key holds the storage root, so another root's file of the
    same name (another test's media, another deployment's) is read afresh."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from evaluation.models import Render

    def png(color) -> ContentFile:
        buffer = io.BytesIO()
        Image.new("RGB", (4, 4), color).save(buffer, format="PNG")
        return ContentFile(buffer.getvalue())

    name = default_storage.save("renders/aa/same-name.png", png((200, 0, 0)))
    first = judging._open(Render(image=name).image)
    default_storage.delete(name)  # nothing to read any more: the second open must come from memory
    assert judging._open(Render(image=name).image) is first and first.getpixel((0, 0)) == (200, 0, 0)
    settings.MEDIA_ROOT = tmp_path / "elsewhere"
    assert default_storage.save(name, png((0, 0, 200))) == name
    assert judging._open(Render(image=name).image).getpixel((0, 0)) == (0, 0, 200)
