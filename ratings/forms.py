"""The rating form of /rate/: the rubric's four prompt and four image dimensions (1–5), the task's checklists
(yes/no) and a rationale. Field names are "<side>-<dimension>" and "<side>-check-<n>"."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from evaluation.models import Submission
from evaluator.judge.rubrics import RUBRIC
from evaluator.judge.types import Side
from tasks.models import Task

from . import selectors
from .services import RatingInput, sees_hidden

RATIONALE_MAX = 1000
SCORES = [(str(n), str(n)) for n in range(1, 6)]
YES_NO = [("1", "yes"), ("0", "no")]


class RatingForm(forms.Form):
    rationale = forms.CharField(
        max_length=RATIONALE_MAX,
        error_messages={
            "required": "rationale: write a short rationale (a sentence or two)",
            "max_length": f"rationale: at most {RATIONALE_MAX} characters, please (%(show_value)d given)",
        },
    )

    def __init__(self, *args: Any, task: Task, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        for side in Side:
            for dim in RUBRIC.dimensions_of(side):
                self.fields[f"{side}-{dim.key}"] = forms.TypedChoiceField(
                    choices=SCORES,
                    coerce=int,
                    error_messages={
                        "required": f"{dim.key}: choose a score from 1 to 5",
                        "invalid_choice": f"{dim.key}: %(value)s is not a score from 1 to 5",
                    },
                )
            for n, item in enumerate(self.checklist(side), start=1):
                self.fields[f"{side}-check-{n}"] = forms.TypedChoiceField(
                    choices=YES_NO,
                    coerce=int,
                    error_messages={
                        "required": f"{side} checklist item {n} ({item}): answer yes or no",
                        "invalid_choice": f"{side} checklist item {n} ({item}): answer yes or no",
                    },
                )

    def checklist(self, side: Side) -> list[str]:
        return self.task.prompt_checklist if side == Side.PROMPT else self.task.image_checklist

    def rating(self) -> RatingInput:
        data = self.cleaned_data
        scores = {side: {d.key: data[f"{side}-{d.key}"] for d in RUBRIC.dimensions_of(side)} for side in Side}
        checks = {side: {item: data[f"{side}-check-{n}"] for n, item in enumerate(self.checklist(side), start=1)} for side in Side}
        return RatingInput(scores[Side.PROMPT], scores[Side.IMAGE], checks[Side.PROMPT], checks[Side.IMAGE], data["rationale"])

    def sections(self) -> list[dict]:
        """What the template draws, per side: each dimension with its anchored levels, then the checklist;
        every question with the value sent back (after an error) and its errors."""

        def answer(name: str) -> dict:
            return {"name": name, "value": self.data.get(name, ""), "errors": self.errors.get(name, [])}

        return [
            {
                "side": side,
                "dimensions": [
                    {**answer(f"{side}-{d.key}"), "dimension": d, "levels": list(enumerate(d.levels, start=1))}
                    for d in RUBRIC.dimensions_of(side)
                ],
                "checklist": [{**answer(f"{side}-check-{n}"), "item": item} for n, item in enumerate(self.checklist(side), start=1)],
            }
            for side in Side
        ]


class QueueForm(forms.Form):
    """The staff's queue page (/rate/queue/): rating_queue_fill's options, submissions and raters picked from lists."""

    submissions = forms.ModelMultipleChoiceField(
        queryset=Submission.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Their prompts with a rendered image are the items (each prompt with its first image).",
    )
    raters = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Expert raters only (admin → Users → action “Make … expert raters”). Items of hidden tasks go only to hidden-item raters.",
    )
    items = forms.IntegerField(
        min_value=1, initial=10, help_text="Prompt/image pairs to have in the queue of these submissions; already queued ones count."
    )
    per_item = forms.IntegerField(
        min_value=2, initial=2, label="Raters per item", help_text="At least 2: agreement needs two ratings of each item."
    )
    exemplar_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.5,
        help_text="Share of newly queued tasks whose ratings calibrate the judge instead of testing it.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["submissions"].queryset = selectors.rateable_submissions()
        self.fields["submissions"].label_from_instance = lambda s: f"#{s.pk} {s.prompter} · {s.team} · {s.pack} ({s.status})"
        self.fields["raters"].queryset = selectors.expert_raters()
        self.fields["raters"].label_from_instance = lambda u: u.get_username() + (" (hidden items too)" if sees_hidden(u) else "")

    def fill_kwargs(self) -> dict:
        """The keyword arguments of services.rating_queue_fill."""
        data = self.cleaned_data
        return {
            **data,
            "submissions": Submission.objects.filter(pk__in=[s.pk for s in data["submissions"]]),
            "raters": list(data["raters"]),
        }
