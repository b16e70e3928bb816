"""Comparing two entries (/compare/): both sides' prompts and judgements task by task, the per-category paired
difference with its betting interval, the filters, the public pages' rules for hidden items and unpublished entries,
and the board's and submission page's ways in."""

from __future__ import annotations

import html
import io
import re
from collections import defaultdict
from statistics import fmean
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.files.base import ContentFile
from PIL import Image

from evaluation.figures import figures_rebuild
from evaluation.models import Figure, Judgement, PromptEntry, Render, Submission, UnitStatus
from evaluator.judge.config import DEMO_JUDGE_MODEL
from evaluator.judge.scales import scale_named
from evaluator.judge.skills import skills_where
from evaluator.judge.types import DIMENSIONS, Kind, Side
from evaluator.metrics.intervals import mean_interval
from submissions.services import submissions_publish
from tests.test_phone_widths import DESKTOP, PHONE, page_width, set_width

JUDGE = {"judge_id": "test-judge", "judge_version": "v1"}
JUDGE_KEY = "test-judge|v1"
RUBRIC = {side: skills_where(side=side, kind=Kind.RUBRIC, composite=True)[0] for side in Side}
CHECKLIST = {side: skills_where(side=side, kind=Kind.CHECKLIST, composite=True)[0] for side in Side}


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def judged_entry(team, pack, name: str, level: int, published: bool = True, revision: int | None = None) -> Submission:
    """A finished submission with one prompt, one image and AtelierEval's four judgements per task, its figures built
    from them as the pipeline builds them (figures_rebuild). Grades vary with the task and `level`."""
    submission = Submission.objects.create(
        team=team, pack=pack, pack_revision=revision or pack.revision, prompter=name, status="done", judge_label="test judge", **JUDGE
    )
    for i, task in enumerate(pack.tasks.order_by("task_id")):
        entry = PromptEntry.objects.create(submission=submission, task=task, text=f"{name} writes for {task.task_id}: lanterns, {i}")
        render = Render(entry=entry, backend="smoke-sd", image_index=0, seed=i, config_hash="c" * 8, prompt_sha="p" * 8, status="ok")
        render.image.save(f"{name}-{i}.png", ContentFile(png((40 * i, 20 * level, 160))), save=True)
        for side, on in ((Side.PROMPT, None), (Side.IMAGE, render)):
            grades = {d: 1 + (level + i + k) % 5 for k, d in enumerate(DIMENSIONS[side])}
            items = task.prompt_checklist if side == Side.PROMPT else task.image_checklist
            outcomes = {item: (level * (k + 1) + i) % 3 == 0 for k, item in enumerate(items)}
            common = {"submission": submission, "entry": entry, "render": on, "status": UnitStatus.OK, **JUDGE}
            Judgement.objects.create(skill=RUBRIC[side], value=fmean(grades.values()), scale="likert_1_5", scores=grades, **common)
            rate = sum(outcomes.values()) / len(outcomes)
            Judgement.objects.create(
                skill=CHECKLIST[side], value=rate, scale="rate_0_1", checklist={k: int(v) for k, v in outcomes.items()}, **common
            )
    figures_rebuild(submission=submission)
    if published:
        submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    return submission


def scores_from_judgements(submission: Submission) -> dict[str, float]:
    """Each task's score computed here from the stored judgements: the mean of the prompt part and the image part, each
    the mean of its skills on 0–100 (one sample, one backend, one image)."""
    parts: dict[str, dict[bool, list[float]]] = defaultdict(lambda: defaultdict(list))
    for j in Judgement.objects.filter(submission=submission, status=UnitStatus.OK).select_related("entry__task"):
        parts[j.entry.task.task_id][j.render_id is None].append(scale_named(j.scale).to_100(j.value))
    return {task: fmean([fmean(p[True]), fmean(p[False])]) for task, p in parts.items()}


def text(response) -> str:
    return html.unescape(response.content.decode())


def section(page: str, task_id: str) -> str:
    return page.split(f'id="task-{task_id}"')[1].split("</section>")[0]


@pytest.fixture
def pair(team, sample_pack):
    return sample_pack, judged_entry(team, sample_pack, "Lantern A", 1), judged_entry(team, sample_pack, "Lantern B", 2)


def url(a: Submission, b: Submission, **more: str) -> str:
    return f"/compare/?a={a.pk}&b={b.pk}&judge={JUDGE_KEY}" + "".join(f"&{k}={v}" for k, v in more.items())


def test_the_page_shows_both_prompts_images_and_judgements_task_by_task(client, pair):
    pack, a, b = pair
    response = client.get(url(a, b))
    page = text(response)
    assert response.status_code == 200
    stored = {s.pk: dict(s.figures.filter(scope="task").values_list("key", "value")) for s in (a, b)}
    for task in pack.tasks.all():
        shown = section(page, task.task_id)
        assert f"Lantern A writes for {task.task_id}" in shown and f"Lantern B writes for {task.task_id}" in shown
        assert shown.count('class="compare-image"') == 2
        assert (
            f"<strong>{stored[a.pk][task.task_id]:.1f}</strong>" in shown and f"<strong>{stored[b.pk][task.task_id]:.1f}</strong>" in shown
        )
        assert "instructional clarity" in shown and "mood atmosphere" in shown and "image on smoke-sd" in shown
    # a dimension's grade on each side, as stored
    first = a.entries.order_by("task__task_id").first()
    grade_a = Judgement.objects.get(entry=first, skill=RUBRIC[Side.PROMPT]).scores["instructional_clarity"]
    grade_b = Judgement.objects.get(entry__submission=b, entry__task=first.task, skill=RUBRIC[Side.PROMPT]).scores["instructional_clarity"]
    row = section(page, first.task.task_id).split("instructional clarity</td>")[1].split("</tr>")[0]
    assert re.findall(r'<td class="num">([^<]*)</td>', row) == [f"{grade_a:.2f}", f"{grade_b:.2f}"]


def test_the_category_difference_and_its_interval_follow_from_the_stored_judgements(client, pair):
    pack, a, b = pair
    scores = {s.pk: scores_from_judgements(s) for s in (a, b)}
    assert scores[a.pk] == pytest.approx(dict(a.figures.filter(scope="task", **JUDGE).values_list("key", "value")))
    page = text(client.get(url(a, b)))
    category = dict(pack.tasks.values_list("task_id", "category"))
    for code in ("OE", "CO", "IM"):
        tasks = sorted(t for t in category if category[t] == code)
        d = [scores[a.pk][t] - scores[b.pk][t] for t in tasks]
        low, high = mean_interval(d, -100, 100, 1 - 0.05 / 3)  # three categories holding together at 95 %
        row = page.split(f'id="difference-{code}"')[1].split("</tr>")[0]
        assert f"{'+' if fmean(d) > 0 else ''}{fmean(d):.1f}</strong>" in row
        assert f"[{low:.1f},\xa0{high:.1f}]" in row  # &nbsp; unescaped
        assert f'<td class="num">{len(tasks)}</td>' in row
    assert page.index('id="difference-OE"') < page.index('id="difference-CO"') < page.index('id="difference-IM"')  # the site's order
    assert 'id="difference-overall"' in page


def test_filters_narrow_the_tasks_and_the_categories(client, pair):
    pack, a, b = pair
    only_co = text(client.get(url(a, b, category="CO")))
    assert 'id="task-co-s01"' in only_co and 'id="task-co-s02"' in only_co and 'id="task-oe-s01"' not in only_co
    assert 'id="difference-CO"' in only_co and 'id="difference-OE"' not in only_co and 'id="difference-overall"' not in only_co
    retro = text(client.get(url(a, b, tag="Retro_Vintage")))
    assert re.findall(r'id="task-([a-z0-9-]+)"', retro) == ["oe-s01", "im-s01"]  # the site's category order
    test_split = text(client.get(url(a, b, split="test")))
    assert re.findall(r'id="task-([a-z0-9-]+)"', test_split) == ["oe-s02", "co-s02", "im-s02"]
    scores = {s.pk: scores_from_judgements(s) for s in (a, b)}
    by_difference = sorted(scores[a.pk], key=lambda t: -abs(scores[a.pk][t] - scores[b.pk][t]))
    ordered = re.findall(r'id="task-([a-z0-9-]+)"', text(client.get(url(a, b, sort="difference"))))
    assert [abs(scores[a.pk][t] - scores[b.pk][t]) for t in ordered] == [abs(scores[a.pk][t] - scores[b.pk][t]) for t in by_difference]


def test_hidden_checklist_items_stay_hidden_and_dev_items_are_named(client, pair):
    pack, a, b = pair
    page = text(client.get(url(a, b)))
    for task in pack.tasks.all():
        shown = section(page, task.task_id)
        for item in task.prompt_checklist + task.image_checklist:
            assert (item in shown) == task.is_public, (task.task_id, item)
        if not task.is_public:
            assert "<td>item 1</td>" in shown and f"<td>item {len(task.image_checklist)}</td>" in shown


def test_the_demo_judges_checklist_rows_say_they_are_scripted_checks(client, pair):
    """The demo's scripted judge never looks for "a fox" in a render: its checklist rows name the rule it applies."""
    pack, a, b = pair
    demo = {"judge_id": f"ateliereval:{DEMO_JUDGE_MODEL}"}
    Judgement.objects.update(**demo)
    Figure.objects.update(**demo)
    page = text(client.get(f"/compare/?a={a.pk}&b={b.pk}&judge=ateliereval:{DEMO_JUDGE_MODEL}|v1"))
    task = pack.tasks.get(task_id="co-s01")
    shown = section(page, task.task_id)
    assert f"<td>scripted check (demo): the prompt uses half the words of “{task.prompt_checklist[0]}”</td>" in shown
    assert f"<td>scripted check (demo) of pixel statistics, for “{task.image_checklist[0]}”</td>" in shown
    assert f"<td>{task.image_checklist[0]}</td>" not in shown
    assert "<td>scripted check (demo) of pixel statistics, for item 1</td>" in section(page, "co-s02")  # hidden


def test_unpublished_entries_are_404_to_the_public_and_shown_to_their_team(client, owner, stranger, team, pair):
    pack, a, b = pair
    draft = judged_entry(team, pack, "Draft", 3, published=False)
    assert client.get(url(a, draft)).status_code == 404
    assert client.get(url(draft, a)).status_code == 404
    client.force_login(stranger)
    assert client.get(url(a, draft)).status_code == 404
    client.force_login(owner)
    page = client.get(url(a, draft))
    assert page.status_code == 200 and "Draft writes for oe-s01" in text(page) and "not published" in text(page)
    assert client.get(f"/compare/?a={a.pk}&b=987654").status_code == 404


def test_bad_query_parameters_are_400_not_500(client, team, pair):
    pack, a, b = pair
    other_board = judged_entry(team, pack, "Older revision", 2, revision=pack.revision + 1)
    for query in (
        "",
        f"a={a.pk}",
        f"a={a.pk}&b=x",
        f"a={a.pk}&b={a.pk}",
        f"a={a.pk}&b=99999999999999999999999999",
        f"a={a.pk}&b=-1",
        f"a={a.pk}&b={b.pk}&category=XX",
        f"a={a.pk}&b={b.pk}&tag=nope",
        f"a={a.pk}&b={b.pk}&split=train",
        f"a={a.pk}&b={b.pk}&sort=random",
        f"a={a.pk}&b={other_board.pk}",
        f"pick={a.pk}",
        f"pick={a.pk}&pick={b.pk}&pick={other_board.pk}",
    ):
        response = client.get(f"/compare/?{query}")
        assert response.status_code == 400, query
        assert 'id="compare-problem"' in response.content.decode()
    for query in ("page=x&judge=nobody|v9", "page=999"):  # answered as the other pages answer them: the nearest page, judge
        assert client.get(url(a, b) + "&" + query).status_code == 200


def test_the_board_picks_two_entries_and_the_submission_page_links_the_comparison(client, pair):
    pack, a, b = pair
    board = client.get(f"/?board={pack.pk}:{pack.revision}").content.decode()
    assert 'id="compare-form"' in board and f'name="pick" value="{a.pk}" form="compare-form"' in board
    assert f'name="pick" value="{b.pk}" form="compare-form"' in board
    response = client.get(f"/compare/?judge={JUDGE_KEY}&pick={b.pk}&pick={a.pk}")
    assert response.status_code == 302 and response["Location"] == f"/compare/?a={b.pk}&b={a.pk}&judge=test-judge%7Cv1"
    assert client.get(response["Location"]).status_code == 200
    submission_page = client.get(f"/submissions/{a.pk}/").content.decode()
    form = submission_page.split('id="compare-with"')[1].split("</form>")[0]
    assert f'name="a" value="{a.pk}"' in form and f'<option value="{b.pk}">Lantern B' in form


def full_page_shot(browser, name: str, width: int) -> None:
    """The whole page in one screenshot, for a person to look at."""
    height = browser.driver.execute_script("return document.documentElement.scrollHeight")
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800}
    browser.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    browser.shot(name)
    set_width(browser, width)


def test_two_boxes_ticked_on_a_phone_open_the_comparison_and_no_page_is_wider_than_the_screen(browser, pair):
    pack, a, b = pair
    widths = {}
    for width in (DESKTOP, PHONE):
        set_width(browser, width)
        widths[width] = page_width(browser, url(a, b))
        full_page_shot(browser, f"compare-{width}", width)
    set_width(browser, PHONE)
    widths["board"] = page_width(browser, f"/?board={pack.pk}:{pack.revision}")
    for pk in (b.pk, a.pk):
        browser.find(f'input[name="pick"][value="{pk}"]').click()
    browser.shot("compare-board-390")
    browser.click_and_wait("#compare-go")
    query = parse_qs(urlparse(browser.driver.current_url).query)
    assert {query["a"][0], query["b"][0]} == {str(a.pk), str(b.pk)} and query["judge"] == [JUDGE_KEY]  # A: the one higher on the board
    assert "Lantern A writes for oe-s01" in browser.driver.page_source
    print(widths)
    assert widths[PHONE] <= PHONE and widths[DESKTOP] <= DESKTOP and widths["board"] <= PHONE, widths
    assert not browser.driver.get_log("browser")  # no CSP violation, no script error
