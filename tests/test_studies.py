"""Human studies through the site (Django test client; the browser walk is in test_browser_study.py):
links, consent, questionnaire and tier, drafts, submissions, IM attempts, withdrawal, exports, human rows."""

from __future__ import annotations

import csv
import html
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from studies import protocol
from studies.models import Assignment, Attempt, Invitation, Participant, Study
from studies.services import StudyError, invitations_create, study_create

SKILLED = {
    "t2i_experience": "gt2y",
    "t2i_frequency": "daily",
    "professional": "yes",
    "art_background": "formal",
    "concepts": ["seed", "cfg", "composition"],
    "check_seed": "seed",
    "check_cfg": "strict",
    "check_thirds": "lines",
}
NOVICE = {
    "t2i_experience": "never",
    "t2i_frequency": "never",
    "professional": "no",
    "art_background": "none",
    "check_seed": "unsure",
    "check_cfg": "unsure",
    "check_thirds": "centre",
}


@pytest.fixture
def study(sample_pack):
    return study_create(name="Pilot", pack=sample_pack, per_category=1, rounds=1)


def link(study) -> str:
    return f"/study/{invitations_create(study=study, count=1)[0].token}/"


def start(client, url: str, answers: dict) -> Participant:
    assert client.post(url + "consent", {"agree": "yes"}).status_code == 302
    assert client.post(url + "questionnaire", answers).status_code == 302
    return Participant.objects.get(invitation__digest=Invitation.digest_of(url.strip("/").split("/")[-1]))


def do_all_tasks(client, url: str, participant: Participant, text: str = "a red sun above three blue hills, flat poster") -> None:
    for assignment in participant.assignments.order_by("position"):
        if assignment.intro:
            client.post(url + "intro")
        client.get(url)
        assert (
            client.post(url + "submit", {"position": assignment.position, "text": f"{text} ({assignment.task.task_id})"}).status_code == 302
        )


def test_shipped_protocol_is_valid_and_the_tier_rule_is_applied_as_documented():
    shipped = protocol.defaults()
    protocol.check(shipped["questionnaire"], shipped["tier_rule"], shipped["modules"])
    assert protocol.place(shipped["tier_rule"], SKILLED).tier == "skilled"
    assert protocol.place(shipped["tier_rule"], NOVICE).tier == "novice"
    # Experience alone is not enough: the knowledge checks are required for skilled.
    bluffer = {**SKILLED, "check_seed": "unsure"}
    assert protocol.place(shipped["tier_rule"], bluffer).tier == "novice"
    assert protocol.place(shipped["tier_rule"], SKILLED).points == 3 + 2 + 2 + 2 + 1.5 + 2 + 2 + 1


def test_a_broken_protocol_is_refused_naming_the_field():
    shipped = protocol.defaults()
    rule = {**shipped["tier_rule"], "points": {**shipped["tier_rule"]["points"], "no_such_question": {"a": 1}}}
    with pytest.raises(protocol.ProtocolError, match="no_such_question"):
        protocol.check(shipped["questionnaire"], rule, shipped["modules"])
    with pytest.raises(protocol.ProtocolError, match="questions/0/kind"):
        protocol.check({"questions": [{"key": "a", "kind": "essay", "text": "?"}]}, shipped["tier_rule"], shipped["modules"])


def test_plans_spread_over_tasks_randomise_module_order_and_never_repeat_a_task():
    tasks = {c: [f"{c}{i}" for i in range(6)] for c in ("OE", "CO", "IM")}
    plan = protocol.draw_plan(tasks, {"OE0": 3, "OE1": 3}, rounds=2, per_category=2, seed="P-AAAAAA")
    assert len(plan) == 12 and len({t for _, _, t in plan}) == 12
    assert not {"OE0", "OE1"} & {t for _, _, t in plan}  # the least-taken tasks come first
    for rnd in (0, 1):  # each round holds every module once, as one block of its tasks
        modules = [c for r, c, _ in plan if r == rnd]
        assert len(dict.fromkeys(modules)) == 3 and modules == sorted(modules, key=modules.index)
    firsts = {tuple(dict.fromkeys(c for r, c, _ in protocol.draw_plan(tasks, {}, 1, 1, seed=f"P-{i}"))) for i in range(30)}
    assert len(firsts) > 1  # the module order is drawn per participant
    with pytest.raises(protocol.ProtocolError, match="OE: 6 task"):
        protocol.draw_plan(tasks, {}, rounds=4, per_category=2, seed="x")


def test_participant_walks_consent_questionnaire_tasks_and_becomes_a_human_row(client, study):
    url = link(study)
    assert "Consent" in client.get(url).content.decode()
    client.post(url + "consent", {})  # no tick: told so, nothing recorded
    assert Participant.objects.get().consented is None
    client.post(url + "consent", {"agree": "yes"})
    page = client.post(url + "questionnaire", {"t2i_experience": "gt2y"})
    assert page.status_code == 400 and "Please answer this question." in page.content.decode()
    assert not Assignment.objects.exists()
    client.post(url + "questionnaire", SKILLED)
    participant = Participant.objects.get()
    assert participant.tier == "skilled" and participant.assignments.count() == 3
    assert "Start" in client.get(url).content.decode()  # the first module's introduction
    first = participant.assignments.order_by("position").first()
    client.post(url + "intro")
    assert first.task.brief in html.unescape(client.get(url).content.decode())  # briefs hold apostrophes
    assert client.post(url + "draft", {"position": first.position, "text": "half a thought"}).json() == {"saved": True}
    assert "half a thought" in client.get(url).content.decode()  # a reload keeps the draft
    resumed = Client().get(url).content.decode()  # pause, and resume later elsewhere: the link alone is the key
    assert "half a thought" in resumed and "0 of 3 tasks done" in resumed
    for bad, message in (("   ", "Write a prompt"), ("x" * (study.max_prompt_chars + 1), "the limit is")):
        response = client.post(url + "submit", {"position": first.position, "text": bad}, follow=True)
        assert message in response.content.decode()
    client.post(url + "submit", {"position": first.position, "text": "my first prompt"})
    twice = client.post(url + "submit", {"position": first.position, "text": "a double click"}, follow=True)
    assert "already submitted" in twice.content.decode()
    assert Assignment.objects.get(pk=first.pk).text == "my first prompt"
    do_all_tasks(client, url, participant)
    again = client.post(url + "submit", {"position": first.position, "text": "a second click"}, follow=True)
    assert "Thank you" in again.content.decode()
    participant.refresh_from_db()
    assert participant.completed and participant.submission.origin == "human" and participant.submission.status == "done"
    assert not participant.submission.published  # one person is never a board row of their own
    assert all(a.seconds is not None and a.text for a in participant.assignments.all())
    board = client.get("/").content.decode()
    assert "Humans — skilled" in board and "Humans — all" in board and "Humans — novice" not in board
    assert "coverage 3/6 tasks" in board and "did 3 of the board" in board


def test_human_row_task_score_is_the_mean_over_the_participants_who_did_it(client, study):
    from evaluation.models import Figure, HumanRow

    people = []
    for answers in (SKILLED, NOVICE):
        url = link(study)
        participant = start(client, url, answers)
        do_all_tasks(client, url, participant, text="flat poster" if answers is NOVICE else "a detailed flat poster, red sun, navy hills")
        people.append(Participant.objects.get(pk=participant.pk))
    row = HumanRow.objects.get(tier="all")
    pooled = {f["key"]: f["value"] for f in row.figures if f["scope"] == "task"}
    own = [dict(Figure.objects.filter(submission=p.submission, scope="task").values_list("key", "value")) for p in people]
    for task_id, value in pooled.items():
        values = [o[task_id] for o in own if task_id in o]
        assert value == pytest.approx(sum(values) / len(values))
    assert row.participants == 2 and {r.tier for r in HumanRow.objects.all()} == {"novice", "skilled", "all"}


def test_withdrawal_deletes_prompts_answers_and_the_human_rows(client, study):
    from evaluation.models import HumanRow, Submission

    url = link(study)
    participant = start(client, url, NOVICE)
    do_all_tasks(client, url, participant)
    assert HumanRow.objects.exists()
    assert "cannot be undone" in client.get(url + "withdraw").content.decode()
    client.post(url + "withdraw", {"confirm": "yes"})
    participant.refresh_from_db()
    assert participant.withdrawn and participant.answers == {} and not participant.assignments.exists()
    assert not Submission.objects.filter(origin="human").exists() and not HumanRow.objects.exists()
    assert "withdrew" in client.get(url).content.decode()


def test_links_that_cannot_be_used_say_why(client, study):
    assert "not valid" in client.get("/study/not-a-token/").content.decode()
    expired = invitations_create(study=study, count=1)[0]
    expired.expires = timezone.now() - timedelta(days=1)
    expired.save()
    assert client.get(f"/study/{expired.token}/").status_code == 410
    url = link(study)
    study.is_open = False
    study.save()
    response = client.get(url)
    assert response.status_code == 410 and "closed" in response.content.decode()
    assert not Participant.objects.exists()  # nothing was started by refused links


def test_study_needs_enough_tasks_and_a_unique_name(sample_pack):
    with pytest.raises(StudyError, match="too few"):
        study_create(name="Too big", pack=sample_pack, per_category=5, rounds=2)
    study_create(name="Once", pack=sample_pack, per_category=1, rounds=1)
    with pytest.raises(StudyError, match="exists already"):
        study_create(name="Once", pack=sample_pack, per_category=1, rounds=1)


def test_im_retry_mode_renders_and_scores_attempts_up_to_the_limit(client, sample_pack):
    from evaluation import runtime

    backend = next(iter(runtime.backend_configs()))
    study = study_create(name="Retry", pack=sample_pack, per_category=1, rounds=1, retry_attempts=2, retry_backend=backend)
    url = link(study)
    participant = start(client, url, NOVICE)
    order = list(participant.assignments.order_by("position"))
    im = next(a for a in order if a.task.category == "IM")
    not_im = next(a for a in order if a.task.category != "IM")
    if order[0] != im:  # the current task is not the IM one: trying is refused
        assert "only possible" in client.post(url + "attempt", {"position": not_im.position, "text": "x"}).json()["error"]
    for a in order[: order.index(im)]:
        client.post(url + "submit", {"position": a.position, "text": "a prompt"})
    client.post(url + "intro")
    first = client.post(url + "attempt", {"position": im.position, "text": "red sun, blue hills"}).json()
    assert first["status"] == "ok", first
    assert 0 <= first["score"] <= 100 and first["image"]
    image = client.get(first["image"])
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert client.get(url + "attempt/1").json()["score"] == first["score"]
    client.post(url + "attempt", {"position": im.position, "text": "red sun, three navy hills"})
    third = client.post(url + "attempt", {"position": im.position, "text": "again"})
    assert third.status_code == 400 and "all 2 attempts" in third.json()["error"]
    assert Attempt.objects.count() == 2
    page = client.get(url).content.decode()  # the IM task, with its attempts: the smoke backend's noise is labelled
    assert "similarity" in page and 'id="attempts-smoke"' in page and "smoke (random weights)" in page


def test_im_retry_page_disables_try_when_every_attempt_is_used_and_pairs_each_image_with_its_prompt(client, sample_pack):
    from evaluation import runtime

    backend = next(iter(runtime.backend_configs()))
    study = study_create(name="Retry three", pack=sample_pack, per_category=1, rounds=1, retry_attempts=3, retry_backend=backend)
    url = link(study)
    participant = start(client, url, NOVICE)
    order = list(participant.assignments.order_by("position"))
    im = next(a for a in order if a.task.category == "IM")
    for a in order[: order.index(im)]:
        client.post(url + "submit", {"position": a.position, "text": "a prompt"})
    client.post(url + "intro")
    texts = ["red sun, blue hills", "red sun, three navy hills", "a red disc over three dark blue hills, flat"]
    first = client.post(url + "attempt", {"position": im.position, "text": texts[0]}).json()
    assert first["text"] == texts[0]  # the page's script pairs the polled image with this prompt
    page = client.get(url).content.decode()
    assert '<button type="button" id="try" data-max="3">' in page and 'id="attempts-none" hidden' in page  # 2 left: enabled

    for text in texts[1:]:
        assert client.post(url + "attempt", {"position": im.position, "text": text}).status_code == 200
    fourth = client.post(url + "attempt", {"position": im.position, "text": "one more"})
    assert fourth.status_code == 400 and "all 3 attempts" in fourth.json()["error"]  # the server refuses a 4th
    assert Attempt.objects.filter(assignment=im).count() == 3

    page = client.get(url).content.decode()
    assert '<button type="button" id="try" data-max="3" disabled>' in page
    assert "3</span> of 3 attempts used" in page and 'id="attempts-none" hidden' not in page and "none left" in page
    figures = page.split('<figure class="attempt"')[1:]
    assert len(figures) == 3
    for number, (figure, text) in enumerate(zip(figures, texts), start=1):
        assert f'data-number="{number}"' in figure and f"attempt/{number}/image" in figure
        assert f'<blockquote class="attempt-prompt" title="the prompt of attempt {number}">{html.escape(text)}</blockquote>' in figure


def test_staff_export_has_no_identity_and_strangers_cannot_read_it(client, study, django_user_model):
    url = link(study)
    participant = start(client, url, SKILLED)
    do_all_tasks(client, url, participant)
    assert client.get(f"/studies/{study.slug}/prompts.csv").status_code == 302  # to the admin login
    staff = django_user_model.objects.create_user("staffer", password="pw-staff-123", is_staff=True)
    client.force_login(staff)
    rows = list(csv.DictReader(io.StringIO(b"".join(client.get(f"/studies/{study.slug}/prompts.csv").streaming_content).decode())))
    assert len(rows) == 3 and {r["participant"] for r in rows} == {participant.code} and all(r["prompt"] for r in rows)
    answers = b"".join(client.get(f"/studies/{study.slug}/participants.jsonl").streaming_content).decode()
    assert '"tier": "skilled"' in answers and "staffer" not in answers
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert "completed: 1" in page


def test_a_participant_may_withdraw_after_the_study_closed_or_the_link_expired(client, study):
    """The consent promises withdrawal at any time: a closed study or an expired link stops work, not withdrawal."""
    started, expiring = link(study), link(study)
    for url in (started, expiring):
        participant = start(client, url, NOVICE)
        first = participant.assignments.order_by("position").first()
        client.post(url + "intro")
        client.get(url)
        client.post(url + "submit", {"position": first.position, "text": "half-way through"})
    never_opened = invitations_create(study=study, count=1)[0]
    study.is_open = False
    study.save()
    refused = client.get(started)
    assert refused.status_code == 410 and "closed" in refused.content.decode() and started + "withdraw" in refused.content.decode()
    assert client.post(started + "submit", {"position": 1, "text": "more"}).status_code == 410  # no more work
    assert "cannot be undone" in client.get(started + "withdraw").content.decode()
    assert "were deleted" in client.post(started + "withdraw", {"confirm": "yes"}).content.decode()
    gone = Participant.objects.get(invitation__digest=Invitation.digest_of(started.strip("/").split("/")[-1]))
    assert gone.withdrawn and gone.answers == {} and not gone.assignments.exists()

    study.is_open = True
    study.save()
    token = expiring.strip("/").split("/")[-1]
    Invitation.objects.filter(digest=Invitation.digest_of(token)).update(expires=timezone.now() - timedelta(days=1))
    assert "expired" in client.get(expiring).content.decode()
    client.post(expiring + "withdraw", {"confirm": "yes"})
    assert Participant.objects.get(invitation__digest=Invitation.digest_of(token)).withdrawn and not Assignment.objects.exists()

    # A link nobody opened has no data: it is refused, with nothing to withdraw and nothing created.
    never_opened.expires = timezone.now() - timedelta(days=1)
    never_opened.save()
    for path in ("", "withdraw"):
        response = client.get(f"/study/{never_opened.token}/{path}")
        assert response.status_code == 410 and "withdraw from the study" not in response.content.decode()
    assert not Participant.objects.filter(invitation=never_opened).exists()


def test_deployer_edits_the_tier_rule_in_the_admin_until_the_first_participant_starts(client, study, django_user_model):
    import json

    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    page = f"/admin/studies/study/{study.pk}/change/"
    fields = ("name", "slug", "split", "per_category", "rounds", "retry_attempts", "retry_backend", "consent_text", "max_prompt_chars")
    form = {name: getattr(study, name) for name in fields} | {"pack": study.pack_id, "is_open": "on"}
    form |= {name: json.dumps(getattr(study, name)) for name in ("questionnaire", "tier_rule", "modules")}
    before = study.protocol_version
    assert client.post(page, form | {"tier_rule": json.dumps({**study.tier_rule, "skilled_at": 1})}).status_code == 302
    study.refresh_from_db()
    assert study.tier_rule["skilled_at"] == 1 and study.protocol_version != before  # the rule is data; an edit is a new version
    broken = client.post(page, form | {"tier_rule": json.dumps({**study.tier_rule, "points": {"no_such_question": {"a": 1}}})})
    assert broken.status_code == 200 and "no_such_question" in html.unescape(broken.content.decode())
    assert Study.objects.get(pk=study.pk).tier_rule["skilled_at"] == 1  # nothing was written

    start(client, link(study), NOVICE)  # a participant was placed by this rule: from now on it is frozen
    version = Study.objects.get(pk=study.pk).protocol_version
    shown = client.get(page).content.decode()
    assert 'name="tier_rule"' not in shown and 'name="is_open"' in shown
    assert (
        client.post(page, form | {"tier_rule": json.dumps({**study.tier_rule, "skilled_at": 99}), "name": "Pilot (closed)"}).status_code
        == 302
    )
    after = Study.objects.get(pk=study.pk)
    assert after.tier_rule["skilled_at"] == 1 and after.protocol_version == version and after.name == "Pilot (closed)"


def test_withdrawal_deletes_the_attempt_images_no_one_else_shows(client, sample_pack):
    """Attempt images are stored by content: two people's identical attempts share one file, which stays for the other."""
    from django.core.files.storage import default_storage

    from evaluation import runtime

    study = study_create(
        name="Retry twice",
        pack=sample_pack,
        per_category=1,
        rounds=1,
        retry_attempts=2,
        retry_backend=next(iter(runtime.backend_configs())),
    )
    urls, images = [], []
    for person in range(2):
        url = link(study)
        participant = start(client, url, NOVICE)
        order = list(participant.assignments.order_by("position"))
        im = next(a for a in order if a.task.category == "IM")
        for a in order[: order.index(im)]:
            client.post(url + "submit", {"position": a.position, "text": "a prompt"})
        texts = ["red sun, blue hills"] + (["a second try, three navy hills"] if person == 0 else [])
        found = [client.post(url + "attempt", {"position": im.position, "text": t}).json() for t in texts]
        assert all(f["status"] == "ok" for f in found), found
        urls.append(url)
        images.append(list(Attempt.objects.filter(assignment__participant=participant).order_by("number").values_list("image", flat=True)))
    shared, own = images[0]
    assert images[1] == [shared] and own != shared  # the same text, seed and backend: the same bytes, one file
    client.post(urls[0] + "withdraw", {"confirm": "yes"})
    assert not default_storage.exists(own) and default_storage.exists(shared)
    assert client.get(urls[1] + "attempt/1/image").status_code == 200  # the other participant still sees their image
