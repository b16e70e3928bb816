"""The layers of docs/architecture-notes.md, checked on every import of every module (inside functions too).

    evaluator/  <  app models  <  evaluation/  <  app services, selectors, views, commands  <  atelier/

A module may import its own layer and the layers below. Apps may import each other's models
only, never each other's services; evaluator/ imports neither Django nor any app.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("tasks", "submissions", "ratings", "leaderboard", "studies")
PROJECT = ("evaluator", "evaluation", "atelier", *APPS)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in a file, relative imports resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found += [(node.lineno, module)] if node.module else [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return found


def layer(module: str) -> str | None:
    """'evaluator', 'models', 'evaluation', 'app', 'atelier', or None for a module outside the project."""
    parts = module.split(".")
    if parts[0] not in PROJECT:
        return None
    if parts[0] in APPS:
        return "models" if len(parts) > 1 and parts[1] in ("models", "migrations") else "app"
    return parts[0]


ORDER = {"evaluator": 0, "models": 1, "evaluation": 2, "app": 3, "atelier": 4}


def violation(importer: str, imported: str) -> str | None:
    """Why `importer` may not import `imported` (None when it may)."""
    source, target = layer(importer), layer(imported)
    if source is None or target is None:
        return "evaluator/ never imports Django" if source == "evaluator" and imported.split(".")[0] == "django" else None
    if ORDER[target] > ORDER[source]:
        return f"{source} layer imports the {target} layer above it"
    if source == target == "app" and importer.split(".")[0] != imported.split(".")[0]:
        return "an app imports another app's services (only its models may be shared)"
    return None


def project_files() -> list[Path]:
    return [p for top in PROJECT for p in (ROOT / top).rglob("*.py") if "migrations" not in p.parts]


def test_no_module_imports_a_layer_above_it_or_another_apps_services() -> None:
    problems = []
    for path in project_files():
        importer = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for line, imported in imports(path):
            why = violation(importer, imported)
            if why:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {imported}: {why}")
    assert problems == []
    assert len(project_files()) > 60  # the walk found the project


def test_the_rule_catches_what_it_is_for() -> None:
    assert violation("submissions.services", "leaderboard.selectors") is not None  # sideways into another app's services
    assert violation("tasks.management.commands.render_targets", "submissions.runtime") is not None
    assert violation("evaluation.units", "leaderboard.services") is not None  # up from the evaluation layer
    assert violation("ratings.models", "evaluation.memory") is not None  # models below the evaluation layer
    assert violation("evaluator.judge.skills", "django.db") is not None and violation("evaluator.metrics", "submissions.models") is not None
    assert violation("leaderboard.views", "submissions.models") is None and violation("ratings.services", "evaluation.memory") is None
    assert violation("atelier.management.commands.demo", "tasks.services") is None


def test_relative_imports_are_resolved() -> None:
    assert "evaluation.memory" in {m for _, m in imports(ROOT / "evaluation" / "judging.py")}  # from .memory import ...
    assert "evaluator.judge.types" in {m for _, m in imports(ROOT / "evaluator" / "judge" / "rubrics" / "__init__.py")}  # from ..types
