"""A participant in a real browser (headless Chromium): consent, questionnaire, a short study with one task
of each module, a reload mid-task that keeps the draft, an IM retry that shows its image, completion, and
the human rows on the leaderboard. The IM attempt is held until the page shows it pending, then run, so the image
arrives by the page's polling, without a reload. Screenshots of each screen go to test-screenshots/."""

from __future__ import annotations

import time

import pytest

from studies.models import Assignment, Invitation, Participant
from studies.services import invitations_create, study_create
from tests.test_studies import NOVICE, start


@pytest.fixture
def retry_study(sample_pack):
    from evaluation import runtime

    return study_create(
        name="Browser pilot",
        pack=sample_pack,
        per_category=1,
        rounds=1,
        retry_attempts=2,
        retry_backend=next(iter(runtime.backend_configs())),
    )


@pytest.fixture
def held_attempts(monkeypatch):
    """IM attempts wait here instead of running in the request (in-process queues would finish them before the page
    sees them pending), so that the test plays the worker and the page must poll for the image."""
    from django.utils.module_loading import import_string

    import studies.services
    from studies.apps import ATTEMPT_RENDER_JOB

    held, enqueue = [], studies.services.enqueue

    def hold(job: str, *args, **where) -> None:
        (held.append(lambda: import_string(job)(*args)) if job == ATTEMPT_RENDER_JOB else enqueue(job, *args, **where))

    monkeypatch.setattr(studies.services, "enqueue", hold)
    return held


def test_participant_completes_a_study_in_the_browser(browser, retry_study, held_attempts):
    from selenium.webdriver.common.by import By

    token = invitations_create(study=retry_study, count=1)[0].token
    browser.get(f"/study/{token}/")
    assert "Before you start" in browser.driver.page_source
    browser.shot("study-1-consent")
    browser.find("#agree").click()
    browser.click_and_wait("#consent-go")
    browser.wait(lambda d: d.find_elements(By.ID, "questionnaire"))
    browser.click_and_wait("#questionnaire-go")  # nothing answered: the required questions are marked
    browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, ".question.invalid"))
    browser.shot("study-2-questionnaire-problems")
    for key, option in (
        ("t2i_experience", "1to2y"),
        ("t2i_frequency", "weekly"),
        ("professional", "no"),
        ("art_background", "self"),
        ("check_seed", "seed"),
        ("check_cfg", "strict"),
        ("check_thirds", "lines"),
    ):
        browser.find(f'input[name="{key}"][value="{option}"]').click()
    browser.click_and_wait("#questionnaire-go")
    reloaded = tried = False
    for step in range(12):
        browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#intro-go, #prompt, .card h1"))
        if browser.find_all("#intro-go"):
            browser.shot(f"study-3-intro-{step}")
            browser.click_and_wait("#intro-go")
            continue
        if not browser.find_all("#prompt"):
            break
        box = browser.find("#prompt")
        box.send_keys("a flat poster: red sun above three blue hills, navy foreground")
        browser.wait(lambda d: d.find_element(By.ID, "draft-state").get_attribute("data-saved") == "1")
        if not reloaded:  # a reload mid-task loses nothing
            browser.reload()
            browser.wait(lambda d: d.find_elements(By.ID, "prompt"))
            assert "red sun above three blue hills" in browser.find("#prompt").get_attribute("value")
            reloaded = True
        if "Constrained" in browser.find(".brief .round").text:  # CO: every constraint of the task as a bullet
            task = retry_study.pack.tasks.get(title=browser.find(".brief h1").text)
            assert len(browser.find_all(".brief ul.constraints li")) == len(task.constraints) > 0
        if browser.find_all("#try"):
            target, prompt = browser.find("#target").rect, browser.find("#prompt").rect
            assert target["x"] + target["width"] <= prompt["x"] and target["y"] < prompt["y"] + prompt["height"]  # beside, not below
            browser.mark_page()
            browser.find("#try").click()
            browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts figure[data-status=pending]"))
            assert "rendering" in browser.find("#attempts figcaption").text and browser.find("#try").get_attribute("disabled")
            assert len(held_attempts) == 1
            held_attempts.pop()()  # the worker renders and scores the attempt while the page waits
            browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#attempts figure[data-status=ok] img"), timeout=60)
            assert "similarity" in browser.find("#attempts figcaption").text
            assert browser.driver.execute_script("return window.__atelierMarked === true;") and not browser.find("#try").get_attribute(
                "disabled"
            )  # the page polled: no reload
            browser.shot("study-4-im-attempt")
            tried = True
        else:
            browser.shot(f"study-4-task-{step}")
        browser.click_and_wait("#submit")
    assert reloaded and tried
    browser.wait(lambda d: "Thank you" in d.page_source, timeout=120)
    browser.shot("study-5-done")
    participant = Participant.objects.get(invitation__digest=Invitation.digest_of(token))
    assert participant.completed and participant.tier and participant.submission.status == "done"
    browser.get("/")
    assert f"Humans — {participant.tier}" in browser.driver.page_source and "Humans — all" in browser.driver.page_source
    browser.shot("study-6-leaderboard-humans")


def participant_at(client, study, category: str | None) -> tuple[str, Assignment]:
    """A participant (consented, placed) whose current task is the first of `category` (None: the first task of all),
    its introduction seen."""
    token = invitations_create(study=study, count=1)[0].token
    url = f"/study/{token}/"
    order = list(start(client, url, NOVICE).assignments.order_by("position"))
    chosen = next(a for a in order if category in (None, a.task.category))
    for a in order[: order.index(chosen)]:
        assert client.post(url + "submit", {"position": a.position, "text": "a prompt"}).status_code == 302
    client.post(url + "intro")
    return url, chosen


def test_try_is_disabled_once_every_attempt_is_used_and_each_image_shows_its_prompt(browser, client, retry_study):
    url, _ = participant_at(client, retry_study, "IM")
    browser.get(url)
    texts = ["red sun above blue hills", "a red disc over three navy hills, flat poster"]
    for number, text in enumerate(texts, start=1):
        browser.wait(lambda d: not browser.find("#try").get_attribute("disabled"))
        box = browser.find("#prompt")
        box.clear()
        box.send_keys(text)
        browser.find("#try").click()
        browser.wait(lambda d, n=number: len(browser.find_all("#attempts figure[data-status=ok]")) == n, timeout=60)
    assert browser.find("#try").get_attribute("disabled")  # 2 of 2 used: no third try offered
    assert browser.find("#attempts-none").is_displayed() and "2 of 2 attempts used" in browser.find(".attempts-left").text
    shown = [
        (f.get_attribute("data-number"), f.find_element("css selector", ".attempt-prompt").text)
        for f in browser.find_all("#attempts figure")
    ]
    assert shown == [("1", texts[0]), ("2", texts[1])]
    browser.shot("study-attempts-used")
    browser.reload()  # the page as the server draws it says the same
    assert browser.find("#try").get_attribute("disabled") and browser.find("#attempts-none").is_displayed()
    assert [p.text for p in browser.find_all("#attempts .attempt-prompt")] == texts


def test_going_on_right_after_typing_sends_no_draft_for_the_task_left_behind(browser, client, sample_pack, monkeypatch):
    """Typing and at once pressing "Submit and go on" used to post the draft too (its timer, or the page's unload) for the
    task being submitted: the server, having taken the submit first, refused it with a 400 that no page showed."""
    import studies.services

    study = study_create(name="Drafts", pack=sample_pack, per_category=1, rounds=1)
    # the first task of all: two more follow it whatever order the categories were drawn in (OE, drawn last, had none)
    url, first = participant_at(client, study, None)
    seen, save = [], studies.services.draft_save

    def late_draft_save(*, participant, position: int, text: str) -> str:
        time.sleep(0.3)  # a draft that reaches the server a moment after the submit, as over a real network
        seen.append((position, problem := save(participant=participant, position=position, text=text)))
        return problem

    monkeypatch.setattr(studies.services, "draft_save", late_draft_save)
    browser.get(url)
    for _ in range(2):  # two tasks, each typed and submitted at once (the second module's introduction between them)
        browser.wait(lambda d: browser.find_all("#prompt, #intro-go"), timeout=60)
        if browser.find_all("#intro-go"):
            browser.click_and_wait("#intro-go")
        browser.find("#prompt").send_keys("a flat poster: red sun above three blue hills")
        browser.click_and_wait("#submit")
    time.sleep(1.5)  # a draft posted on the way out would have landed by now
    assert [s for s in seen if s[1]] == [], seen
    assert (
        Assignment.objects.filter(participant__invitation__digest=Invitation.digest_of(url.split("/")[2]), submitted__isnull=False).count()
        == first.position + 2
    )
