"""Every main page fits a 390 px phone screen (issue 21): wide tables scroll inside their own box, the navigation
folds, and the whole study flow can be taken on a phone. Measured in a real browser (tests/browser.py) as the
document's scroll width, which counts anything that sticks out of the viewport; the same pages at 1400 px too."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Submission
from studies.services import invitations_create, study_create
from submissions.services import submissions_publish

PHONE, DESKTOP = 390, 1400
PHONE_HEIGHT = 844


def set_width(browser, width: int, height: int = PHONE_HEIGHT) -> None:
    """Emulate a phone's viewport (mobile: the meta viewport applies, as on a real phone), or a desktop window."""
    browser.driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800}
    )


def page_width(browser, path: str | None = None) -> int:
    if path is not None:
        browser.get(path)
    browser.wait_loaded()
    return int(browser.driver.execute_script("return document.documentElement.scrollWidth"))


def log_in(browser, client, user) -> None:
    """The browser takes the session of a test client logged in as `user`."""
    client.force_login(user)
    browser.get("/tasks/")
    browser.driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})


@pytest.fixture
def published(client, owner, team, sample_pack, example_prompts) -> Submission:
    """A real run of the demo prompts on the sample pack, evaluated in-process and published: a full submission page."""
    client.force_login(owner)
    client.post(
        f"/teams/{team.slug}/submit/",
        {"pack": sample_pack.pk, "prompter": "A prompter with a rather long name", "file": SimpleUploadedFile("p.jsonl", example_prompts)},
    )
    submission = Submission.objects.get()
    assert submission.status == "done", submission.error
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    return submission


def test_main_pages_fit_a_phone_and_a_desktop(browser, client, owner, team, sample_pack, published):
    task = sample_pack.tasks.order_by("task_id").first()
    pages = [
        "/",
        f"/submissions/{published.pk}/",
        "/tasks/",
        f"/tasks/{sample_pack.pk}/{task.task_id}/",
        "/judge/",
        "/accounts/login/",
        f"/teams/{team.slug}/",
        "/teams/",
        "/no-such-page/",  # our own 404 page
    ]
    widths: dict[str, dict[int, int]] = {}
    for width in (PHONE, DESKTOP):
        set_width(browser, width)
        browser.driver.delete_all_cookies()
        for path in pages:
            if path.startswith("/teams/") and not browser.driver.get_cookie("sessionid"):
                log_in(browser, client, owner)
            widths.setdefault(path, {})[width] = page_width(browser, path)
            if width == PHONE:
                browser.shot("phone" + path.replace("/", "-").rstrip("-"))
    print("\n".join(f"{path}: {w[PHONE]} px at {PHONE}, {w[DESKTOP]} px at {DESKTOP}" for path, w in widths.items()))
    assert {path: w[PHONE] for path, w in widths.items() if w[PHONE] > PHONE} == {}
    assert {path: w[DESKTOP] for path, w in widths.items() if w[DESKTOP] > DESKTOP} == {}


def test_the_board_on_a_phone_keeps_rank_and_prompter_in_view_and_folds_the_method(browser, published):
    set_width(browser, PHONE)
    browser.get("/")
    browser.wait_loaded()
    scroller = browser.find(".table-scroll")
    assert browser.driver.execute_script(
        "return arguments[0].scrollWidth > arguments[0].clientWidth", scroller
    )  # the table scrolls in its box
    browser.driver.execute_script("arguments[0].scrollLeft = 400", scroller)
    rank, prompter = browser.find("#board-table tbody tr td:nth-child(1)"), browser.find("#board-table tbody tr td:nth-child(2)")
    box = scroller.rect
    assert rank.rect["x"] == pytest.approx(box["x"], abs=2) and prompter.rect["x"] < box["x"] + box["width"] / 2  # held at the left
    browser.shot("phone-board-scrolled")
    assert not browser.find("#board-method").get_attribute("open")  # the long method text is folded
    assert browser.find("#board-download").is_displayed()  # the short lines stay
    nav = browser.find("header nav").rect
    assert nav["x"] + nav["width"] <= PHONE  # the navigation folds instead of running off the screen
    for link in browser.find_all("header a"):
        assert link.rect["x"] + link.rect["width"] <= PHONE, link.text


def test_a_participant_takes_the_whole_study_on_a_phone(browser, sample_pack):
    from selenium.webdriver.common.by import By

    study = study_create(name="Phone pilot", pack=sample_pack, per_category=1, rounds=1)
    token = invitations_create(study=study, count=1)[0].token
    set_width(browser, PHONE)
    widths = {"consent": page_width(browser, f"/study/{token}/")}
    browser.shot("phone-study-consent")
    browser.find("#agree").click()
    browser.click_and_wait("#consent-go")
    widths["questionnaire"] = page_width(browser)
    browser.shot("phone-study-questionnaire")
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
    for step in range(12):
        browser.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#intro-go, #prompt, .card h1"))
        if browser.find_all("#intro-go"):
            widths[f"intro {step}"] = page_width(browser)
            browser.shot(f"phone-study-intro-{step}")
            browser.click_and_wait("#intro-go")
            continue
        if not browser.find_all("#prompt"):
            break
        widths[f"task {step}"] = page_width(browser)
        browser.shot(f"phone-study-task-{step}")
        browser.find("#prompt").send_keys("a flat poster: red sun above three blue hills, navy foreground")
        _ = browser.find("#submit").location_once_scrolled_into_view  # reading it scrolls the button into view
        browser.click_and_wait("#submit")
    browser.wait(lambda d: "Thank you" in d.page_source, timeout=120)
    widths["completed"] = page_width(browser)
    browser.shot("phone-study-done")
    print(widths)
    assert any(k.startswith("task") for k in widths) and any(k.startswith("intro") for k in widths)
    assert {k: w for k, w in widths.items() if w > PHONE} == {}
