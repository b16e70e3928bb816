"""The layers of docs/architecture-notes.md, checked over folders on every import of every module (inside functions too).

    evaluator/  <  tasks/, teams/  <  evaluation/  <  submissions/, leaderboard/, ratings/, studies/, notifications/
                <  atelier/  <  demo/

A folder imports its own layer and the layers below, never one above. The apps on top are peers: one may read
another's models, never its services. evaluator/ imports neither Django, nor the libraries that serve only it (rq, django_rq, …), nor any app.
demo/ may import anything and nothing imports it: it is installed and routed only where the demo runs (settings and
urls name it by string, behind settings.ATELIER_DEMO), so no production module may need it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER = {
    "evaluator": 0,
    "tasks": 1,
    "teams": 1,
    "evaluation": 2,
    "submissions": 3,
    "leaderboard": 3,
    "ratings": 3,
    "studies": 3,
    "notifications": 3,  # e-mail to teams: hears of submissions through evaluation.signals
    "atelier": 4,
    "demo": 5,  # the demo app: installed only with ATELIER_DEMO (default: DEBUG), imported by nothing
}
TOP = 3
# What evaluator/ may not import: Django, and the libraries that exist here only to serve it (the queue and its
# Django glue, the settings helpers): a plain library takes its inputs as arguments, not from a site's services.
DJANGO_WORLD = {"django", "rq", "django_rq", "dj_database_url", "whitenoise", "axes", "csp", "storages", "ipware"}


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in a file, relative imports resolved."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found += [(node.lineno, module)] if node.module else [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return found


def violation(importer: str, imported: str) -> str | None:
    """Why `importer` may not import `imported` (None when it may)."""
    source, target = importer.split(".")[0], imported.split(".")[0]
    if source == "evaluator" and target in DJANGO_WORLD:
        return f"evaluator/ never imports Django or what runs only beside it ({target})"
    if source not in LAYER or target not in LAYER or source == target:
        return None
    if target == "demo":
        return "demo/ is installed only where the demo runs: no other module imports it"
    if LAYER[target] > LAYER[source]:
        return f"{source}/ imports {target}/, a layer above it"
    if LAYER[source] == LAYER[target] == TOP and imported.split(".")[1:2] != ["models"]:
        return f"{source}/ imports {target}/'s services (apps on top share only their models)"
    return None


def project_files() -> list[Path]:
    return [p for top in LAYER for p in (ROOT / top).rglob("*.py") if "migrations" not in p.parts]


def problems(root: Path = ROOT) -> list[str]:
    """Every import in the project's folders under `root` that breaks the rule, as path:line: module: why."""
    found = []
    for path in [p for top in LAYER for p in (root / top).rglob("*.py") if "migrations" not in p.parts]:
        importer = ".".join(path.relative_to(root).with_suffix("").parts)
        found += [
            f"{path.relative_to(root)}:{line}: {imported}: {why}"
            for line, imported in imports(path, root)
            if (why := violation(importer, imported))
        ]
    return found


def test_no_folder_imports_a_layer_above_it() -> None:
    assert problems() == []
    assert len(project_files()) > 60  # the walk found the project


def test_the_rule_catches_what_it_is_for() -> None:
    assert violation("evaluation.units", "studies.humans") is not None  # up from the evaluation layer
    assert violation("evaluation.models", "submissions.forms") is not None
    assert violation("teams.models", "evaluation.models") is not None and violation("tasks.loaders", "evaluation.runtime") is not None
    assert violation("submissions.services", "leaderboard.selectors") is not None  # sideways into a peer's services
    assert violation("evaluator.judge.skills", "django.db") is not None and violation("evaluator.metrics", "evaluation.models") is not None
    assert violation("evaluator.judge.budget", "rq.job") is not None and violation("evaluator.metrics", "django_rq") is not None
    assert violation("evaluator.judge.budget", "limits.storage") is None  # a plain library evaluator/ may use
    assert violation("leaderboard.board_download", "studies.models") is None and violation("ratings.services", "evaluation.memory") is None
    assert violation("atelier.urls", "studies.views") is None and violation("evaluation.units", "teams.models") is None
    assert violation("atelier.urls", "demo.views") is not None and violation("submissions.views", "demo.prompter") is not None
    assert violation("demo.views", "studies.services") is None and violation("demo.study", "atelier.settings") is None  # on top


def test_an_upward_import_added_to_a_file_fails(tmp_path) -> None:
    """The walk itself catches a new upward edge: a module in evaluation/ that imports studies/ (in a copy of the
    layout under tmp_path, so that no other test running at the same time sees it)."""
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "evaluation" / "probe.py").write_text("def f():\n    from studies.models import Participant\n    return Participant\n")
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "views.py").write_text("from evaluation.models import Submission\n")  # downward: allowed
    assert problems(tmp_path) == ["evaluation/probe.py:2: studies.models: evaluation/ imports studies/, a layer above it"]
