"""The wording the release keeps in its Python code, read from the source with `ast` and never executed.

Most of what the release's judge sends lives in its JSON templates, but the framing around calibration
exemplars (a header, an instruction, "Exemplar 1", score lines) and the task descriptions built from its
dataset are string literals and f-strings in evaluator/subjective/s1_subjective_memory_skill_engine.py,
and the dimension names its replies must use are lists in subjective_eval_core.py. This module takes
those literals out of the syntax tree as templates: literal text plus named slots (a variable, an
attribute such as `ex.task_id`, or `a or b or 'N/A'`), which the route fills in. The order of the pieces
and the separators come from the source too; what the code does around them (which fields exist, when a
fallback applies) is the route's, written after the release's logic.

A source whose shape differs (a function renamed, an f-string with a format spec) is refused with an
OfficialReleaseError naming the file and the function, rather than guessed around.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .layout import MEMORY_ENGINE, SUBJECTIVE_CORE, OfficialReleaseError


@dataclass(frozen=True)
class Slot:
    """A value the route supplies, named by the expression the release's code writes there."""

    expr: ast.expr

    @property
    def name(self) -> str:
        return ast.unparse(self.expr)

    def value(self, values: Mapping[str, Any]) -> Any:
        node = self.expr
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):  # the first truthy operand, as Python does
            found = [Slot(v).value(values) for v in node.values]
            return next((v for v in found if v), found[-1])
        return values[self.name]


@dataclass(frozen=True)
class Splice:
    """`*name` in a list: the route supplies a list of lines."""

    name: str


@dataclass(frozen=True)
class Template:
    """An f-string (or a plain literal, or a lone slot): literal parts and slots."""

    parts: tuple[str | Slot, ...]

    def render(self, values: Mapping[str, Any]) -> str:
        return "".join(p if isinstance(p, str) else str(p.value(values)) for p in self.parts)


@dataclass(frozen=True)
class Joined:
    """`sep.join([item, item, *lines])`: rendered with the same separator and order."""

    sep: str
    items: tuple[Template | Splice, ...]

    def render(self, values: Mapping[str, Any]) -> str:
        lines: list[str] = []
        for item in self.items:
            lines += list(values[item.name]) if isinstance(item, Splice) else [item.render(values)]
        return self.sep.join(lines)


@dataclass(frozen=True)
class ExemplarBlock:
    """How the release writes retrieved exemplars of one side: each one, the separator between them, and none."""

    item: Joined
    between: str
    none: str


@dataclass(frozen=True)
class Descriptions:
    """How the release describes a task of each category from its dataset record."""

    co_sections: tuple[tuple[str, str], ...]  # (label, dataset field)
    co_line: Template  # slots: label, content
    co_sep: str
    oe: Template  # slots: title, task
    im: Joined  # slot: the reference image's path (or the release's fallback)


@dataclass(frozen=True)
class Framing:
    prompt_message: Joined  # slots: exemplar_block, base_user
    image_message: Joined  # slots: exemplar_block, base_user_text
    prompt_exemplars: ExemplarBlock
    image_exemplars: ExemplarBlock
    dimension_line: Template  # slots: name, score, text
    descriptions: Descriptions
    dimension_names: dict[str, tuple[str, ...]]  # "prompt" | "image" -> the reply keys, in the release's order


class _Source:
    """One source file's syntax tree, and errors that name the file and the function."""

    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        try:
            self.tree = ast.parse((root / name).read_text(encoding="utf-8"), filename=name)
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            raise OfficialReleaseError(f"{root / name}: cannot read the source ({exc})") from exc

    def error(self, where: str, what: str) -> OfficialReleaseError:
        return OfficialReleaseError(f"{self.name}: {where}: {what}; this route reads the release at commit 0dd8ff54's layout")

    def function(self, name: str) -> ast.FunctionDef:
        found = [n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef) and n.name == name]
        if len(found) != 1:
            raise self.error(name, "function not found (or defined more than once)")
        return found[0]

    def string_list(self, name: str) -> tuple[str, ...]:
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [name] and isinstance(node.value, ast.List):
                if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts):
                    return tuple(e.value for e in node.value.elts)  # type: ignore[attr-defined]
        raise self.error(name, "no module-level list of strings with this name")


def _nodes(scope: ast.AST | list[ast.stmt], kind: type) -> list[Any]:
    roots = scope if isinstance(scope, list) else [scope]
    return [n for root in roots for n in ast.walk(root) if isinstance(n, kind)]


def _slot(node: ast.expr, src: _Source, where: str) -> Slot:
    if isinstance(node, (ast.Name, ast.Attribute, ast.Constant)):
        return Slot(node)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        for value in node.values:
            _slot(value, src, where)
        return Slot(node)
    raise src.error(where, f"unexpected expression {ast.unparse(node)!r}")


def _template(node: ast.expr, src: _Source, where: str) -> Template:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Template((node.value,))
    if not isinstance(node, ast.JoinedStr):
        return Template((_slot(node, src, where),))
    parts: list[str | Slot] = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None:
            parts.append(_slot(value.value, src, where))
        else:
            raise src.error(where, "an f-string with a conversion or format spec")
    return Template(tuple(parts))


def _joins(scope: ast.AST | list[ast.stmt]) -> list[ast.Call]:
    """The `"<sep>".join(<arg>)` calls in a scope, in source order."""
    calls = [
        n
        for n in _nodes(scope, ast.Call)
        if isinstance(n.func, ast.Attribute) and n.func.attr == "join" and isinstance(n.func.value, ast.Constant) and len(n.args) == 1
    ]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset))


def _list_of(arg: ast.expr, scope: ast.AST | list[ast.stmt]) -> ast.List | None:
    """The list literal a join reads: written in the call, or assigned (`lines = [...]`) in the scope."""
    if isinstance(arg, ast.List):
        return arg
    if isinstance(arg, ast.Name):
        for node in _nodes(scope, ast.Assign):
            if [ast.unparse(t) for t in node.targets] == [arg.id] and isinstance(node.value, ast.List):
                return node.value
    return None


def _joined(scope: ast.AST | list[ast.stmt], src: _Source, where: str) -> Joined:
    """The first join of a list literal in the scope."""
    for call in _joins(scope):
        found = _list_of(call.args[0], scope)
        if found is not None:
            items = [Splice(ast.unparse(e.value)) if isinstance(e, ast.Starred) else _template(e, src, where) for e in found.elts]
            return Joined(call.func.value.value, tuple(items))  # type: ignore[attr-defined]
    raise src.error(where, "no '<separator>'.join([...]) of a list")


def _exemplar_block(src: _Source, name: str) -> ExemplarBlock:
    func = src.function(name)
    between = [c.func.value.value for c in _joins(func) if isinstance(c.args[0], ast.Name)]  # type: ignore[attr-defined]
    nones = [r.value.value for r in _nodes(func, ast.Return) if isinstance(r.value, ast.Constant) and isinstance(r.value.value, str)]
    if not between or not nones:
        raise src.error(name, "expected a join of the exemplar blocks and a text returned when none was retrieved")
    return ExemplarBlock(_joined(func, src, name), between[0], nones[0])


def _first_fstring(scope: ast.AST | list[ast.stmt], src: _Source, where: str) -> Template:
    found = sorted(_nodes(scope, ast.JoinedStr), key=lambda n: (n.lineno, n.col_offset))
    if not found:
        raise src.error(where, "no f-string")
    return _template(found[0], src, where)


def _branch(func: ast.FunctionDef, value: str, src: _Source) -> list[ast.stmt]:
    """The body of `if <name> == "<value>":` in the function."""
    for node in _nodes(func, ast.If):
        test = node.test
        if isinstance(test, ast.Compare) and [type(o) for o in test.ops] == [ast.Eq]:
            right = test.comparators[0]
            if isinstance(right, ast.Constant) and right.value == value:
                return node.body
    raise src.error(func.name, f"no branch for {value!r}")


def _co_sections(body: list[ast.stmt], src: _Source, where: str) -> tuple[tuple[str, str], ...]:
    """(label, field) pairs written as ("Label", _text(item.get("field")))."""
    sections = []
    for node in _nodes(body, ast.Tuple):
        label, value = (node.elts + [None, None])[:2]
        fields = [c.args[0].value for c in _nodes(value, ast.Call) if c.args and isinstance(c.args[0], ast.Constant)] if value else []
        if isinstance(label, ast.Constant) and isinstance(label.value, str) and fields:
            sections.append((label.value, str(fields[-1])))
    if not sections:
        raise src.error(where, "no (label, field) sections for CO tasks")
    return tuple(sections)


def _descriptions(src: _Source) -> Descriptions:
    where = "_build_from_dataset_item"
    func = src.function(where)
    co = _branch(func, "co", src)
    co_joins = [c for c in _joins(co) if isinstance(c.args[0], ast.Name)]
    if not co_joins:
        raise src.error(where, "no join of the CO description's lines")
    return Descriptions(
        co_sections=_co_sections(co, src, where),
        co_line=_first_fstring(co, src, where),
        co_sep=co_joins[0].func.value.value,  # type: ignore[attr-defined]
        oe=_first_fstring(_branch(func, "oe", src), src, where),
        im=_joined(_branch(func, "im", src), src, where),
    )


# The values the route supplies to each template (the names the release's code uses for them).
_EXEMPLAR = ("rank", "ex.task_id", "ex.task_description", "ex.prompt_text", "ex.image_path", "dim_lines")
SUPPLIED: dict[str, tuple[str, ...]] = {
    "build_prompt_subjective_messages_with_memory": ("exemplar_block", "base_user"),
    "build_image_subjective_messages_with_memory": ("exemplar_block", "base_user_text"),
    "_format_prompt_exemplar_block": _EXEMPLAR,
    "_format_image_exemplar_block": _EXEMPLAR,
    "_format_dimension_lines": ("name", "score", "text"),
    "_build_from_dataset_item co": ("label", "content"),
    "_build_from_dataset_item oe": ("title", "task"),
    "_build_from_dataset_item im": ("origin_image_abs", "origin_image_rel"),
}


def _check_slots(framing: Framing, src: _Source) -> None:
    """Render every template with exactly the values the route supplies: a slot it does not know is named now."""
    d = framing.descriptions
    rendered: dict[str, Template | Joined] = {
        "build_prompt_subjective_messages_with_memory": framing.prompt_message,
        "build_image_subjective_messages_with_memory": framing.image_message,
        "_format_prompt_exemplar_block": framing.prompt_exemplars.item,
        "_format_image_exemplar_block": framing.image_exemplars.item,
        "_format_dimension_lines": framing.dimension_line,
        "_build_from_dataset_item co": d.co_line,
        "_build_from_dataset_item oe": d.oe,
        "_build_from_dataset_item im": d.im,
    }
    for where, template in rendered.items():
        try:
            template.render({name: [] if name == "dim_lines" else "x" for name in SUPPLIED[where]})
        except KeyError as exc:
            raise src.error(
                where, f"uses {exc.args[0]!r}, which the official route does not supply (it supplies {list(SUPPLIED[where])})"
            ) from None


def read_framing(root: Path) -> Framing:
    """The release's framing, from its memory engine and its subjective core."""
    engine, core = _Source(root, MEMORY_ENGINE), _Source(root, SUBJECTIVE_CORE)
    framing = _framing(engine, core)
    _check_slots(framing, engine)
    return framing


def _framing(engine: _Source, core: _Source) -> Framing:
    prompt_fn, image_fn = "build_prompt_subjective_messages_with_memory", "build_image_subjective_messages_with_memory"
    return Framing(
        prompt_message=_joined(engine.function(prompt_fn), engine, prompt_fn),
        image_message=_joined(engine.function(image_fn), engine, image_fn),
        prompt_exemplars=_exemplar_block(engine, "_format_prompt_exemplar_block"),
        image_exemplars=_exemplar_block(engine, "_format_image_exemplar_block"),
        dimension_line=_first_fstring(engine.function("_format_dimension_lines"), engine, "_format_dimension_lines"),
        descriptions=_descriptions(engine),
        dimension_names={"prompt": core.string_list("PROMPT_DIMENSION_NAMES"), "image": core.string_list("IMAGE_DIMENSION_NAMES")},
    )
