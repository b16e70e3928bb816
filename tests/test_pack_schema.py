"""Task packs (own format) checked against TASK_SCHEMA / MANIFEST_SCHEMA: every problem names file, line and field,
the rules a schema cannot state still hold, and a bad pack loads nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from jsonschema import Draft202012Validator

from tasks.loaders import MANIFEST_SCHEMA, TASK_SCHEMA, PackError, read_own_pack
from tasks.models import Task, TaskPack

SAMPLE = Path(__file__).resolve().parent.parent / "tasks" / "packs" / "sample"


def pack_with(tmp_path: Path, filename: str, line: int, change: dict, drop: tuple[str, ...] = ()) -> Path:
    """A copy of the sample pack whose `filename` has `change` merged into (and `drop` removed from) record `line`."""
    pack = tmp_path / "p"
    shutil.copytree(SAMPLE, pack)
    lines = (pack / filename).read_text().splitlines()
    record = {k: v for k, v in json.loads(lines[line - 1]).items() if k not in drop} | change
    lines[line - 1] = json.dumps(record)
    (pack / filename).write_text("\n".join(lines) + "\n")
    return pack


def problems_of(pack: Path) -> list[str]:
    with pytest.raises(PackError) as info:
        read_own_pack(pack)
    return info.value.problems


def test_the_schemas_are_draft_2020_12() -> None:
    Draft202012Validator.check_schema(TASK_SCHEMA)
    Draft202012Validator.check_schema(MANIFEST_SCHEMA)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"title": 5}, "oe.jsonl:2: field 'title' must be a string, got 5"),
        ({"brief": "   "}, "oe.jsonl:2: field 'brief' must be a non-empty string, got '   '"),
        ({"split": "train"}, "oe.jsonl:2: field 'split' must be 'dev' or 'test', got 'train'"),
        ({"prompt_checklist": "one"}, "oe.jsonl:2: field 'prompt_checklist' must be a list, got 'one'"),
        ({"image_checklist": ["ok", ""]}, "oe.jsonl:2: field 'image_checklist'[1] must be a non-empty string, got ''"),
        ({"tags": ["Character\n"]}, "oe.jsonl:2: field 'tags'[0] must be a known tag (tasks/packs/FORMAT.md), got 'Character\\n'"),
        ({"constraints": {"layout": 3}}, "oe.jsonl:2: field 'constraints'['layout'] must be a string, got 3"),
        (
            {"seed": "x"},
            "oe.jsonl:2: unknown field 'seed' (allowed: task_id, category, split, title, brief, constraints, "
            "tags, prompt_checklist, image_checklist, seed_prompt, target_image)",
        ),
    ],
)
def test_a_record_of_the_wrong_shape_is_named_by_file_line_and_field(tmp_path, change, problem) -> None:
    assert problems_of(pack_with(tmp_path, "oe.jsonl", 2, change)) == [problem]


def test_every_problem_of_a_record_is_listed_in_the_order_of_its_fields_names(tmp_path) -> None:
    pack = pack_with(tmp_path, "co.jsonl", 1, {"split": None, "constraints": {"layout": "left", "mood": "calm"}}, drop=("task_id",))
    assert problems_of(pack) == [
        "co.jsonl:1: unknown field 'constraints'['mood'] (allowed: pairing, layout, quantity, text, constraint)",
        "co.jsonl:1: field 'split' must be 'dev' or 'test', got None",
        "co.jsonl:1: field 'task_id' is required",
    ]


@pytest.mark.parametrize(
    ("filename", "change", "drop", "problem"),
    [
        ("oe.jsonl", {"category": "CO"}, (), "oe.jsonl:1: field 'category' is 'CO' but the file holds OE tasks"),
        ("co.jsonl", {"constraints": {}}, (), "co.jsonl:1: field 'constraints' is required for CO tasks"),
        ("oe.jsonl", {"target_image": "targets/im-s01.png"}, (), "oe.jsonl:1: field 'target_image' is only for IM tasks"),
        ("im.jsonl", {}, ("seed_prompt", "target_image"), "im.jsonl:1: an IM task needs 'seed_prompt' or 'target_image'"),
        ("im.jsonl", {"target_image": "targets/none.png"}, (), "im.jsonl:1: field 'target_image': file 'targets/none.png' not found in "),
    ],
)
def test_rules_across_fields_files_and_disk_are_still_checked(tmp_path, filename, change, drop, problem) -> None:
    (found,) = problems_of(pack_with(tmp_path, filename, 1, change, drop))
    assert found.startswith(problem)


def test_a_bad_manifest_names_its_fields(tmp_path) -> None:
    pack = tmp_path / "p"
    shutil.copytree(SAMPLE, pack)
    (pack / "pack.json").write_text(json.dumps({"name": "", "title": 3, "owner": "me"}))
    assert problems_of(pack) == [
        f"{pack / 'pack.json'}: field 'name' must be a non-empty string, got ''",
        f"{pack / 'pack.json'}: unknown field 'owner' (allowed: name, version, title, description, license)",
        f"{pack / 'pack.json'}: field 'title' must be a string, got 3",
        f"{pack / 'pack.json'}: field 'version' is required",
    ]


def test_valid_records_read_as_before(tmp_path) -> None:
    pack = read_own_pack(pack_with(tmp_path, "oe.jsonl", 1, {"title": "  Spaced title  ", "tags": ["#Character", "Object"]}))
    first = next(t for t in pack.tasks if t.where == "oe.jsonl:1")
    assert first.title == "Spaced title" and first.tags == ["#Character", "Object"] and first.constraints == {}
    im = next(t for t in pack.tasks if t.category == "IM")
    assert im.target_image == tmp_path / "p" / "targets" / "im-s01.png" and im.seed_prompt
    assert (pack.name, pack.version, pack.license) == ("sample", "1", "CC BY 4.0")


def test_a_pack_with_one_bad_record_loads_nothing(tmp_path, db) -> None:
    pack = pack_with(tmp_path, "im.jsonl", 2, {"tags": "Character"})
    with pytest.raises(CommandError, match=r"im.jsonl:2: field 'tags' must be a list, got 'Character'"):
        call_command("load_tasks", str(pack))
    assert not TaskPack.objects.exists() and not Task.objects.exists()
