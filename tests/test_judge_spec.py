"""The judge spec: every template, threshold and weight identity that decides an answer is in the judge version."""

from __future__ import annotations

import pytest

from evaluator.judge import (
    EmbeddingJudge,
    EnsembleJudge,
    JudgeConfig,
    OpenAIJudge,
    clip_weights_identity,
    embedding_judge,
    messages,
    metric_skills,
)

URL = "http://127.0.0.1:9/v1"


def online(**kwargs: object) -> OpenAIJudge:
    return OpenAIJudge(JudgeConfig(**{"base_url": URL, "model": "m", "clip_pretrained": "random", **kwargs}))  # type: ignore[arg-type]


def test_the_same_configuration_gives_the_same_version() -> None:
    assert online().version == online().version and EmbeddingJudge().version == EmbeddingJudge().version
    assert online().version.startswith("rubric-v2+") and len(online().version) <= 40  # fits Judgement.judge_version
    # the endpoint's address is shown in the label but is not part of what decides the answers
    assert online(base_url="http://10.0.0.1:8000/v1").version == online().version


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("the role text", lambda mp: mp.setattr(messages, "_ROLE", messages._ROLE + " Be kind.")),
        ("a checklist instruction", lambda mp: mp.setitem(messages._WHAT_IS_JUDGED, next(iter(messages._WHAT_IS_JUDGED)), "Score it.")),
        ("the calibration intro", lambda mp: mp.setattr(messages, "CALIBRATION_INTRO", "Examples:")),
        (
            "the repair turn",
            lambda mp: mp.setattr(messages, "repair_messages", lambda reply, problem: [{"role": "user", "content": problem}]),
        ),
        ("a key header", lambda mp: mp.setattr(messages, "ITEMS_HEADER", "Items:")),
        ("the CLIP score constants", lambda mp: mp.setattr(metric_skills, "ALPHA", -150.0)),
    ],
)
def test_editing_a_template_or_constant_makes_a_new_version(monkeypatch: pytest.MonkeyPatch, name: str, edit) -> None:
    before = online().version
    edit(monkeypatch)
    assert online().version != before, name


def test_settings_that_change_answers_make_a_new_version() -> None:
    base = online().version
    variants = {
        "image size": online(image_max_side=256).version,
        "repairs": online(repair_attempts=0).version,
        "route": online(route="extended").version,
        "clip model": online(clip_model="ViT-B-16").version,
        "model": online(model="other").version,
    }
    assert base not in variants.values() and len(set(variants.values())) == len(variants)


def test_offline_thresholds_are_part_of_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = EmbeddingJudge().version
    monkeypatch.setattr(embedding_judge, "PROMPT_ITEM_THRESHOLD", 0.45)
    assert EmbeddingJudge().version != before


def test_clip_weights_are_identified_by_content(tmp_path) -> None:
    checkpoint = tmp_path / "clip.bin"
    checkpoint.write_bytes(b"weights one")
    first = clip_weights_identity(str(checkpoint))
    assert first.startswith("file:clip.bin@sha256:") and clip_weights_identity(None) == clip_weights_identity("random") == "random"
    assert clip_weights_identity("laion2b_s34b_b79k") == "tag:laion2b_s34b_b79k"
    random_version = online(clip_pretrained="random").version
    file_version = online(clip_pretrained=str(checkpoint)).version
    checkpoint.write_bytes(b"weights two, retrained")
    assert clip_weights_identity(str(checkpoint)) != first
    assert len({random_version, file_version, online(clip_pretrained=str(checkpoint)).version}) == 3


def test_labels_say_smoke_when_clip_has_random_weights(tmp_path) -> None:
    checkpoint = tmp_path / "clip.bin"
    checkpoint.write_bytes(b"weights")
    assert "smoke (random weights)" in online(clip_pretrained="random").label and online(clip_pretrained="random").spec.smoke
    trained = online(clip_pretrained=str(checkpoint))
    assert "smoke" not in trained.label and not trained.spec.smoke and "file:clip.bin@sha256:" in trained.label
    assert "smoke (random weights)" in EmbeddingJudge().label


def test_an_ensemble_version_covers_its_members() -> None:
    pair = EnsembleJudge([online(), online(model="n")])
    assert pair.version != EnsembleJudge([online(), online(model="n", repair_attempts=0)]).version
    assert pair.spec.document()["members"][0] == online().spec.document()
