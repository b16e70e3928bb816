from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluation.judges import pick_judge

from .agreement import agreement_report, judges_with_ratings


@require_GET
def judge_validity(request: HttpRequest) -> HttpResponse:
    judges = judges_with_ratings()
    judge = pick_judge(judges, request.GET.get("judge"))
    report = agreement_report(judge) if judge else None
    return render(request, "ratings/judge.html", {"judges": judges, "judge": judge, "report": report})
