"""cache_key: stable for equal inputs, different when any input changes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from PIL import Image

from evaluator.judge import Exemplar, TargetInput, TaskInput, cache_key
from evaluator.judge.cache import image_digest

TASK = TaskInput("co-1", "CO", "Sign", "A sign.", {"text": "'OPEN'", "layout": ""}, ("a sign",), ("the word 'OPEN'",))


def picture(color: tuple[int, int, int] = (10, 20, 30)) -> Image.Image:
    return Image.new("RGB", (12, 8), color)


EXEMPLAR = Exemplar(
    "e1", "co-2", "CO", "prompt", text="A red sign", scores={"instructional_clarity": 4}, notes={"instructional_clarity": "ok"}
)
BASE = {
    "skill": "prompt_subjective",
    "judge_id": "openai:m",
    "version": "rubric-v2",
    "task": TASK,
    "prompt": "a sign",
    "image": picture(),
    "exemplars": (EXEMPLAR,),
    "target": TargetInput(picture((1, 1, 1))),
}


def key(**changes: object) -> str:
    return cache_key(**{**BASE, **changes})  # type: ignore[arg-type]


def test_stable_and_hex() -> None:
    first = key()
    assert len(first) == 64 and int(first, 16) >= 0
    # equal content in new objects (images re-created, dict order changed) gives the same key
    same_task = replace(TASK, constraints={"layout": "", "text": "'OPEN'"})
    assert key(task=same_task, image=picture(), target=TargetInput(picture((1, 1, 1)))) == first
    assert (
        key(
            exemplars=[
                Exemplar(
                    "e1",
                    "co-2",
                    "CO",
                    "prompt",
                    text="A red sign",
                    scores={"instructional_clarity": 4},
                    notes={"instructional_clarity": "ok"},
                )
            ]
        )
        == first
    )


def test_sensitive_to_every_input() -> None:
    changed_pixel = picture()
    changed_pixel.putpixel((3, 3), (10, 20, 31))
    variants = {
        "skill": key(skill="image_subjective"),
        "judge": key(judge_id="openai:other"),
        "version": key(version="rubric-v3"),
        "task brief": key(task=replace(TASK, brief="A sign!")),
        "task checklist": key(task=replace(TASK, image_checklist=("the word 'CLOSED'",))),
        "task constraint": key(task=replace(TASK, constraints={"text": "'OPEN'", "layout": "left"})),
        "prompt": key(prompt="a sign."),
        "image pixels": key(image=changed_pixel),
        "image size": key(image=picture().resize((12, 9))),
        "no image": key(image=None),
        "exemplar scores": key(exemplars=(replace(EXEMPLAR, scores={"instructional_clarity": 5}),)),
        "exemplar notes": key(exemplars=(replace(EXEMPLAR, notes={"instructional_clarity": "good"}),)),
        "exemplar text": key(exemplars=(replace(EXEMPLAR, text="A blue sign"),)),
        "no exemplars": key(exemplars=()),
        "exemplar order": key(exemplars=(EXEMPLAR, replace(EXEMPLAR, exemplar_id="e2"))),
        "exemplar order 2": key(exemplars=(replace(EXEMPLAR, exemplar_id="e2"), EXEMPLAR)),
        "target": key(target=TargetInput(picture((1, 1, 2)))),
        "reference": key(target=TargetInput(picture((1, 1, 1)), reference=picture())),
        "no target": key(target=None),
    }
    keys = list(variants.values()) + [key()]
    assert len(set(keys)) == len(keys), {n: k for n, k in variants.items() if keys.count(k) > 1}


def test_images_hashed_by_png_bytes() -> None:
    import io

    buffer = io.BytesIO()
    picture().save(buffer, format="PNG")
    assert image_digest(picture()) == hashlib.sha256(buffer.getvalue()).hexdigest()
    assert image_digest(None) is None
    assert json.dumps(key())  # a plain string


def test_an_image_is_encoded_once_while_it_lives(monkeypatch) -> None:
    import gc

    from evaluator.judge import cache

    encoded, real_save = [], Image.Image.save
    monkeypatch.setattr(Image.Image, "save", lambda self, *a, **k: (encoded.append(self), real_save(self, *a, **k))[1])
    image = picture((5, 6, 7))
    first = image_digest(image)
    assert image_digest(image) == first and len(encoded) == 1  # the second ask is answered from memory
    assert image_digest(picture((5, 6, 7))) == first and len(encoded) == 2  # another object is encoded: same pixels, same digest
    held = len(cache._digests)
    del image, encoded[:]
    gc.collect()
    assert len(cache._digests) < held  # forgotten with the object, so a new object at the same address starts afresh
