"""Rendering backends as data: the typed config, its validation and seed policy.

This module is imported by the web process, so it must stay light: standard
library only (no torch, no diffusers, no PIL). Everything heavy lives in the
renderer modules and is imported lazily when a worker actually renders.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SMOKE_LABEL = "smoke (random weights)"
SMOKE = "smoke"

# Bump when the meaning of a config changes without its fields changing (e.g. a
# new render loop), so cached/published images are not silently mixed up.
_HASH_SCHEMA = 1
# Bump when evaluator/backends/smoke.py builds different weights or components.
SMOKE_REVISION = 2  # 2: the smoke VAE scales by 8 (latents 8x8 for 64 px), as Stable Diffusion's does

SEED_SPACE = 2**31
DTYPES = ("float32", "float16", "bfloat16")
MIN_SIZE, MAX_SIZE = 8, 4096
MAX_STEPS = 1000
MAX_IMAGES_PER_PROMPT = 64

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CLASS_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIXED_SEED_RE = re.compile(r"fixed:(\d+)")
_DEVICE_RE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")

REQUIRED_FIELDS = (
    "name",
    "model",
    "pipeline",
    "steps",
    "guidance",
    "width",
    "height",
    "dtype",
    "images_per_prompt",
    "seed_policy",
)
OPTIONAL_FIELDS = ("scheduler", "enabled", "label", "device", "rewriter", "batch_size")
# A backend's middleware: an OpenAI-compatible model that rewrites every prompt before rendering, as commercial
# generators do. Part of the version hash (it changes the pixels); the deployer's config, so it is trusted.
REWRITER_FIELDS = {"base_url": str, "model": str, "instruction": str, "api_key_env": str, "temperature": (int, float), "timeout": (int, float)}
REWRITER_REQUIRED = ("base_url", "model", "instruction")
# Fields that do not change a single pixel; everything else goes into version_hash().
_PRESENTATION_FIELDS = frozenset({"enabled", "label"})


class BackendError(Exception):
    """Any problem with a backend: bad config, missing weights, failed render."""


def _fail(field: str, problem: str) -> BackendError:
    return BackendError(f"field {field!r} {problem}")


def _require_int(field: str, value: object, low: int, high: int) -> int:
    # bool is an int subclass in Python; `"steps": true` is a typo, not 1 step.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, f"must be an integer, got {value!r}")
    if not low <= value <= high:
        raise _fail(field, f"must be between {low} and {high}, got {value}")
    return value


def _require_str(field: str, value: object, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise _fail(field, f"must be a string, got {value!r}")
    if not allow_empty and not value.strip():
        raise _fail(field, "must not be empty")
    return value


def _require_match(field: str, value: object, pattern: re.Pattern[str], what: str) -> str:
    text = _require_str(field, value)
    if not pattern.fullmatch(text):
        raise _fail(field, f"must be {what}, got {text!r}")
    return text


def _check_size(field: str, value: object) -> int:
    size = _require_int(field, value, MIN_SIZE, MAX_SIZE)
    # Latent diffusion VAEs downsample by 8; other sizes crash or get silently resized.
    if size % 8:
        raise _fail(field, f"must be a multiple of 8, got {size}")
    return size


def _check_guidance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail("guidance", f"must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise _fail("guidance", f"must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_seed_policy(value: object) -> str:
    policy = _require_str("seed_policy", value)
    if policy == "derived":
        return policy
    match = _FIXED_SEED_RE.fullmatch(policy)
    if match is None or int(match.group(1)) >= SEED_SPACE:
        raise _fail(
            "seed_policy",
            f"must be 'derived' or 'fixed:<int>' with 0 <= int < 2**31, got {policy!r}",
        )
    return policy


def _check_rewriter(value: object) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise _fail("rewriter", f"must be an object with {', '.join(REWRITER_REQUIRED)} (or null), got {value!r}")
    unknown = sorted(set(value) - set(REWRITER_FIELDS))
    if unknown:
        raise _fail("rewriter", f"has unknown field {unknown[0]!r} (allowed: {', '.join(REWRITER_FIELDS)})")
    for name in REWRITER_REQUIRED:
        if not isinstance(value.get(name), str) or not value[name].strip():
            raise _fail("rewriter", f"needs {name!r} as non-empty text")
    for name, kind in REWRITER_FIELDS.items():
        if name in value and (isinstance(value[name], bool) or not isinstance(value[name], kind)):
            raise _fail("rewriter", f"field {name!r} has the wrong type: {value[name]!r}")
    if not str(value["base_url"]).startswith(("http://", "https://")):
        raise _fail("rewriter", f"base_url must be an http(s) URL, got {value['base_url']!r}")


def _check_smoke_consistency(config: BackendConfig) -> None:
    # "smoke" is a sentinel, not a model id: both fields must agree or the
    # config is lying about what it renders.
    if (config.model == SMOKE) != (config.pipeline == SMOKE):
        raise _fail(
            "pipeline" if config.model == SMOKE else "model",
            "must be 'smoke' together with the other of model/pipeline",
        )
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
        _require_match("name", self.name, _NAME_RE, "1-64 letters, digits, '.', '_' or '-'")
        if _require_str("model", self.model) != self.model.strip():
            raise _fail("model", f"must not have surrounding whitespace, got {self.model!r}")
        _require_match("pipeline", self.pipeline, _CLASS_NAME_RE, "a diffusers pipeline class name")
        _require_int("steps", self.steps, 1, MAX_STEPS)
        # Normalise 3 -> 3.0 so the hash of a config does not depend on JSON spelling.
        object.__setattr__(self, "guidance", _check_guidance(self.guidance))
        _check_size("width", self.width)
        _check_size("height", self.height)
        if self.scheduler is not None:
            _require_match("scheduler", self.scheduler, _CLASS_NAME_RE, "a diffusers scheduler class name or null")
        if self.dtype not in DTYPES:
            raise _fail("dtype", f"must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        _require_int("images_per_prompt", self.images_per_prompt, 1, MAX_IMAGES_PER_PROMPT)
        _check_seed_policy(self.seed_policy)
        if not isinstance(self.enabled, bool):
            raise _fail("enabled", f"must be true or false, got {self.enabled!r}")
        _require_str("label", self.label, allow_empty=True)
        _require_match("device", self.device, _DEVICE_RE, "'auto', 'cpu', 'mps', 'cuda' or 'cuda:<n>'")
        _check_rewriter(self.rewriter)
        _require_int("batch_size", self.batch_size, 1, MAX_IMAGES_PER_PROMPT)
        if self.model == SMOKE and self.label == "":
            object.__setattr__(self, "label", SMOKE_LABEL)
        _check_smoke_consistency(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BackendConfig:
        """Build from one JSON object; unknown or missing fields raise BackendError."""
        if not isinstance(data, Mapping):
            raise BackendError(f"must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
        if unknown:
            allowed = ", ".join(REQUIRED_FIELDS + OPTIONAL_FIELDS)
            raise _fail(unknown[0], f"is unknown (allowed fields: {allowed})")
        missing = [field for field in REQUIRED_FIELDS if field not in data]
        if missing:
            raise _fail(missing[0], "is required but missing")
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
    if not isinstance(document, dict):
        raise BackendError(f"{path}: top level must be a JSON object with a 'backends' list")
    # Keys starting with "_" are comments ("_doc"); JSON has no other way to annotate.
    unknown = sorted(key for key in document if key != "backends" and not key.startswith("_"))
    if unknown:
        raise BackendError(f"{path}: unknown top-level key {unknown[0]!r} (only 'backends' and '_...' keys)")
    entries = document.get("backends")
    if not isinstance(entries, list):
        raise BackendError(f"{path}: 'backends' must be a list of backend objects")
    return entries


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
            raise BackendError(
                f"{where}: field 'name' duplicates backend #{first_index[config.name]}; names must be unique"
            )
        configs[config.name] = config
        first_index[config.name] = index
    return configs
