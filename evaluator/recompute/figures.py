"""The numbers board.json publishes of its entries, rebuilt from the download's data files: each entry's figures,
what they rest on and their standing, its task count and steerability; the board statistics; the difficulty
predictor's agreement with the judge. The human rows come from .humans; recompute_download puts it all together."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

from ..judge.official.composite import entry_figures
from ..metrics.aggregate import Figure, Unit, sample_image_scores
from ..metrics.agreement import Prediction, prediction_document
from ..metrics.board import SETTINGS, board_stats_compute, styles_of
from ..metrics.coverage import coverage, standing
from ..metrics.scopes import Scope
from ..metrics.steerability import steerability
from .compare import plain
from .download import Download, prompt_words, read
from .humans import humans_section


def recompute(path) -> dict:
    """Every number board.json publishes, rebuilt from the download's data files (the keys of board.json it checks)."""
    return plain(recompute_download(read(path)))


def recompute_download(download: Download) -> dict:
    """The recomputed part of board.json: statistics settings (this code's), entries, statistics and human rows."""
    rate, tasks, categories = _max_missing(download.board), download.prompted_tasks(), download.categories
    first = ((download.board.get("judge") or {}).get("spec") or {}).get("engine") == "official"  # the release's first image
    entries = []
    for entry, units in download.units.items():
        steered = steerability_rows(download.trajectories.get(entry, []), categories)
        entries.append(_entry(entry, units, rate, len(tasks[entry]), steered, first))
    empty = not entries  # a board whose last entry was withdrawn: no statistics, as the site stores none
    scores = {str(e["entry"]): task_scores(e) for e in entries}
    return {
        "statistics_settings": None if empty else SETTINGS,
        "entries": entries,
        "statistics": None if empty else _statistics(scores, download),
        "humans": humans_section(scores, download),
        "difficulty": _difficulty(download),
    }


def _max_missing(board: dict) -> float | None:
    """The deployment's missing-unit limit the standings were decided with (a setting of the site, not of this code)."""
    settings = board.get("coverage_settings")
    rate = settings.get("max_missing_rate") if isinstance(settings, dict) else None
    return rate if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None


def figure_fields(figure: Figure) -> dict:
    """A figure as board.json carries it: every field of aggregate.Figure but its scope and key (those name it)."""
    return {k: v for k, v in asdict(figure).items() if k not in ("scope", "key")}


def _entry(entry, units: list[Unit], rate: float | None, tasks: int, steered: list[dict], first_image: bool) -> dict:
    made = entry_figures(units, first_image)
    covered = coverage(units)
    rests_on = {f"{f.scope}:{f.key}": covered[(f.scope, f.key)] for f in made if covered.get((f.scope, f.key))}
    return {
        "entry": entry,
        "tasks": tasks,
        "figures": {f"{f.scope}:{f.key}": figure_fields(f) for f in made},
        "coverage": {
            key: {
                "scored": c["scored"],
                "planned": c["planned"],
                "standing": standing(c, done=True, max_missing=rate) if rate is not None else None,
            }
            for key, c in rests_on.items()
        },
        "steerability": steered,
    }


def steerability_rows(trajectories: list[dict], categories: dict[str, str]) -> list[dict]:
    """An entry's steerability per category as the submission page shows it (evaluation.trajectories.
    submission_steerability): evaluator.metrics.steerability.steerability with each task a target and its samples'
    feedback-score trajectories the data, every field it returns."""
    by_category: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for line in trajectories:
        by_category[categories[line["task_id"]]][line["task_id"]].append(line["scores"])
    backend = trajectories[0]["backend"] if trajectories else ""
    return [{"category": c, "backend": backend, **asdict(steerability(by_task))} for c, by_task in sorted(by_category.items())]


def task_scores(entry: dict) -> dict[str, float]:
    """An entry's recomputed task scores (task id -> score; tasks without one left out)."""
    return {
        k.split(":", 1)[1]: f["value"] for k, f in entry["figures"].items() if k.startswith(f"{Scope.TASK}:") and f["value"] is not None
    }


def _statistics(every: dict[str, dict[str, float]], download: Download) -> dict:
    """board_stats_compute on the entries' recomputed task scores (entry id -> task_scores), with the counts the board
    page stores beside them."""
    lengths, lists = styles_of((str(p["entry"]), p["task_id"], *prompt_words(p)) for p in download.prompts)
    splits = {t["task_id"]: t["split"] for t in download.tasks}
    inputs = {
        **download.statistics_inputs,
        "every": every,
        "lengths": lengths,
        "lists": lists,
        "categories": download.categories,
        "splits": splits,
    }
    data = board_stats_compute(**inputs, settings=SETTINGS)
    has_split = any(e.get("test") is not None and e.get("dev") is not None for e in data["entries"].values())
    return {**data, "entry_count": len(every), "has_split": has_split}


def _difficulty(download: Download) -> dict | None:
    """The difficulty predictor's agreement with the judge (evaluation.difficulty.difficulty_agreement): each prompt's
    predicted score from the breakdown, its image part from the units; the predictor's name from the breakdown, or
    from board.json when no prompt was predicted."""
    published = download.board.get("difficulty")
    predicted = {
        (r["submission"], r["task_id"], r["sample"]): (r["predicted_score"], r.get("difficulty_predictor") or "")
        for r in download.breakdown.get("breakdown.jsonl", [])
        if r.get("predicted_score") is not None
    }
    if not predicted and not isinstance(published, dict):
        return None
    versions = sorted({version for _, version in predicted.values()})
    predictor = ",".join(versions) if versions else published.get("predictor")
    items, contributing = [], 0
    for entry, units in download.units.items():
        observed = sample_image_scores(units)
        found = [
            Prediction(t, download.categories[t], score, observed[(t, k)])
            for (e, t, k), (score, _) in predicted.items()
            if e == entry and (t, k) in observed
        ]
        items += found
        contributing += bool(found)
    return prediction_document(predictor, contributing, items)
