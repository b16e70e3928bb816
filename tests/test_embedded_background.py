"""The embedded default (SQLite, no Redis) as `make demo` serves it: jobs run on the web process's background thread,
never inside a request, and the submission page shows queued → rendering → judging → done as it does with RQ.

The thread is real (evaluation.workqueue.run_in_background, as atelier/wsgi.py starts it); the test only makes each
job wait for its turn, and loads a page only while no job runs, so every state can be seen, on SQLite as on PostgreSQL.
"""

from __future__ import annotations

import queue
import time

import pytest

from evaluation import workqueue
from evaluation.models import Submission
from tests.test_phone_widths import log_in


@pytest.fixture
def stepped_background(monkeypatch):
    """The background thread, with each job held until the test lets it run; yields step(), which runs one job."""
    turn, finished, ran = queue.Queue(), queue.Queue(), []
    run = workqueue._run_job

    def held(job: str, args: tuple) -> None:
        if job == workqueue.RECONCILE_JOB:
            return run(job, args)
        turn.get(timeout=120)
        try:
            run(job, args)
        finally:
            ran.append(job.rpartition(".")[2])
            finished.put(job)

    def step() -> str | None:
        turn.put(True)
        try:
            return finished.get(timeout=120)
        except queue.Empty:
            return None

    monkeypatch.setattr(workqueue, "_run_job", held)
    workqueue.run_in_background()
    yield step, ran
    for _ in range(200):  # let whatever is left run, then stop the thread before the database goes
        turn.put(True)
    workqueue.stop_background()


def status_on_page(browser, submission: Submission) -> str:
    browser.get(f"/submissions/{submission.pk}/")
    browser.wait_loaded()
    status = browser.find("#status").text
    browser.get("/static/favicon.svg")  # off the page (it refreshes itself while running) before a job runs
    return status


@pytest.mark.sqlite_too(reason="the embedded default (`make demo`) runs its background thread on SQLite")
def test_an_upload_returns_at_once_and_the_page_follows_the_work(
    browser, client, owner, team, sample_pack, example_prompts, tmp_path, stepped_background
):
    step, ran = stepped_background
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_bytes(example_prompts)
    log_in(browser, client, owner)
    browser.get(f"/teams/{team.slug}/submit/")
    browser.find("#id_prompter").send_keys("Background prompter")
    browser.find("#id_file").send_keys(str(prompts))
    started = time.perf_counter()
    browser.click_and_wait("form[enctype='multipart/form-data'] button[type=submit]")
    answered = time.perf_counter() - started
    browser.shot("embedded-upload")
    submission = Submission.objects.get()
    print(f"\nupload to next page: {answered * 1000:.0f} ms (embedded default, background thread)")
    assert submission.status == "queued" and ran == []  # the request answered without running any job
    seen = [status_on_page(browser, submission)]
    while submission.status not in ("done", "incomplete", "failed"):
        assert step() is not None, f"the background thread stopped; it ran {ran}"
        submission.refresh_from_db()
        if (status := status_on_page(browser, submission)) != seen[-1]:
            seen.append(status)
    assert seen == ["queued", "rendering", "judging", "done"], (seen, submission.error)
    assert ran[0] == "start_submission_job" and "render_job" in ran and "judge_job" in ran and ran[-1] == "finish_submission_job"
