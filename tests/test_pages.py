"""Web flows through HTTP: sign-up, teams, upload, submission page, publishing, leaderboard, downloads, the favicon."""

from __future__ import annotations

import csv
import io
import json

from django.contrib.admin.sites import site
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory

from evaluation.models import Submission
from submissions.admin import SubmissionAdmin, publish


def upload(client, team, pack, data: bytes, name="prompts.jsonl"):
    return client.post(f"/teams/{team.slug}/submit/", {"pack": pack.pk, "prompter": "Model X", "file": SimpleUploadedFile(name, data)})


def publish_all(admin_user):
    request = RequestFactory().post("/admin/")
    request.user = admin_user
    request._messages = type("M", (), {"add": lambda *a, **k: None})()
    publish(SubmissionAdmin(Submission, site), request, Submission.objects.all())


def test_signup_then_create_team(client, db):
    response = client.post("/accounts/signup/", {"username": "newbie", "password1": "a-Long-pass-77", "password2": "a-Long-pass-77"})
    assert response.status_code == 302
    response = client.post("/teams/", {"name": "Night Owls"}, follow=True)
    assert response.status_code == 200 and "Night Owls" in response.content.decode()


def test_team_pages_are_private(client, team, stranger):
    client.force_login(stranger)
    assert client.get(f"/teams/{team.slug}/").status_code == 404
    assert client.get(f"/teams/{team.slug}/submit/").status_code == 404


def test_team_page_curl_example_names_the_pack(owner_client, team):
    page = owner_client.get(f"/teams/{team.slug}/").content.decode()
    example = page.split("Submit with <code>curl")[1].split("</code>")[0]
    assert "-F pack=PACK" in example and "-F prompter=NAME" in example  # a pack's name, as the README writes it
    assert "<code>sample@1</code> names a version" in page


def test_token_created_on_team_page_is_shown_once(owner_client, team):
    response = owner_client.post(f"/teams/{team.slug}/tokens/", {"name": "ci"}, follow=True)
    page = response.content.decode()
    assert "shown once" in page and "atl_" in page
    assert "atl_" not in owner_client.get(f"/teams/{team.slug}/").content.decode().split("shown once")[-1].split("<code>atl_")[0]


def test_upload_evaluates_and_page_shows_status_scores_and_provenance(owner_client, team, sample_pack, example_prompts):
    response = upload(owner_client, team, sample_pack, example_prompts)
    assert response.status_code == 302
    submission = Submission.objects.get()
    page = owner_client.get(response["Location"]).content.decode()
    assert submission.status == "done", submission.error
    assert 'id="status">done' in page
    assert "sample v1" in page and submission.judge_label in page
    assert "smoke (random weights)" in page
    assert 'class="thumb"' in page
    assert "breakdown.csv" in page
    scores = page.split("<h2>Scores</h2>")[1].split("<h2>")[0]
    for score in submission.figures.filter(scope__in=["overall", "category", "backend"]):
        assert f'<td>{score.key}</td><td class="num">{score.value:.1f}</td>' in scores
    overall = submission.figures.get(scope="overall")  # also first on the page, above the provenance (a phone's first screen)
    first = page.split('id="overall-first">')[1].split("</p>")[0]
    assert f"Overall score <strong>{overall.value:.1f}</strong>" in first and page.index("overall-first") < page.index('class="provenance"')
    top1 = submission.figures.get(scope="top1", key="image_objective")
    assert f'<tr><td>top1</td><td>image_objective</td><td class="num">{top1.value:.3f}</td>' in scores
    # the offline judge makes no model calls; the team sees them as its cost (one line), a visitor as calls
    assert "Judge calls:" not in page
    assert "Judge cost: 0 requests · 0 prompt tokens · 0 completion tokens" in page and "no prices configured" in page


def test_unpublished_submission_is_hidden_from_strangers(client, owner_client, team, sample_pack, example_prompts, stranger):
    upload(owner_client, team, sample_pack, example_prompts)
    submission = Submission.objects.get()
    client.force_login(stranger)
    assert client.get(f"/submissions/{submission.pk}/").status_code == 404
    assert client.get(f"/submissions/{submission.pk}/breakdown.csv").status_code == 404


def test_published_submission_is_on_the_leaderboard(client, owner_client, team, sample_pack, example_prompts, admin_user):
    upload(owner_client, team, sample_pack, example_prompts)
    assert "Model X" not in client.get("/").content.decode()
    publish_all(admin_user)
    submission = Submission.objects.get()
    assert submission.published
    page = client.get("/").content.decode()
    overall = submission.figures.get(scope="overall").value
    assert "Model X" in page and f"{overall:.1f}" in page
    assert submission.judge_label in page


def test_leaderboard_sorts_by_column(client, owner_client, team, sample_pack, example_prompts, admin_user):
    upload(owner_client, team, sample_pack, example_prompts)
    data = "\n".join(json.dumps({"task_id": t, "prompt": "a thing"}) for t in ("oe-s01", "co-s01", "im-s01")).encode()
    owner_client.post(
        f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "Terse", "file": SimpleUploadedFile("t.jsonl", data)}
    )
    publish_all(admin_user)
    scores = {s.prompter: s.figures.get(scope="category", key="OE").value for s in Submission.objects.all()}
    best, worst = sorted(scores, key=scores.get, reverse=True)
    ascending = client.get("/?sort=OE&dir=asc").content.decode()
    descending = client.get("/?sort=OE&dir=desc").content.decode()
    if scores[best] != scores[worst]:
        assert ascending.index(worst) < ascending.index(best)
        assert descending.index(best) < descending.index(worst)


def test_breakdown_downloads_csv_and_jsonl(client, owner_client, team, sample_pack, example_prompts, admin_user):
    upload(owner_client, team, sample_pack, example_prompts)
    publish_all(admin_user)
    submission = Submission.objects.get()
    response = client.get(f"/submissions/{submission.pk}/breakdown.csv")
    assert response.status_code == 200 and response.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    renders = sum(b["images_per_prompt"] for b in submission.backends) * submission.entries.count()
    assert len(rows) == renders
    first = rows[0]
    assert first["image_url"].startswith("http://testserver/media/renders/")
    assert first["prompt"] and first["backend"] and first["seed"]
    jsonl = client.get(f"/submissions/{submission.pk}/breakdown.jsonl")
    records = [json.loads(line) for line in b"".join(jsonl.streaming_content).decode().splitlines()]
    assert len(records) == renders
    dev = next(r for r in records if r["task_id"] == "co-s01")
    assert isinstance(dev["prompt_checklist"], dict) and "The prompt states that the tomatoes are orange" in dev["prompt_checklist"]
    hidden = next(r for r in records if r["task_id"] == "oe-s02")
    assert isinstance(hidden["prompt_checklist"], list) and set(hidden["prompt_checklist"]) <= {0, 1, None}
    assert client.get(f"/submissions/{submission.pk}/breakdown.xml").status_code == 404


def test_favicon_is_served_and_linked_from_every_page(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")
    assert finders.find("favicon.svg") is not None
    assert 'rel="icon"' in client.get("/tasks/").content.decode()
