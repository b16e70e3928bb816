"""Rendering backends as data: the typed config, its validation and seed policy.

This module is imported by the web process, so it must stay light: the standard library and jsonschema only (no
torch, no diffusers, no PIL). Everything heavy lives in the renderer modules and is imported lazily when a worker
actually renders.

The shape of a backends file (fields, types, ranges, patterns) is backends.schema.json beside this module; the rules
it cannot state (a finite guidance, a fixed seed's bound, what a smoke backend must be, unique names) are code here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from evaluator.schema_errors import Problem, field_name, problems, validator

SMOKE_LABEL = "smoke (random weights)"
SMOKE = "smoke"

# Bump when the meaning of a config changes without its fields changing (e.g. a
# new render loop), so cached/published images are not silently mixed up.
_HASH_SCHEMA = 1
# Bump when evaluator/backends/smoke.py builds different weights or components.
SMOKE_REVISION = 2  # 2: the smoke VAE scales by 8 (latents 8x8 for 64 px), as Stable Diffusion's does

SCHEMA: dict[str, Any] = json.loads(files(__package__).joinpath("backends.schema.json").read_text(encoding="utf-8"))
_FILE = validator(SCHEMA)
_ENTRY = validator({"$ref": "#/$defs/backend", "$defs": SCHEMA["$defs"]})
MAX_IMAGES_PER_PROMPT = SCHEMA["$defs"]["images"]["maximum"]
SEED_SPACE = 2**31
_FIXED_SEED_RE = re.compile(r"fixed:([0-9]+)")
# Fields that do not change a single pixel; everything else goes into version_hash().
_PRESENTATION_FIELDS = frozenset({"enabled", "label"})


class BackendError(Exception):
    """Any problem with a backend: bad config, missing weights, failed render."""


def _fail(field: str, problem: str) -> BackendError:
    return BackendError(f"field {field!r} {problem}")


def _in_entry(problem: Problem) -> str:
    return problem.message(f"field {field_name(problem.path)}" if problem.path else "")


def _check_shape(fields: object) -> None:
    found = problems(_ENTRY, fields)
    if found:
        raise BackendError("; ".join(_in_entry(p) for p in found))


def _check_guidance(value: float) -> float:
    if not math.isfinite(value):
        raise _fail("guidance", f"must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_seed_policy(policy: str) -> None:
    match = _FIXED_SEED_RE.fullmatch(policy)
    if match is not None and int(match.group(1)) >= SEED_SPACE:
        raise _fail("seed_policy", f"must be 'derived' or 'fixed:<int>' with 0 <= int < 2**31, got {policy!r}")


def _check_smoke_consistency(config: BackendConfig) -> None:
    # "smoke" is a sentinel, not a model id: both fields must agree or the
    # config is lying about what it renders.
    if (config.model == SMOKE) != (config.pipeline == SMOKE):
        raise _fail("pipeline" if config.model == SMOKE else "model", "must be 'smoke' together with the other of model/pipeline")
    if not config.is_smoke:
        return
    # The smoke pipeline is built in float32 on the CPU; any other value would be ignored.
    if config.dtype != "float32":
        raise _fail("dtype", f"must be 'float32' for a smoke backend, got {config.dtype!r}")
    if config.device not in ("auto", "cpu"):
        raise _fail("device", f"must be 'auto' or 'cpu' for a smoke backend, got {config.device!r}")
    if SMOKE_LABEL not in config.label:
        raise _fail("label", f"of a smoke backend must contain {SMOKE_LABEL!r}, got {config.label!r}")


@dataclass(frozen=True)
class BackendConfig:
    """One rendering backend: which model, how it is sampled, how seeds are chosen.

    Values are validated on construction, so a BackendConfig that exists is usable.
    """

    name: str
    model: str
    pipeline: str
    steps: int
    guidance: float
    width: int
    height: int
    scheduler: str | None
    dtype: str
    images_per_prompt: int
    seed_policy: str
    enabled: bool = True
    label: str = ""
    device: str = "auto"
    rewriter: Mapping[str, Any] | None = None
    # Seeds rendered per pipeline call. 1 (the default) keeps one call per seed, so image k is
    # bit-identical whatever it is rendered with; more is faster on a GPU but batched kernels may
    # round differently, so it is part of version_hash() (see PipelineRenderer).
    batch_size: int = 1

    def __post_init__(self) -> None:
        _check_shape({field.name: getattr(self, field.name) for field in dataclasses.fields(self)})
        # Normalise 3 -> 3.0 so the hash of a config does not depend on JSON spelling.
        object.__setattr__(self, "guidance", _check_guidance(self.guidance))
        _check_seed_policy(self.seed_policy)
        if self.model == SMOKE and self.label == "":
            object.__setattr__(self, "label", SMOKE_LABEL)
        _check_smoke_consistency(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BackendConfig:
        """Build from one JSON object; unknown or missing fields raise BackendError."""
        _check_shape(data)  # here too: cls(**data) would meet an unknown or missing field as a TypeError
        return cls(**data)

    @property
    def is_smoke(self) -> bool:
        return self.model == SMOKE and self.pipeline == SMOKE

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def version_hash(self) -> str:
        """Identity of the images this backend produces (16 hex chars of sha256).

        Covers every field that changes pixels, including `name` (it feeds
        derived seeds), `device` (numerics differ across hardware) and `batch_size`
        when it is not 1 (batched kernels may round differently), but not
        `enabled`/`label`, which are presentation only.
        """
        fields = {k: v for k, v in self.to_dict().items() if k not in _PRESENTATION_FIELDS}
        if fields.get("rewriter") is None:
            fields.pop("rewriter", None)  # configs without middleware keep the hashes they always had
        if fields.get("batch_size") == 1:
            fields.pop("batch_size")  # one call per seed, as before the field existed: same hashes as then
        fields["_schema"] = _HASH_SCHEMA
        if self.is_smoke:
            fields["_smoke_revision"] = SMOKE_REVISION
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    def seeds_for(self, task_id: str, sample_index: int) -> list[int]:
        """The seeds of one sample's images, following seed_policy."""
        count = self.images_per_prompt
        match = _FIXED_SEED_RE.fullmatch(self.seed_policy)
        if match is not None:
            base = int(match.group(1))
            return [(base + k) % SEED_SPACE for k in range(count)]
        return [derive_seed(task_id, sample_index, k, self.name) for k in range(count)]


def derive_seed(task_id: str, sample_index: int, image_index: int, backend_name: str) -> int:
    """Deterministic seed in [0, 2**31) for one image.

    sha256 rather than hash(): Python salts str hashes per process, and seeds
    must be identical across workers, restarts and machines.
    """
    if not isinstance(task_id, str) or not isinstance(backend_name, str):
        raise BackendError("derive_seed: task_id and backend_name must be strings")
    for value in (sample_index, image_index):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BackendError(f"derive_seed: indexes must be integers >= 0, got {value!r}")
    # A JSON array keeps the parts unambiguous ("a" + "bc" vs "ab" + "c").
    key = json.dumps([backend_name, task_id, sample_index, image_index])
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % SEED_SPACE


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BackendError(f"{path}: cannot read backends file ({exc.strerror or exc})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BackendError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc


def _backend_entries(path: Path, document: Any) -> list[Any]:
    """The file's backend objects; BackendError naming every field of the file that breaks the schema."""
    found = problems(_FILE, document)
    if found:
        raise BackendError("\n".join(f"{path}: {_in_file(document, p)}" for p in found))
    return document["backends"]


def _in_file(document: Any, problem: Problem) -> str:
    if problem.path[:1] == ("backends",) and len(problem.path) > 1:
        index = problem.path[1]
        return f"{_describe(index, document['backends'][index])}: {_in_entry(dataclasses.replace(problem, path=problem.path[2:]))}"
    return problem.message(f"top-level key {field_name(problem.path)}" if problem.path else "top level")


def _describe(index: int, entry: Any) -> str:
    name = entry.get("name") if isinstance(entry, dict) else None
    return f"backend #{index} {name!r}" if isinstance(name, str) else f"backend #{index}"


def load_backend_configs(path: str | Path) -> dict[str, BackendConfig]:
    """Read and validate a backends file: {"backends": [{...}, ...]}.

    Returns every backend, disabled ones included, keyed by name in file order.
    Any problem raises BackendError naming the file, the backend and the field.
    """
    path = Path(path)
    configs: dict[str, BackendConfig] = {}
    first_index: dict[str, int] = {}
    for index, entry in enumerate(_backend_entries(path, _read_json(path))):
        where = f"{path}: {_describe(index, entry)}"
        try:
            config = BackendConfig.from_dict(entry)
        except BackendError as exc:
            raise BackendError(f"{where}: {exc}") from None
        if config.name in configs:
            raise BackendError(f"{where}: field 'name' duplicates backend #{first_index[config.name]}; names must be unique")
        configs[config.name] = config
        first_index[config.name] = index
    return configs
