"""Small fixes of issue 21: the favicon, the pack in the team page's curl example, and Ctrl+Enter on /rate/ with the
required rationale empty (a visible message, the focus in the rationale, nothing saved)."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders

from evaluation.models import Submission
from ratings.models import ExpertRating
from ratings.selectors import next_assignment
from ratings.services import rating_queue_fill
from tests.test_browser_rater import keys_for
from tests.test_expert_queue import expert, rendered_submission


def test_favicon_is_served_and_linked_from_every_page(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")
    assert finders.find("favicon.svg") is not None
    assert 'rel="icon"' in client.get("/tasks/").content.decode()


def test_team_page_curl_example_names_the_pack(owner_client, team):
    page = owner_client.get(f"/teams/{team.slug}/").content.decode()
    example = page.split("Submit with <code>curl")[1].split("</code>")[0]
    assert "-F pack=PACK@VERSION" in example and "-F prompter=NAME" in example


@pytest.mark.django_db(transaction=True)
def test_ctrl_enter_with_an_empty_rationale_says_so_and_keeps_the_focus_there(browser, team, sample_pack, django_user_model):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    submission = rendered_submission(team, sample_pack)
    ana, ben = expert(django_user_model, "ana"), expert(django_user_model, "ben")
    rating_queue_fill(submissions=Submission.objects.filter(pk=submission.pk), raters=[ana, ben], items=1)
    browser.get("/accounts/login/?next=/rate/")
    browser.find("input[name=username]").send_keys("ana")
    browser.find("input[name=password]").send_keys("pw-expert-123", Keys.ENTER)
    browser.wait(lambda d: browser.find_all("#rate-form fieldset.current"))
    ActionChains(browser.driver).send_keys(keys_for(next_assignment(ana), "4")).perform()
    ActionChains(browser.driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    browser.wait(lambda d: browser.find("#rate-problem").is_displayed())
    assert "rationale is required" in browser.find("#rate-problem").text
    assert browser.driver.switch_to.active_element.get_attribute("id") == "rationale"
    browser.shot("rater-empty-rationale")
    assert not ExpertRating.objects.exists()
