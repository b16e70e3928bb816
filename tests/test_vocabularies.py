"""Each closed vocabulary has one definition (issue item: "Vocabularies are strings with no home"): what aggregate writes
is a member of it, the Django fields take their choices from it, and the database holds nothing else after real flows."""

from __future__ import annotations

import pytest

from evaluator.categories import CATEGORIES
from evaluator.judge.types import Status
from evaluator.metrics.aggregate import Unit
from evaluator.metrics.coverage import coverage
from evaluator.metrics.scopes import RankedOn, Scope, cell_key, split_cell_key
from evaluator.tiers import PARTICIPANT_TIERS, Tier
from tests.test_prompting import endpoint, prompter  # noqa: F401 - fixtures


def units() -> list[Unit]:
    """Two tasks of every category, prompt and image side on two backends, a failed unit: every kind of figure."""
    made = []
    for c in CATEGORIES:
        for t in range(2):
            task = f"{c.lower()}-{t}"
            made.append(Unit(task, c, 0, "prompt_rubric", Status.OK, 3.0 + t, scale="likert_1_5", composite=True))
            for b, backend in enumerate(("sd|fast", "sdxl")):  # a backend name may hold the key's separator
                made.append(Unit(task, c, 0, "image_rubric", Status.OK, 2.0 + b, backend, 10 * t + b, "likert_1_5", True, top1_rank=0))
                made.append(
                    Unit(
                        task,
                        c,
                        0,
                        "checklist",
                        Status.FAILED if t else Status.OK,
                        None if t else 0.5,
                        backend,
                        10 * t + b,
                        "rate_0_1",
                        True,
                    )
                )
    return made


def test_every_figure_aggregate_writes_has_a_scope_of_the_vocabulary_and_cell_keys_split_back():
    from evaluation.figures import all_figures

    made = all_figures(units())
    assert {f.scope for f in made} == set(Scope) and all(isinstance(f.scope, Scope) for f in made)
    assert {scope for scope, _ in coverage(units())} <= set(Scope)
    cells = [split_cell_key(f.key) for f in made if f.scope == Scope.CATEGORY_BACKEND]
    assert sorted(cells) == sorted((c, b) for c in CATEGORIES for b in ("sd|fast", "sdxl"))
    assert all(cell_key(*split_cell_key(key)) == key for key in (cell_key("OE", "sd|fast"), cell_key("IM", "")))


def test_the_django_fields_take_their_choices_from_the_one_definition():
    from evaluation.models import Figure, HumanRow, Origin, Submission
    from studies.models import Participant

    def values(model, name):
        return [value for value, _ in model._meta.get_field(name).choices]

    assert values(Figure, "scope") == [s.value for s in Scope]
    assert values(HumanRow, "tier") == [t.value for t in Tier] and list(HumanRow.TIER_ORDER) == list(Tier)
    assert values(Participant, "tier") == [t.value for t in PARTICIPANT_TIERS]
    assert values(Submission, "origin") == Origin.values == ["file", "endpoint", "human"]


@pytest.mark.django_db(transaction=True)
def test_the_database_holds_only_values_of_each_vocabulary_after_uploads_endpoint_runs_and_a_study(
    team, sample_pack, endpoint, prompter, example_prompts
):
    from demo.study import demo_study
    from evaluation.models import BoardStats, Figure, HumanRow, Origin, Submission
    from studies.models import Participant
    from submissions.services import endpoint_run_create, submission_create, submissions_publish

    run = endpoint_run_create(team=team, endpoint=endpoint, pack=sample_pack)
    upload = submission_create(team=team, pack=sample_pack, prompter="file", filename="p.jsonl", data=example_prompts)
    assert submissions_publish(submissions=Submission.objects.filter(pk__in=[run.pk, upload.pk])) == 2
    demo_study(sample_pack, lambda line: None, per_category=1)  # the sample pack has one IM target

    assert set(Submission.objects.values_list("origin", flat=True)) == set(Origin.values)
    assert set(Figure.objects.values_list("scope", flat=True)) == set(Scope)  # every scope is stored, and nothing else
    assert {f["scope"] for row in HumanRow.objects.all() for f in row.figures} <= set(Scope)
    assert set(HumanRow.objects.values_list("tier", flat=True)) == set(Tier)
    assert set(Participant.objects.exclude(tier="").values_list("tier", flat=True)) <= set(PARTICIPANT_TIERS)
    assert {stats.ranked_on["split"] for stats in BoardStats.objects.all()} <= set(RankedOn) and BoardStats.objects.exists()
    for row in Figure.objects.filter(scope=Scope.CATEGORY_BACKEND):
        category, backend = split_cell_key(row.key)
        assert category in CATEGORIES and backend
