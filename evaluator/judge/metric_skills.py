"""Metric skills for imitation (IM) tasks: no model call, the same for every judge kind.

target_similarity: ArtWhisperer's CLIP score (Appendix A.4 of that paper). With C the
CLIP image encoder and d the L2 distance between the unit-normalised embeddings of the
render x and the target t,

    raw(x, t) = alpha * d + beta,   alpha = -150.3, beta = 179.1
    score     = clip(c_k * raw(x, t), 0, 100)

where c_k = 100 / raw(x_k, t) is fixed per target from x_k, a render of the target's own
(hidden) seed prompt on the same backend, so that entering the seed prompt scores 100
before clipping; c_k = 1 when no reference render is given. (ArtWhisperer shows integer
scores; the unrounded value is kept here.)

color_shift: how far the render's colour distribution is from the target's. Both images
are reduced (box filter) to at most 128 px on the long side, each pixel is binned into an
8x8x8 joint RGB histogram (32 levels per bin and channel), the histograms are normalised to
sum 1, and the distance is their total variation, 0.5 * sum |p - q|, in [0, 1]:
  * joint RGB rather than HSV: hue is undefined for greys and unstable for dark or pale
    pixels, which are common in renders, so HSV bins would move on noise; every RGB pixel
    has a well-defined bin, and a joint histogram keeps colours that per-channel
    histograms would confuse (red+cyan vs white+black share per-channel marginals);
  * total variation rather than Hellinger or chi-square: it is the share of pixel mass
    that sits in different colour bins, easy to read (0.3 = 30% of the picture's colour
    would have to change), and it is not dominated by small-mass bins the way Hellinger's
    square roots are. Identical palettes give 0, disjoint palettes give 1.
The 128-px reduction makes the result independent of resolution and fast; the box filter
averages, so a render's fine noise does not change the palette.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .encoders import clip_weights_identity, image_embeddings

if TYPE_CHECKING:
    from PIL.Image import Image

ALPHA = -150.3
BETA = 179.1
HISTOGRAM_BINS = 8  # per channel: 8 x 8 x 8 joint RGB bins
HISTOGRAM_MAX_SIDE = 128


def _unit(vec: Any) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float64).ravel()
    norm = np.linalg.norm(v)
    if norm == 0:
        raise ValueError("a CLIP embedding of length 0 cannot be normalised")
    return v / norm


def raw_clip_score(render_vec: Any, target_vec: Any) -> tuple[float, float]:
    """(raw, d): ArtWhisperer's unclipped score alpha * d + beta and the distance d it came from."""
    distance = float(np.linalg.norm(_unit(render_vec) - _unit(target_vec)))
    return ALPHA * distance + BETA, distance


def clip_score(render_vec: Any, target_vec: Any, reference_vec: Any | None = None) -> dict[str, float]:
    """ArtWhisperer's CLIP score of a render against a target, from their CLIP image embeddings.

    Returns clip_score (0..100), raw (unscaled alpha * d + beta), scale (c_k, 1 without a
    reference), distance (d) and, with a reference, reference_raw (raw of reference vs target).
    Raises ValueError when the reference's raw score is not positive (c_k would be undefined
    or flip the scale).
    """
    raw, distance = raw_clip_score(render_vec, target_vec)
    result = {"raw": raw, "distance": distance, "scale": 1.0}
    if reference_vec is not None:
        reference_raw, _ = raw_clip_score(reference_vec, target_vec)
        if reference_raw <= 0:
            raise ValueError(f"the reference render's raw score against the target is {reference_raw:.3f} <= 0, so c_k is undefined")
        result["reference_raw"] = reference_raw
        result["scale"] = 100.0 / reference_raw
    result["clip_score"] = float(min(100.0, max(0.0, result["scale"] * raw)))
    return result


def color_histogram(image: Image, bins: int = HISTOGRAM_BINS, max_side: int = HISTOGRAM_MAX_SIDE) -> np.ndarray:
    """The normalised joint RGB histogram (bins**3 entries summing to 1) of the image."""
    from PIL import Image as PILImage

    small = image.convert("RGB")
    if max(small.size) > max_side:
        small = small.copy()
        small.thumbnail((max_side, max_side), PILImage.Resampling.BOX)
    pixels = np.asarray(small, dtype=np.uint16).reshape(-1, 3)
    index = (pixels * bins // 256).astype(np.int64)
    flat = (index[:, 0] * bins + index[:, 1]) * bins + index[:, 2]
    counts = np.bincount(flat, minlength=bins**3).astype(np.float64)
    return counts / counts.sum()


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum())


def color_shift(render: Image, target: Image) -> dict[str, float]:
    """{"color_shift": TV distance of the 8x8x8 RGB histograms (0 same palette, 1 disjoint), "color_similarity": 1 - it}."""
    distance = total_variation(color_histogram(render), color_histogram(target))
    return {"color_shift": distance, "color_similarity": 1.0 - distance}


@dataclass(frozen=True)
class MetricOutput:
    scores: dict[str, float]
    details: dict[str, Any]


def target_similarity(render: Image, target: Image, reference: Image | None, clip_model: str, clip_pretrained: str | None) -> MetricOutput:
    """CLIP-embed render, target (and reference) and score them."""
    images = [render, target] + ([reference] if reference is not None else [])
    # One image per call: each is remembered on its own (encoders._remembered), so a task's target and reference are
    # embedded once for all its renders, and a render once for every skill that looks at it.
    vecs = [image_embeddings([image], clip_model, clip_pretrained)[0] for image in images]
    scores = clip_score(vecs[0], vecs[1], vecs[2] if reference is not None else None)
    return MetricOutput(
        scores=scores, details={"clip_model": f"{clip_model}({clip_weights_identity(clip_pretrained)})", "alpha": ALPHA, "beta": BETA}
    )


def color_shift_output(render: Image, target: Image) -> MetricOutput:
    return MetricOutput(
        scores=color_shift(render, target),
        details={
            "histogram": f"{HISTOGRAM_BINS}x{HISTOGRAM_BINS}x{HISTOGRAM_BINS} RGB",
            "distance": "total variation",
            "max_side": HISTOGRAM_MAX_SIDE,
        },
    )
