"""A participant in a real browser (headless Chromium): consent, questionnaire, a short study with one task
of each module, a reload mid-task that keeps the draft, an IM retry that shows its image, completion, and
the human rows on the leaderboard. The IM attempt is held until the page shows it pending, then run, so the image
arrives by the page's polling, without a reload. Screenshots of each screen go to test-screenshots/."""

from __future__ import annotations

import pytest

from studies.models import Participant
from studies.services import invitations_create, study_create


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
    participant = Participant.objects.get(invitation__token=token)
    assert participant.completed and participant.tier and participant.submission.status == "done"
    browser.get("/")
    assert f"Humans — {participant.tier}" in browser.driver.page_source and "Humans — all" in browser.driver.page_source
    browser.shot("study-6-leaderboard-humans")
