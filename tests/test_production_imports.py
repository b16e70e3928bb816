"""Production code imports nothing that only requirements-dev.txt installs.

requirements.txt is what a production web or worker host installs; requirements-dev.txt adds the tests, benchmarks and
lint. A production module that imported one of those (even inside a function, run only on some path) would fail on a
production host. This test reads the packages requirements-dev.txt adds, maps them to the modules they install, and
walks every .py file of the production code with `ast`, naming file:line of each import of one of them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PRODUCTION = (
    "atelier",
    "evaluation",
    "evaluator",
    "leaderboard",
    "ratings",
    "studies",
    "submissions",
    "tasks",
    "teams",
    "notifications",
    "demo",  # `make demo` installs requirements.txt only
    "client",
)
# The modules a package installs, where its name does not say it (package names compared lowercased, "_" as "-").
IMPORT_NAMES = {
    "pytest": {"pytest", "_pytest"},
    "pytest-django": {"pytest_django"},
    "pytest-xdist": {"xdist"},
    "pytest-cov": {"pytest_cov"},
    "openapi-spec-validator": {"openapi_spec_validator"},
    "hypothesis": {"hypothesis"},
    "statsmodels": {"statsmodels"},
    "selenium": {"selenium"},
    "filelock": {"filelock"},
    "moto": {"moto"},
    "locust": {"locust"},
    "schemathesis": {"schemathesis"},
    "ruff": {"ruff"},
}
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def packages(path: Path) -> set[str]:
    """The package names a requirements file lists itself (not those of the files it includes with -r)."""
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-") and (match := _NAME.match(line)):
            names.add(match[1].lower().replace("_", "-"))
    return names


def dev_only_modules() -> dict[str, str]:
    """{module: package} for every package requirements-dev.txt adds to requirements.txt."""
    added = packages(ROOT / "requirements-dev.txt") - packages(ROOT / "requirements.txt")
    unmapped = added - IMPORT_NAMES.keys()
    assert not unmapped, f"requirements-dev.txt adds {sorted(unmapped)}: name the modules they install in IMPORT_NAMES"
    return {module: package for package in added for module in IMPORT_NAMES[package]}


def dev_imports(source: str, modules: dict[str, str]) -> list[tuple[int, str, str]]:
    """(line, module imported, its package) of every import of one of `modules` in `source`, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, name, modules[name.split(".")[0]]) for name in names if name.split(".")[0] in modules]
    return sorted(found)


def test_the_requirements_files_split_by_role() -> None:
    dev = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert "-r requirements.txt" in [line.strip() for line in dev]
    assert not packages(ROOT / "requirements.txt") & set(IMPORT_NAMES), "test and lint tools belong in requirements-dev.txt"
    assert {"pytest", "pytest-cov", "ruff"} <= packages(ROOT / "requirements-dev.txt")


def test_production_code_imports_no_development_package() -> None:
    modules = dev_only_modules()
    files = sorted(path for folder in PRODUCTION for path in (ROOT / folder).rglob("*.py"))
    assert len(files) > 100, f"only {len(files)} production files found under {PRODUCTION}"
    found = [
        f"{path.relative_to(ROOT)}:{line}: imports {module} ({package}, only in requirements-dev.txt)"
        for path in files
        for line, module, package in dev_imports(path.read_text(encoding="utf-8"), modules)
    ]
    assert not found, "production code imports development-only packages:\n" + "\n".join(found)


def test_an_import_inside_a_function_is_found() -> None:
    source = "import os\n\ndef f():\n    from hypothesis import given\n    import xdist.plugin, json\n"
    assert dev_imports(source, dev_only_modules()) == [(4, "hypothesis", "hypothesis"), (5, "xdist.plugin", "pytest-xdist")]
