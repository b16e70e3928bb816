"""Rendering a pack's targets is one revision of the pack: boards never split over one render_targets run, and a
run that changes nothing judged raises nothing (issue 18, item 7)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from submissions.services import submission_create
from tasks.loaders import read_own_pack
from tasks.models import TargetReference, TaskPack
from tasks.services import pack_save

ROOT = Path(__file__).resolve().parent.parent
IM_TASKS = 4


@pytest.fixture
def im_pack(transactional_db, tmp_path) -> TaskPack:
    """A pack of IM tasks with seed prompts and no targets yet (the sample pack's test IM task, four times)."""
    template = json.loads((ROOT / "tasks" / "packs" / "sample" / "im.jsonl").read_text().splitlines()[1])
    (tmp_path / "pack.json").write_text(json.dumps({"name": "several-im", "version": "1"}))
    tasks = [{**template, "task_id": f"im-r{k}", "seed_prompt": f"{template['seed_prompt']}, variant {k}"} for k in range(IM_TASKS)]
    (tmp_path / "im.jsonl").write_text("\n".join(json.dumps(t) for t in tasks))
    pack, _ = pack_save(data=read_own_pack(tmp_path))
    return pack


def render(*options: str) -> str:
    out = io.StringIO()
    call_command("render_targets", "--pack", "several-im", "--backend", "smoke-sd-fast", "--candidates", "1", *options, stdout=out)
    return out.getvalue()


def revision(pack: TaskPack) -> int:
    pack.refresh_from_db()
    return pack.revision


def test_rendering_every_target_and_reference_raises_the_revision_once(im_pack, team):
    before = submission_create(
        team=team, pack=im_pack, prompter="before", filename="p.jsonl", data=b'{"task_id": "im-r0", "prompt": "a key"}\n'
    )
    assert revision(im_pack) == 1
    out = render("--references")
    assert revision(im_pack) == 2, out
    assert "pack revision 1 -> 2" in out
    assert list(im_pack.tasks.values_list("version", flat=True)) == [2] * IM_TASKS  # every task changed, the pack once
    assert TargetReference.objects.filter(task__pack=im_pack).count() == IM_TASKS * 2  # two enabled test backends
    after = submission_create(
        team=team, pack=im_pack, prompter="after", filename="p.jsonl", data=b'{"task_id": "im-r1", "prompt": "a key"}\n'
    )
    assert (before.pack_revision, after.pack_revision) == (1, 2)

    render("--references")  # nothing left to render
    render("--force", "--references")  # the same targets again: same bytes, nothing judged changed
    assert revision(im_pack) == 2
    assert list(im_pack.tasks.values_list("version", flat=True)) == [2] * IM_TASKS


def test_new_references_alone_are_one_more_revision(im_pack):
    render()
    assert revision(im_pack) == 2  # targets only
    render()
    assert revision(im_pack) == 2
    render("--references")  # c_k references change target similarity's scale: what is judged
    assert revision(im_pack) == 3
    render("--references")
    assert revision(im_pack) == 3
