"""The task browser, IM target rendering, and the leak test for hidden test-split content."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from evaluation.models import Submission
from evaluator.metrics.targets import median_distances, most_representative
from submissions.services import submission_create, submissions_publish, token_create
from tasks.models import Task, TaskPack

ROOT = Path(__file__).resolve().parent.parent


def test_most_representative_is_the_candidate_nearest_the_middle():
    # Three candidates around one direction and an outlier: the middle one of the cluster wins.
    angles = np.radians([0.0, 10.0, 20.0, 120.0])
    candidates = np.stack([np.cos(angles), np.sin(angles)], axis=1) * np.array([[1.0], [3.0], [0.5], [2.0]])
    distances = median_distances(candidates)
    assert most_representative(candidates) == 1
    assert distances[3] > distances[1]
    references = np.array([[1.0, 0.0], [1.0, 0.05]])
    assert most_representative(candidates, references) == 0


@pytest.mark.django_db(transaction=True)
def test_render_targets_stores_image_seed_and_config_and_bumps_versions(sample_pack, capsys):
    task = sample_pack.tasks.get(task_id="im-s02")
    assert not task.target_image
    call_command("render_targets", "--pack", "sample", "--backend", "smoke-sd", "--candidates", "3")
    task.refresh_from_db()
    sample_pack.refresh_from_db()
    assert task.target_image and task.target_seed is not None and len(task.target_config_hash) == 16
    assert "smoke (random weights)" in task.target_note and "candidate" in task.target_note
    assert (task.version, sample_pack.revision) == (2, 2)
    assert sample_pack.tasks.get(task_id="im-s01").version == 1  # shipped target left alone
    call_command("render_targets", "--pack", "sample", "--backend", "smoke-sd")  # nothing left to do
    assert "0 target(s)" in capsys.readouterr().out
    with pytest.raises(CommandError, match="not enabled"):
        call_command("render_targets", "--pack", "sample", "--backend", "sdxl-base")


def test_task_list_filters_and_shows_coverage(client, sample_pack):
    page = client.get("/tasks/").content.decode()
    assert "oe-s01" in page and "im-s02" in page and "vendor/plotly/plotly.min.js" in page
    coverage = json.loads(page.split('id="coverage-data" type="application/json">')[1].split("</script>")[0])
    assert coverage["categories"] == ["OE", "CO", "IM"] and len(coverage["tags"]) == 24
    assert coverage["z"][1][coverage["tags"].index("Typography")] == 2
    filtered = client.get(f"/tasks/?pack={sample_pack.pk}&category=CO&split=test").content.decode()
    assert "co-s02" in filtered and "co-s01" not in filtered and "oe-s02" not in filtered
    by_tag = client.get(f"/tasks/?pack={sample_pack.pk}&tag=Knolling_Layout").content.decode()
    assert "im-s02" in by_tag and "im-s01" not in by_tag
    # What the pack's six tasks can tell apart: nothing, even a 10-point gap, and a clean sweep needs 10 tasks.
    shown = page.split('id="separability"')[1].split("<h2>")[0]
    assert "all 6 of its tasks (2 in its smallest category)" in shown and "only from 10 tasks on" in shown
    assert shown.count('<td class="num">0 %</td>') == 6


def test_dev_task_page_shows_everything(client, sample_pack):
    task = sample_pack.tasks.get(task_id="im-s01")
    page = html.unescape(client.get(f"/tasks/{sample_pack.pk}/im-s01/").content.decode())
    assert task.seed_prompt in page and task.prompt_checklist[0] in page and task.image_checklist[-1] in page
    assert task.target_image.url in page


def public_strings(pack: TaskPack) -> str:
    parts = []
    for task in pack.tasks.all():
        parts += [task.title, task.brief, *list((task.constraints or {}).values())]
        if task.split == "dev":
            parts += [*task.prompt_checklist, *task.image_checklist, task.seed_prompt]
    return "\n".join(parts)


def hidden_strings(pack: TaskPack) -> set[str]:
    """Checklist items and seed prompts of test tasks that do not also appear in public text."""
    public = public_strings(pack)
    hidden = set()
    for task in pack.tasks.filter(split="test"):
        hidden |= {s for s in [*task.prompt_checklist, *task.image_checklist, task.seed_prompt] if s and s not in public}
    return hidden


@pytest.mark.django_db(transaction=True)
def test_no_public_page_api_or_download_leaks_test_split_content(client, sample_pack, team, scripted_judge, settings):
    call_command("load_tasks", str(ROOT / "tasks" / "packs" / "atelier-original"))
    call_command("render_targets", "--pack", "sample", "--backend", "smoke-sd-fast", "--candidates", "2")
    prompts = "\n".join(json.dumps({"task_id": t.task_id, "prompt": f"A picture for {t.title}"}) for t in sample_pack.tasks.all())
    submission = submission_create(team=team, pack=sample_pack, prompter="Leaky?", filename="p.jsonl", data=prompts.encode())
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    _, token = token_create(team=team, name="t")
    original = TaskPack.objects.get(name="atelier-original")

    responses = {"/": client.get("/"), "/tasks/": client.get("/tasks/")}
    for pack in (sample_pack, original):
        for split in ("test", "dev"):
            url = f"/tasks/?pack={pack.pk}&split={split}"
            responses[url] = client.get(url)
        for task in pack.tasks.filter(split="test"):
            url = f"/tasks/{pack.pk}/{task.task_id}/"
            responses[url] = client.get(url)
    for url in (
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/breakdown.csv",
        f"/submissions/{submission.pk}/breakdown.jsonl",
    ):
        responses[url] = client.get(url)
    responses["api"] = client.get(f"/api/v1/submissions/{submission.pk}", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert all(r.status_code == 200 for r in responses.values()), {u: r.status_code for u, r in responses.items() if r.status_code != 200}
    hidden = hidden_strings(sample_pack) | hidden_strings(original)
    assert len(hidden) > 3000  # the original pack's 300 test tasks carry thousands of hidden items
    for url, response in responses.items():
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = html.unescape(body.decode())
        text += json.dumps(json.loads(text)) if url == "api" else ""
        leaked = [s for s in hidden if s in text]
        assert leaked == [], f"{url} shows hidden test-split content: {leaked[:3]}"
    # The dev checklist does show: the test above would notice a page that printed nothing at all.
    assert sample_pack.tasks.get(task_id="co-s01").prompt_checklist[0] in html.unescape(
        client.get(f"/tasks/{sample_pack.pk}/co-s01/").content.decode()
    )


def documented_public() -> dict[str, str]:
    """Each task field of docs/people.md's table, with the first word of its public-page cell: yes, dev or no."""
    rows = [line.split("|")[1:3] for line in (ROOT / "docs" / "people.md").read_text().splitlines() if line.startswith("| `")]
    return {name: cell.split()[0].strip(",") for fields, cell in rows for name in re.findall(r"`(\w+)`", fields)}


def field_texts(task: Task, name: str) -> list[str]:
    """A field's value as the task page would print it, empty values left out."""
    value = getattr(task, name)
    special = {
        "tags": lambda: [t.name for t in task.tags.all()],
        "category": lambda: [task.get_category_display()],
        "version": lambda: [f"task version {value}"],
        "constraints": lambda: list(value.values()),
        "target_image": lambda: [value.url] if value else [],
    }
    texts = special[name]() if name in special else value if isinstance(value, list) else [value]
    return [str(text) for text in texts if text not in ("", None)]


def test_the_task_fields_documented_public_are_what_the_task_page_shows(client, sample_pack):
    documented = documented_public()
    assert set(documented) == {f.name for f in [*Task._meta.local_fields, *Task._meta.local_many_to_many]} - {"id", "pack"}
    for task in sample_pack.tasks.all():
        page = html.unescape(client.get(f"/tasks/{sample_pack.pk}/{task.task_id}/").content.decode())
        for name, public in documented.items():
            shown = public == "yes" or (public == "dev" and task.is_public)
            wrong = [text for text in field_texts(task, name) if (text in page) != shown]
            assert not wrong, f"{task.task_id} ({task.split}): {name} is documented {'shown' if shown else 'hidden'}: {wrong[:2]}"
