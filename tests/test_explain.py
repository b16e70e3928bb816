"""Issue 21, item 4 "Explain, don't assume": the smoke badge's page, /judge/'s reasons, the study's focused layout."""

from __future__ import annotations

import html
import re

import pytest

from ratings.services import expert_ratings_import
from studies.services import study_create
from tests.test_expert_queue import expert
from tests.test_pages import publish_all, upload
from tests.test_ratings_and_agreement import judged, ratings_file  # noqa: F401 (judged is a fixture)
from tests.test_studies import SKILLED, link, start


def body(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def test_smoke_page_says_what_random_weights_mean_and_names_the_settings(client, db):
    page = body(client.get("/about/smoke/"))
    assert "random weights" in page and "noise" in page
    for setting in ("config/backends.json", '"enabled": true', "ATELIER_CLIP_PRETRAINED", "OPENAI_BASE_URL", "ATELIER_JUDGE_MODEL"):
        assert setting in page, setting


def test_every_smoke_badge_on_the_board_links_to_the_smoke_page(client, owner_client, team, sample_pack, example_prompts, admin_user):
    upload(owner_client, team, sample_pack, example_prompts)
    publish_all(admin_user)
    page = body(client.get("/"))
    badges = [b for b in re.findall(r'<(\w+) class="badge smoke"([^>]*)>([^<]*)<', page) if "random weights" in b[2]]
    assert ("smoke (random weights)" in [text for _, _, text in badges]) and len(badges) >= 2  # the judge's and the backends'
    assert all(tag == "a" and 'href="/about/smoke/"' in attrs for tag, attrs, _ in badges), badges


@pytest.mark.django_db(transaction=True)
def test_judge_page_says_why_there_is_no_correlation_and_that_one_rater_rated(judged, client, django_user_model):
    for name in ("ana", "ben"):
        expert(django_user_model, name, hidden=True)
    rows = [{"rater": "ana", "task_id": t, "scores": {"instructional_clarity": 3}} for t in ("oe-s01", "oe-s02")]
    expert_ratings_import(submission=judged, filename="r.jsonl", data=ratings_file(rows))
    page = html.unescape(body(client.get("/judge/")))
    assert "These ratings are one rater's: no expert–expert agreement can be measured" in page
    assert (
        "No rubric correlation between the judge and the experts: only 2 units rated and judged, and a correlation needs at least 3."
        in page
    )
    assert (
        "No judge–expert correlation like with like: no unit (a prompt or image on one dimension) is rated by at least two experts" in page
    )

    expert_ratings_import(submission=judged, filename="r.jsonl", data=ratings_file([{**r, "rater": "ben"} for r in rows]))
    page = html.unescape(body(client.get("/judge/")))
    assert 'id="one-rater"' not in page
    assert (
        "No judge–expert correlation like with like: only 2 units rated by at least two experts and judged, and a correlation needs at least 3."
        in page
    )


def test_a_study_task_page_has_no_way_off_but_withdrawing(client, sample_pack):
    url = link(study_create(name="Focus", pack=sample_pack, per_category=1, rounds=1))
    start(client, url, SKILLED)
    client.post(url + "intro")
    page = body(client.get(url))
    assert 'name="text"' in page  # the task itself, not an introduction
    links = set(re.findall(r'href="([^"]*)"', page))
    assert not links & {"/", "/tasks/", "/judge/"} and not any("login" in href or "signup" in href for href in links), links
    assert f"{url}withdraw" in links
