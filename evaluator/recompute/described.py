"""What board.json describes rather than computes, checked against the stamps of the unit lines: the judge spec must
hash to the judge version every unit was scored by, each backend config to the config hash every image unit was
rendered with."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..backends.config import BackendConfig, BackendError
from ..judge.spec import ClipSpec, JudgeSpec
from .compare import compare, plain, short


def judge_spec(document: dict) -> JudgeSpec:
    """The JudgeSpec a spec document (JudgeSpec.document()) describes."""
    members = tuple(judge_spec(m) for m in document["members"])
    return JudgeSpec(
        engine=document["engine"],
        models=tuple(document["models"]),
        route=document["route"],
        base_version=document["base_version"],
        clip=ClipSpec(**document["clip"]),
        parameters=document["parameters"],
        templates=document["templates"],
        members=members,
    )


def judge_differences(judge: Any, stamps: list[tuple]) -> list[str]:
    """The spec must be a whole spec document that hashes to the judge's version and id, and every unit must have been
    scored by that version."""
    if not isinstance(judge, dict) or not isinstance(judge.get("spec"), dict):
        return ["judge.spec: missing from board.json, so the judge version cannot be checked"]
    try:
        spec = judge_spec(judge["spec"])
        document, derived = plain(spec.document()), {"version": spec.version, "id": spec.judge_id}
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        return [f"judge.spec: not a judge spec document ({type(error).__name__}: {error})"]
    found: list[str] = []
    compare(judge["spec"], document, "judge.spec", 0.0, found)  # a field the spec does not have is reported too
    found += [
        f"judge.{name}: published {short(judge.get(name))}, the spec gives {short(value)}"
        for name, value in derived.items()
        if judge.get(name) != value
    ]
    versions = Counter(version for version, _, _ in stamps)
    return found + [
        f"units: {n} scored by judge version {v}, board.json names {short(judge.get('version'))}"
        for v, n in versions.items()
        if v != judge.get("version")
    ]


def backend_differences(backends: Any, stamps: list[tuple]) -> list[str]:
    """Each backend config must hash to its version_hash, and the configs must be the ones the image units were
    rendered with (config hash per unit line): none missing, none extra."""
    if not isinstance(backends, list):
        return [f"backends: published {short(backends)}, not a list of backend configs"]
    found, listed = [], set()
    for i, config in enumerate(backends):
        try:
            digest = BackendConfig.from_dict({k: v for k, v in config.items() if k != "version_hash"}).version_hash()
        except (BackendError, AttributeError, TypeError, ValueError) as error:
            found.append(f"backends[{i}]: not a backend config ({type(error).__name__}: {error})")
            continue
        if config.get("version_hash") != digest:
            found.append(f"backends[{i}].version_hash: published {short(config.get('version_hash'))}, its config hashes to {digest}")
        listed.add((config["name"], digest))
    used = Counter((backend, digest) for _, backend, digest in stamps if backend)
    found += [
        f"units: {n} rendered by backend {b} with config {d}, which backends does not list"
        for (b, d), n in used.items()
        if (b, d) not in listed
    ]
    return found + [
        f"backends: {b} with config {d} added in board.json, no unit was rendered with it" for b, d in sorted(listed - set(used))
    ]
