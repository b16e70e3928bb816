"""AtelierJudge's rubric: what each dimension means and what each score level looks like.

Written for this project (not copied from the paper). Changing any text here
changes what the judge is asked, so bump RUBRIC_VERSION with it: judgements are
stored with the version and are only comparable within one version.
"""

from __future__ import annotations

from dataclasses import dataclass

RUBRIC_VERSION = "rubric-v1"


@dataclass(frozen=True)
class Dimension:
    name: str
    title: str
    question: str
    levels: tuple[str, str, str, str, str]  # anchors for scores 1..5


PROMPT_RUBRIC: tuple[Dimension, ...] = (
    Dimension(
        "instructional_clarity",
        "Instructional clarity",
        "Could an image model follow this prompt without guessing?",
        (
            "Confusing or self-contradictory; the main subject cannot be pinned down.",
            "The subject is identifiable, but key attributes or spatial relations are vague or clash.",
            "Understandable overall; a few ambiguities could plausibly be resolved the wrong way.",
            "Clear and well ordered; only minor details are left open.",
            "Every element, attribute and relation is stated unambiguously, in an order a model can execute.",
        ),
    ),
    Dimension(
        "creative_elaboration",
        "Creative elaboration",
        "Does the prompt enrich the brief with vivid, coherent detail that serves it?",
        (
            "Repeats the brief (or less); nothing is added.",
            "Adds only generic filler such as 'beautiful' or 'high quality'.",
            "Adds some concrete details, mostly predictable ones.",
            "Adds distinctive, mutually consistent details that make the scene vivid.",
            "Inventive elaboration that lifts the concept while staying fully faithful to the brief.",
        ),
    ),
    Dimension(
        "terminology_proficiency",
        "Terminology proficiency",
        "Does the prompt use the vocabulary of art, photography and design correctly and purposefully?",
        (
            "No craft vocabulary, or terms used wrongly.",
            "A few stock terms, loosely or decoratively used.",
            "Correct but basic terms covering some aspects (style, lighting or framing).",
            "Precise terms across several aspects: medium, lens, lighting setup, composition.",
            "Expert, well-chosen terminology that pins down the look exactly, with no misuse.",
        ),
    ),
    Dimension(
        "intent_formalization",
        "Intent formalization",
        "Are the client's needs, including every stated constraint, turned into explicit prompt content?",
        (
            "Misses or contradicts the core request.",
            "Captures the core request but drops several stated requirements.",
            "Covers most requirements; some are implicit, weakened or missing.",
            "Covers all important requirements explicitly; only minor nuances are lost.",
            "Translates every requirement and the implied purpose into explicit, checkable wording.",
        ),
    ),
)

IMAGE_RUBRIC: tuple[Dimension, ...] = (
    Dimension(
        "mood_atmosphere",
        "Mood & atmosphere",
        "Does the image convey the emotional tone the brief calls for?",
        (
            "No discernible mood, or the opposite of the one requested.",
            "A weak or muddled mood that only loosely fits the brief.",
            "The intended mood is recognisable but flat.",
            "A clear, convincing mood that matches the brief.",
            "An immersive atmosphere where every element reinforces the intended feeling.",
        ),
    ),
    Dimension(
        "visual_composition",
        "Visual composition",
        "Are framing, balance and focal hierarchy effective and as the brief requires?",
        (
            "Chaotic or cropped badly; no clear focal point.",
            "A focal point exists, but the arrangement is awkward or cluttered.",
            "A serviceable, conventional arrangement with some imbalance.",
            "A well-balanced layout that guides the eye to what matters.",
            "A deliberate, striking composition that serves the brief's purpose in every region.",
        ),
    ),
    Dimension(
        "color_lighting",
        "Color & lighting",
        "Are palette and lighting harmonious, coherent and suited to the brief?",
        (
            "Clashing colours or incoherent, physically implausible lighting.",
            "A dull or inconsistent palette; lighting is flat or partly contradictory.",
            "An acceptable palette and plausible lighting with no particular character.",
            "A harmonious palette and consistent lighting that support the subject.",
            "Masterful colour and light that shape depth, focus and mood exactly as intended.",
        ),
    ),
    Dimension(
        "technical_flawlessness",
        "Technical flawlessness",
        "Is the image free of generation artefacts?",
        (
            "Severe artefacts dominate: broken anatomy, melted objects, unreadable garbage.",
            "Several obvious artefacts a viewer notices at once.",
            "Minor artefacts visible on a closer look (hands, text, edges, textures).",
            "Clean apart from one or two tiny imperfections.",
            "No visible artefacts: anatomy, text, geometry and textures are all sound.",
        ),
    ),
)

RUBRICS: dict[str, tuple[Dimension, ...]] = {
    "prompt_subjective": PROMPT_RUBRIC,
    "image_subjective": IMAGE_RUBRIC,
}


def render_rubric(dimensions: tuple[Dimension, ...]) -> str:
    """The rubric as plain text for the system message."""
    blocks = []
    for dim in dimensions:
        anchors = "\n".join(f"  {score}: {text}" for score, text in enumerate(dim.levels, start=1))
        blocks.append(f"{dim.name} ({dim.title}): {dim.question}\n{anchors}")
    return "\n\n".join(blocks)
