"""The upload page (/teams/<slug>/submit/): a pack is chosen from the start, and an example file is a link away, served by
the site itself (no internet needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tasks.models import TaskPack

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "demo_prompts.jsonl"


def selected_pack(page: str) -> list[str]:
    select = re.search(r'<select name="pack"[^>]*>(.*?)</select>', page, re.S).group(1)
    return re.findall(r'<option value="(\d+)" selected>', select)


def test_upload_form_preselects_the_only_pack_and_links_the_example_file(owner_client, team, sample_pack):
    page = owner_client.get(f"/teams/{team.slug}/submit/").content.decode()
    assert selected_pack(page) == [str(sample_pack.pk)]
    assert 'href="/examples/prompts.jsonl" download id="example-file"' in page and 'id="no-pack"' not in page


def test_upload_form_preselects_the_newest_of_several_packs(owner_client, team, sample_pack):
    newer = TaskPack.objects.create(name="another", version="2")
    assert selected_pack(owner_client.get(f"/teams/{team.slug}/submit/").content.decode()) == [str(newer.pk)]


@pytest.mark.django_db
def test_upload_form_without_any_pack_says_so(owner_client, team):
    assert 'id="no-pack"' in owner_client.get(f"/teams/{team.slug}/submit/").content.decode()


def test_the_example_file_downloads_from_the_site_itself(client, sample_pack):
    response = client.get("/examples/prompts.jsonl")
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == 'attachment; filename="example_prompts.jsonl"'
    data = b"".join(response.streaming_content)
    assert data == EXAMPLE.read_bytes()
    assert set(re.findall(rb'"task_id": "([^"]+)"', data)) <= {
        t.encode() for t in sample_pack.tasks.values_list("task_id", flat=True)
    }  # the sample pack's tasks
