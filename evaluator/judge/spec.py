"""The judge spec: everything that decides a judge's answers, built in one place.

A JudgeSpec names the engine (an OpenAI-compatible endpoint, the offline embedding judge,
or an ensemble), its model(s), the route, the rubric version, the CLIP model and the
identity of its weights, the thresholds and settings that change an answer, and a content
hash of every request template. Its fingerprint is the sha256 of all of that; the judge id,
the version (rubric version + fingerprint), every label on the site and (through the
version) every cache key come from it. So editing a template, a threshold or the CLIP
weights yields a new judge version: a new board, and no reuse of old replies.

The template hash renders the request of every model-judged skill for one fixed probe
input (a task with constraints and a quoted string, a prompt, an image and one calibration
exemplar per side) and hashes the messages, with image data replaced by a placeholder (so a
Pillow upgrade that re-encodes PNGs differently does not change the judge; the image size
limit is a parameter of its own). Refactoring the builders without changing what is sent
keeps the version; changing a word of what is sent changes it.

The endpoint (host and port, never credentials) is kept for staff only: it is not part of the
identity (moving a judge to another host keeps its id and version, so its stored judgements
and boards stay one), and no label names it, since every label is shown on public pages.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from PIL import Image

from . import messages, metric_skills
from .config import DEMO_JUDGE_MODEL, JudgeConfigError
from .encoders import RANDOM_WEIGHTS, clip_weights_identity
from .rubrics import Rubric
from .skills import REGISTRY, SkillInput, check_exemplars
from .types import Exemplar, Kind, Side, TaskInput

SMOKE_WORDS = "smoke (random weights)"
DEMO_JUDGE_WORDS = "scripted judge (demo)"  # the label of the demo's judge (config.DEMO_JUDGE_MODEL)
_DATA_URL = re.compile(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+")


@dataclass(frozen=True)
class ClipSpec:
    """The CLIP model the metric skills (and the offline judge's image checklist) use."""

    model: str
    weights: str  # clip_weights_identity(...)

    @property
    def smoke(self) -> bool:
        return self.weights == RANDOM_WEIGHTS

    def describe(self) -> str:
        return f"CLIP {self.model} " + (SMOKE_WORDS if self.smoke else f"({self.weights})")


@dataclass(frozen=True)
class JudgeSpec:
    engine: str  # "openai" | "embedding" | "ensemble"
    models: tuple[str, ...]
    route: str
    base_version: str  # the rubric version (model judges) or the offline judge's scheme
    clip: ClipSpec
    parameters: Mapping[str, Any] = field(default_factory=dict)  # thresholds and settings that change answers
    templates: str = ""  # sha256 of the probe requests ("" for a judge that sends none)
    endpoint: str = ""  # host:port without credentials, for staff pages; in no label and not part of the identity
    members: tuple[JudgeSpec, ...] = ()

    def document(self) -> dict[str, Any]:
        """Everything the fingerprint covers, as plain JSON data."""
        return {
            "engine": self.engine,
            "models": list(self.models),
            "route": self.route,
            "base_version": self.base_version,
            "clip": {"model": self.clip.model, "weights": self.clip.weights},
            "parameters": dict(self.parameters),
            "templates": self.templates,
            "members": [m.document() for m in self.members],
        }

    @cached_property
    def fingerprint(self) -> str:
        canonical = json.dumps(self.document(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        return f"{self.base_version}+{self.fingerprint[:12]}"

    @property
    def smoke(self) -> bool:
        """Whether any figure of this judge may come from random-weight CLIP."""
        return self.clip.smoke or any(m.smoke for m in self.members)

    @property
    def judge_id(self) -> str:
        if self.engine == "ensemble":
            return "ensemble:" + "+".join(m.judge_id for m in self.members)
        if self.engine == "embedding":
            weights = RANDOM_WEIGHTS if self.clip.smoke else self.clip.weights
            return f"embedding:{'+'.join(self.models)}+{self.clip.model}({weights})"
        return f"{self.engine}:{self.models[0]}"

    @property
    def label(self) -> str:
        """What public pages call this judge: the model(s), the route and the CLIP weights, never the endpoint."""
        if self.engine == "ensemble":
            return f"ensemble of {len(self.members)} judges: " + "; ".join(m.label for m in self.members)
        if self.engine == "embedding":
            return f"offline embedding judge (MiniLM + {self.clip.describe()})"
        if self.models[0] == DEMO_JUDGE_MODEL:
            return f"{DEMO_JUDGE_WORDS}: rules, no model, route {self.route}; {self.clip.describe()}"
        return f"AtelierJudge via {self.models[0]}, route {self.route}; {self.clip.describe()}"

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The hosts this judge calls (its members' for an ensemble), for staff pages."""
        found = (self.endpoint,) if self.endpoint else ()
        return tuple(dict.fromkeys([*found, *(e for m in self.members for e in m.endpoints)]))


def endpoint_host(endpoint: str) -> str:
    """host[:port] of a URL or a netloc, without the user and password a URL may carry (user:secret@host)."""
    return urlsplit(endpoint if "//" in endpoint else f"//{endpoint}").netloc.rpartition("@")[2]


def _probe_image() -> Image.Image:
    return Image.new("RGB", (8, 8), (120, 80, 40))


def _probe_inputs(rubric: Rubric, image_max_side: int) -> dict[Side, SkillInput]:
    task = TaskInput(
        "probe-1",
        "CO",
        "Probe",
        "A probe brief.",
        {"text": "'PROBE'", "layout": "centred"},
        ("the prompt names 'PROBE'", "a centred layout"),
        ("the word 'PROBE' is legible", "a centred layout"),
    )
    exemplars = {
        Side.PROMPT: (
            Exemplar(
                "p",
                "probe-2",
                "CO",
                Side.PROMPT,
                text="A probe prompt.",
                scores={"instructional_clarity": 3},
                notes={"instructional_clarity": "n"},
            ),
        ),
        Side.IMAGE: (
            Exemplar("i", "probe-2", "CO", Side.IMAGE, image=_probe_image(), scores={"mood_atmosphere": 3}, notes={"mood_atmosphere": "n"}),
        ),
    }
    return {
        side: SkillInput(task, "A probe prompt.", _probe_image(), exemplars[side], None, rubric, image_max_side=image_max_side)
        for side in Side
    }


def templates_digest(rubric: Rubric, image_max_side: int) -> str:
    """sha256 of every model skill's request for the probe input, plus the repair turn."""
    inputs = _probe_inputs(rubric, image_max_side)
    requests: dict[str, Any] = {"repair": messages.repair_messages("{probe reply}", "probe problem")}
    for name, skill in REGISTRY.items():
        if skill.kind != Kind.METRIC:
            inp = inputs[skill.side]
            requests[name] = skill.build(replace(inp, exemplars=check_exemplars(name, inp.exemplars)))  # type: ignore[attr-defined]
    text = _DATA_URL.sub("<image>", json.dumps(requests, sort_keys=True, ensure_ascii=False))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def metric_parameters() -> dict[str, Any]:
    m = metric_skills  # read at call time: the constants as they are now
    return {
        "clip_score_alpha": m.ALPHA,
        "clip_score_beta": m.BETA,
        "histogram_bins": m.HISTOGRAM_BINS,
        "histogram_max_side": m.HISTOGRAM_MAX_SIDE,
    }


def clip_spec(model: str, pretrained: str | None) -> ClipSpec:
    return ClipSpec(model=model, weights=clip_weights_identity(pretrained))


def openai_spec(
    *,
    model: str,
    endpoint: str,
    route: str,
    rubric: Rubric,
    clip: ClipSpec,
    image_max_side: int,
    repair_attempts: int,
    request: Mapping[str, Any],
) -> JudgeSpec:
    parameters = {"image_max_side": image_max_side, "repair_attempts": repair_attempts, "request": dict(request), **metric_parameters()}
    return JudgeSpec(
        engine="openai",
        models=(model,),
        route=route,
        base_version=rubric.version,
        clip=clip,
        parameters=parameters,
        templates=templates_digest(rubric, image_max_side),
        endpoint=endpoint_host(endpoint),
    )


def embedding_spec(*, text_model: str, route: str, clip: ClipSpec, parameters: Mapping[str, Any]) -> JudgeSpec:
    return JudgeSpec(
        engine="embedding",
        models=(text_model,),
        route=route,
        base_version="embedding",
        clip=clip,
        parameters={**parameters, **metric_parameters()},
    )


def ensemble_spec(members: tuple[JudgeSpec, ...], strategies: Mapping[str, str]) -> JudgeSpec:
    routes = {m.route for m in members}
    if len(routes) != 1:
        raise JudgeConfigError(f"ensemble members must share one route, got {sorted(routes)}")
    versions = list(dict.fromkeys(m.base_version for m in members))
    return JudgeSpec(
        engine="ensemble",
        models=tuple(mo for m in members for mo in m.models),
        route=members[0].route,
        base_version="+".join(versions),
        clip=members[0].clip,
        parameters={"combine": dict(strategies)},
        members=members,
    )
