"""Packs: our own format, the official-release importer (on a fixture we wrote), versions, validate_pack."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tasks.importers import read_ateliereval
from tasks.loaders import PackError, read_own_pack
from tasks.models import Task, TaskPack
from tasks.services import pack_save, task_touch
from tasks.validation import validate

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "ateliereval"
ORIGINAL = ROOT / "tasks" / "packs" / "atelier-original"


def test_importer_round_trips_the_fixture(db):
    call_command("load_tasks", str(FIXTURE), "--format", "ateliereval")
    pack = TaskPack.objects.get(name="ateliereval")
    assert pack.source == "ateliereval" and pack.version.startswith("official-")
    source = {r["task_id"]: r for name in ("oe", "co", "im") for r in json.loads((FIXTURE / "dataset" / f"{name}_120.json").read_text())}
    checklists = {
        r["task_id"]: r
        for name in ("oe", "co", "im")
        for r in json.loads((FIXTURE / "evaluator/objective/checklist" / f"{name}_checklist.json").read_text())
    }
    tasks = {t.task_id: t for t in pack.tasks.prefetch_related("tags")}
    assert set(tasks) == set(source)
    for task_id, task in tasks.items():
        record = source[task_id]
        assert sorted(t.name for t in task.tags.all()) == sorted(tag.lstrip("#") for tag in record["category"])
        assert task.prompt_checklist == checklists[task_id]["prompt_checkpoint"]
        assert task.image_checklist == checklists[task_id]["image_checkpoint"]
        if task.category == "IM":
            assert task.seed_prompt == record["gt_prompt"] and task.target_image
            assert task.target_image.read() == (FIXTURE / "dataset" / record["origin_image"]).read_bytes()
        else:
            assert task.brief == record["task"] and task.title == record["title"]
    assert tasks["co_02"].constraints == {k: source["co_02"][k] for k in ("pairing", "layout", "quantity", "text", "constraint")}
    call_command("load_tasks", str(FIXTURE), "--format", "ateliereval")  # idempotent
    assert TaskPack.objects.filter(name="ateliereval").count() == 1 and TaskPack.objects.get(name="ateliereval").revision == 1


def broken_copy(tmp_path: Path, edit) -> Path:
    copy = tmp_path / "release"
    shutil.copytree(FIXTURE, copy)
    edit(copy)
    return copy


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda p: (p / "dataset/co_120.json").unlink(), "co_120.json: file not found"),
        (lambda p: (p / "dataset/oe_120.json").write_text("[{"), "oe_120.json: not valid UTF-8 JSON"),
        (lambda p: (p / "dataset/gt_image/2.png").unlink(), "im_120.json record 1 (im_02): field 'origin_image'"),
        (lambda p: _rewrite(p / "dataset/oe_120.json", 1, "task", 5), "oe_120.json record 1: field 'task' missing or not a string"),
        (
            lambda p: _rewrite(p / "dataset/co_120.json", 0, "category", ["#NotATag"]),
            "co_120.json record 0: field 'category' must be a list of known tags",
        ),
        (
            lambda p: _rewrite(p / "evaluator/objective/checklist/im_checklist.json", 1, "image_checkpoint", "one string"),
            "im_checklist.json record 1 (im_02)",
        ),
        (lambda p: (p / "evaluator/objective/checklist/oe_checklist.json").unlink(), "oe_checklist.json: file not found"),
        (
            lambda p: _rewrite(p / "evaluator/objective/checklist/co_checklist.json", 1, "task_id", "co_77"),
            "co_checklist.json record 1 (co_77): field 'task_id': no task with this id in co_120.json",
        ),
        (
            lambda p: _rewrite(p / "evaluator/objective/checklist/oe_checklist.json", 1, "task_id", "oe_01"),
            "oe_checklist.json record 1 (oe_01): field 'task_id': a second checklist for this task (first: oe_checklist.json record 0)",
        ),
    ],
)
def test_importer_names_file_record_and_field_and_loads_nothing(tmp_path, db, edit, message):
    with pytest.raises(CommandError) as info:
        call_command("load_tasks", str(broken_copy(tmp_path, edit)), "--format", "ateliereval")
    assert message in str(info.value) and "nothing loaded" in str(info.value)
    assert not TaskPack.objects.exists() and not Task.objects.exists()


def _rewrite(path: Path, index: int, field: str, value) -> None:
    records = json.loads(path.read_text())
    records[index][field] = value
    path.write_text(json.dumps(records))


def test_importer_can_skip_absent_checklists_and_images_when_asked(tmp_path, db):
    def strip(p: Path) -> None:
        shutil.rmtree(p / "evaluator")
        shutil.rmtree(p / "dataset" / "gt_image")

    data = read_ateliereval(broken_copy(tmp_path, strip), require_checklists=False, require_images=False)
    im = next(t for t in data.tasks if t.task_id == "im_01")
    assert im.target_image is None and im.seed_prompt and im.prompt_checklist == []
    assert "checklists optional" in data.description


def test_own_pack_errors_name_file_line_and_field(tmp_path):
    pack = tmp_path / "p"
    shutil.copytree(ROOT / "tasks" / "packs" / "sample", pack)
    lines = (pack / "co.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["tags"] = ["Sparkly"]
    del bad["brief"]
    (pack / "co.jsonl").write_text(lines[0] + "\n" + json.dumps(bad) + "\n{not json\n")
    with pytest.raises(PackError) as info:
        read_own_pack(pack)
    assert info.value.problems == [
        "co.jsonl:2: field 'brief' is required",
        "co.jsonl:2: field 'tags'[0] must be a known tag (tasks/packs/FORMAT.md), got 'Sparkly'",
        "co.jsonl:3: invalid JSON (Expecting property name enclosed in double quotes at column 2)",
    ]


def test_editing_a_task_bumps_its_version_and_the_pack_revision(sample_pack):
    task = sample_pack.tasks.get(task_id="oe-s01")
    assert (task.version, sample_pack.revision) == (1, 1)
    assert task_touch(task=task) is False
    task.brief += " Also, the shop cat should be in it."
    task.save()
    assert task_touch(task=task) is True
    sample_pack.refresh_from_db()
    assert (task.version, sample_pack.revision) == (2, 2)


def test_reloading_a_changed_pack_bumps_only_changed_tasks(tmp_path, db):
    pack_dir = tmp_path / "p"
    shutil.copytree(ROOT / "tasks" / "packs" / "sample", pack_dir)
    pack, counts = pack_save(data=read_own_pack(pack_dir))
    assert counts == {"created": 6, "changed": 0, "unchanged": 0}
    text = (pack_dir / "oe.jsonl").read_text().replace("Bakery reopening card", "Bakery reopening postcard")
    (pack_dir / "oe.jsonl").write_text(text)
    pack, counts = pack_save(data=read_own_pack(pack_dir))
    assert counts == {"created": 0, "changed": 1, "unchanged": 5} and pack.revision == 2
    assert pack.tasks.get(task_id="oe-s01").version == 2 and pack.tasks.get(task_id="oe-s02").version == 1


def test_both_packs_load(db):
    call_command("load_tasks", str(ORIGINAL))
    call_command("load_tasks", str(ROOT / "tasks" / "packs" / "sample"))
    original = TaskPack.objects.get(name="atelier-original")
    assert original.tasks.count() == 360
    assert {c: original.tasks.filter(category=c, split="dev").count() for c in ("OE", "CO", "IM")} == {"OE": 20, "CO": 20, "IM": 20}


def fake_embed(texts):
    """A stand-in embedder: identical texts get identical unit vectors, different texts orthogonal ones."""
    distinct = sorted(set(texts))
    return np.eye(len(distinct))[[distinct.index(t) for t in texts]]


def test_validate_reports_band_balance_and_near_duplicates(tmp_path):
    pack = read_own_pack(ROOT / "tasks" / "packs" / "sample")
    assert validate(pack, fake_embed).problems == []
    pack.tasks[0].prompt_checklist = pack.tasks[0].prompt_checklist[:3]
    pack.tasks[1].brief = pack.tasks[0].brief
    pack.tasks.pop()  # one IM task fewer: unbalanced
    problems = validate(pack, fake_embed).problems
    assert any("oe-s01: prompt_checklist has 3 items; OE needs 4–7" in p for p in problems)
    assert any("OE: briefs of oe-s01 and oe-s02 are near-duplicates" in p for p in problems)
    assert any("categories are unbalanced" in p for p in problems)


def test_validate_pack_command_passes_on_our_pack_and_writes_coverage(tmp_path, capsys):
    copy = tmp_path / "original"
    shutil.copytree(ORIGINAL, copy)
    call_command("validate_pack", str(copy), "--write-readme")
    out = capsys.readouterr().out
    assert "OK" in out and "closest OE briefs" in out
    readme = (copy / "README.md").read_text()
    assert "| content | Character |" in readme
    assert readme == (ORIGINAL / "README.md").read_text(), "the committed README's coverage table is out of date"


def test_validate_pack_command_fails_with_every_problem(tmp_path):
    copy = tmp_path / "sample"
    shutil.copytree(ROOT / "tasks" / "packs" / "sample", copy)
    (copy / "im.jsonl").write_text((copy / "im.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(CommandError, match="categories are unbalanced"):
        call_command("validate_pack", str(copy))
