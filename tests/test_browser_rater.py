"""An expert logs in and rates two items in a real browser with the keyboard only (tests/browser.py: headless Chromium),
and Ctrl+Enter with the required rationale empty says so and saves nothing."""

from __future__ import annotations

import pytest

from evaluation.models import Submission
from evaluator.judge.types import IMAGE_DIMENSIONS, PROMPT_DIMENSIONS
from ratings.models import ExpertRating, RatingAssignment
from ratings.selectors import next_assignment
from ratings.services import rating_queue_fill
from tests.test_expert_queue import expert, rendered_submission


def keys_for(assignment: RatingAssignment, score: str) -> str:
    """Every question in page order: prompt dimensions, prompt checklist, image dimensions, image checklist."""
    task = assignment.entry.task
    return (
        score * len(PROMPT_DIMENSIONS) + "y" * len(task.prompt_checklist) + score * len(IMAGE_DIMENSIONS) + "n" * len(task.image_checklist)
    )


def rate_with_keys(browser, assignment: RatingAssignment, score: str, shot: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.wait(lambda d: browser.find_all("#rate-form fieldset.current"))  # rate.js has run
    ActionChains(browser.driver).send_keys(keys_for(assignment, score)).perform()
    browser.wait(lambda d: d.switch_to.active_element.get_attribute("id") == "rationale")  # the last answer moved the focus on
    ActionChains(browser.driver).send_keys("Typed with the keyboard only.").perform()
    browser.shot(shot)
    ActionChains(browser.driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()


def rater_at_the_queue(browser, team, sample_pack, django_user_model, items: int):
    """Two experts share `items` items of a rendered submission; the first, ana, logs in and lands on /rate/."""
    from selenium.webdriver.common.keys import Keys

    submission = rendered_submission(team, sample_pack)
    ana, ben = expert(django_user_model, "ana"), expert(django_user_model, "ben")
    rating_queue_fill(submissions=Submission.objects.filter(pk=submission.pk), raters=[ana, ben], items=items)
    browser.get("/accounts/login/?next=/rate/")
    browser.find("input[name=username]").send_keys("ana")
    browser.find("input[name=password]").send_keys("pw-expert-123", Keys.ENTER)
    return ana


@pytest.mark.django_db(transaction=True)
def test_an_expert_rates_two_items_with_the_keyboard(browser, team, sample_pack, django_user_model):

    ana = rater_at_the_queue(browser, team, sample_pack, django_user_model, items=2)
    browser.wait(lambda d: "0 done of 2" in browser.find("#progress").text)
    browser.shot("rater-1-first-item")

    first = next_assignment(ana)
    rate_with_keys(browser, first, "4", "rater-2-first-item-answered")
    browser.wait(lambda d: "1 done of 2" in browser.find("#progress").text)
    assert "Rating saved." in browser.find(".messages").text

    second = next_assignment(ana)
    assert second.pk != first.pk
    rate_with_keys(browser, second, "2", "rater-3-second-item-answered")
    browser.wait(lambda d: "2 done of 2" in browser.find("#progress").text)
    browser.shot("rater-4-queue-done")

    rows = ExpertRating.objects.filter(rater="ana")
    assert rows.count() == 4
    prompt, image = rows.get(entry=first.entry, render=None), rows.get(entry=first.entry, render=first.render)
    assert prompt.scores == dict.fromkeys(PROMPT_DIMENSIONS, 4) and image.scores == dict.fromkeys(IMAGE_DIMENSIONS, 4)
    assert set(prompt.checklist.values()) == {1} and set(image.checklist.values()) == {0}
    assert rows.get(entry=second.entry, render=None).scores == dict.fromkeys(PROMPT_DIMENSIONS, 2)
    assert prompt.note == "Typed with the keyboard only."


@pytest.mark.django_db(transaction=True)
def test_ctrl_enter_with_an_empty_rationale_says_so_and_keeps_the_focus_there(browser, team, sample_pack, django_user_model):
    """The hint says beforehand that the rationale is required; a refusal highlights the rationale box with the focus in
    it (every question is answered by then, so the next keys are meant for it), and typing there then saves."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ana = rater_at_the_queue(browser, team, sample_pack, django_user_model, items=1)
    browser.wait(lambda d: browser.find_all("#rate-form fieldset.current"))
    assert "rationale is required" in browser.find("#keys").text
    ActionChains(browser.driver).send_keys(keys_for(next_assignment(ana), "4")).perform()
    ActionChains(browser.driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    browser.wait(lambda d: browser.find("#rate-problem").is_displayed())
    assert "rationale is required" in browser.find("#rate-problem").text
    assert browser.driver.switch_to.active_element.get_attribute("id") == "rationale"
    assert "current" in browser.find("label.rationale").get_attribute("class").split()  # highlighted as the step the keys go to
    assert not browser.find_all("#rate-form fieldset.current")
    browser.shot("rater-empty-rationale")
    assert not ExpertRating.objects.exists()

    ActionChains(browser.driver).send_keys("Typed after the refusal.").key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(
        Keys.CONTROL
    ).perform()
    # read by script: the save loads the next page, and an element found on the old one can go stale before its text is read
    progress = "return (document.querySelector('#progress') || {}).textContent || ''"
    browser.wait(lambda d: "1 done of 1" in d.execute_script(progress))
    assert ExpertRating.objects.get(rater="ana", render=None).note == "Typed after the refusal."
