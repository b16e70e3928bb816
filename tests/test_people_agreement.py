"""Agreement between people: Krippendorff's α (worked examples) and the expert–expert ceiling, and /judge/ showing them."""

from __future__ import annotations

import html
import math

import krippendorff
import numpy as np
import pytest
from scipy import stats

from evaluator.judge.types import PROMPT_DIMENSIONS
from evaluator.metrics.agreement import Rating, krippendorff_alpha, people_agreement
from ratings.models import ExpertRating, Pool
from tests.test_expert_queue import rendered_submission

N = math.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example with missing values:
# 4 observers (rows) × 12 units (columns); a unit nobody else coded (the last) is not pairable.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


@pytest.mark.parametrize(
    "data, level, expected",
    [
        (KRIPPENDORFF_2011, "nominal", 0.743),
        (KRIPPENDORFF_2011, "ordinal", 0.815),
        (KRIPPENDORFF_2011, "interval", 0.849),
        # By hand, two coders, units (1,1) (2,2) (1,2), nominal: coincidences o11 = o22 = 2, o12 = o21 = 1, n1 = n2 = 3,
        # observed disagreement 2/6, expected (3·3 + 3·3) / (6·5) = 0.6, so α = 1 − (1/3)/0.6 = 4/9.
        ([[1, 2, 1], [1, 2, 2]], "nominal", 4 / 9),
        ([[1, 2, 3, 4], [1, 2, 3, 4]], "ordinal", 1.0),  # perfect agreement
    ],
)
def test_krippendorff_alpha_worked_examples(data, level, expected):
    assert krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=5e-4)


def test_alpha_on_a_fixed_1_to_5_scale_matches_the_inferred_domain_when_all_values_occur():
    assert krippendorff_alpha(KRIPPENDORFF_2011, level="ordinal", value_domain=range(1, 6)) == pytest.approx(0.8154, abs=1e-4)


@pytest.mark.parametrize(
    "data",
    [
        [[3, 3, 3, 3], [3, 3, 3, 3]],  # no variation: expected disagreement is zero
        [[1, 2], [1, 3]],  # fewer than three units rated twice
        [[1, 2, 3, 4], [N, N, N, 4]],  # only one pairable unit
    ],
)
def test_alpha_is_none_when_undefined(data):
    assert krippendorff_alpha(data) is None


def test_alpha_rejects_an_unknown_level():
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(KRIPPENDORFF_2011, level="cardinal")


def ratings_of(table: dict[str, list[float]], tasks: list[str] | None = None) -> list[Rating]:
    """{rater: scores per unit (NaN = not rated)} -> ratings; unit u is item "i<u>" on dimension "d" of task tasks[u]."""
    count = len(next(iter(table.values())))
    tasks = tasks or [f"t{u}" for u in range(count)]
    return [Rating(tasks[u], f"i{u}", "d", rater, s) for rater, scores in table.items() for u, s in enumerate(scores) if not math.isnan(s)]


def test_ceiling_pairs_the_first_two_raters_by_name_of_each_unit():
    # unit:     1  2  3  4  5
    table = {
        "cy": [N, N, 5, 5, N],
        "ana": [1, 2, 3, N, 5],  # names, not the order given, decide: ana before ben before cy
        "ben": [2, 1, 3, 4, N],
    }
    # Pairs: (ana, ben) on units 1–3, (ben, cy) on unit 4 where ana is missing; unit 5 has one rater and is left out.
    # x = 1 2 3 4, y = 2 1 3 5: ranks differ by 1, 1, 0, 0, so ρ = 1 − 6·2 / (4·15) = 0.8.
    row = people_agreement(ratings_of(table), resamples=200)
    assert row.ceiling.value == pytest.approx(0.8)
    assert row.n_items == 4 and row.n_raters == 3 and row.ceiling.n_items == 4 and row.alpha.n_items == 4


def test_alpha_of_ratings_equals_the_package_on_the_same_matrix_and_the_interval_is_seeded():
    rows = ["ana", "ben", "cy", "dee"]  # KRIPPENDORFF_2011's observers A–D, units spread over 4 tasks
    table = {name: list(map(float, scores)) for name, scores in zip(rows, KRIPPENDORFF_2011)}
    ratings = ratings_of(table, tasks=[f"t{u % 4}" for u in range(12)])
    first = people_agreement(ratings, resamples=300, seed=3, min_tasks=4)  # the resampler is checked: the page's minimum is 10 tasks
    assert first.alpha.value == pytest.approx(krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement="ordinal"))
    assert first.alpha.low <= first.alpha.value <= first.alpha.high and first.alpha.n_tasks == 4
    assert people_agreement(ratings, resamples=300, seed=3, min_tasks=4) == first
    one_task = people_agreement(ratings_of(table, tasks=["t"] * 12), resamples=300, min_tasks=1)
    assert one_task.alpha.value == first.alpha.value and one_task.alpha.low is None  # one cluster shows no spread


def test_a_rater_rating_a_unit_twice_is_an_error():
    with pytest.raises(ValueError, match="ana rated it twice"):
        people_agreement([Rating("t", "i", "d", "ana", 1), Rating("t", "i", "d", "ana", 2)], resamples=10)


# --- the page ----------------------------------------------------------------------------------


def cell(page: str, group: str, column: int) -> str:
    row = page.split('id="people-agreement"')[1].split(f"<td>{group}</td>")[1].split("</tr>")[0]
    return row.split('<td class="num">')[column + 1].split("</td>")[0].split("<br>")[0].strip()


def test_judge_page_shows_alpha_and_ceiling_per_category(client, team, sample_pack):
    submission = rendered_submission(team, sample_pack)
    entries = list(submission.entries.select_related("task").order_by("task__task_id"))
    scores = {}
    for i, entry in enumerate(entries):
        ana = {d: 1 + (i + j) % 5 for j, d in enumerate(PROMPT_DIMENSIONS)}
        ben = {d: max(1, s - (i + j) % 2) for j, (d, s) in enumerate(ana.items())}  # ben is a little stricter
        scores[entry.pk] = (ana, ben)
        ExpertRating.objects.create(rater="ana", entry=entry, scores=ana)
        ExpertRating.objects.create(rater="ben", entry=entry, scores=ben)
        ExpertRating.objects.create(rater="cy", entry=entry, scores=dict.fromkeys(PROMPT_DIMENSIONS, 5), pool=Pool.EXEMPLAR)
    page = html.unescape(client.get("/judge/").content.decode())
    assert "Krippendorff's α" in page and "first two experts of each unit in alphabetical order" in page

    for category in ("OE", "CO", "IM"):
        mine = [e for e in entries if e.task.category == category]
        matrix = np.array([[scores[e.pk][r][d] for e in mine for d in PROMPT_DIMENSIONS] for r in (0, 1)], dtype=float)
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
        assert cell(page, category, 0) == "2" and cell(page, category, 1) == "2"  # items, experts: the exemplar pool's cy is not counted
        assert cell(page, category, 2) == f"{expected:.3f}"
        assert cell(page, category, 3) == f"{stats.spearmanr(matrix[0], matrix[1]).statistic:.3f}"
        assert cell(page, category, 4) == "8" and cell(page, category, 5) == "2"  # units, tasks
    assert cell(page, "overall", 0) == "6" and cell(page, "overall", 5) == "6"
    overall = page.split('id="people-agreement"')[1].split("overall")[1].split("</tr>")[0]
    assert "[" not in overall and overall.count("too few items for an interval") == 2  # six tasks: fewer than the 10 an interval needs
    assert "No expert ratings of judged items yet." in page  # nothing judged here: the judge part says so, the people part still shows
