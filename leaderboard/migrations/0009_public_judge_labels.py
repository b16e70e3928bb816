"""Take the judge's endpoint out of every stored judge label (issue 18, item 6).

Labels used to read "AtelierJudge via MODEL at HOST:PORT; CLIP ..." (and the netloc a base URL with
user:password@ gave, credentials included), and they are shown on public pages. They now read
"AtelierJudge via MODEL, route ROUTE; CLIP ...", as evaluator.judge.spec.JudgeSpec.label writes them;
the host, without credentials, moves to Submission.judge_endpoint (staff only).

Judge ids and versions never held the endpoint and are left as they are, so no judgement, figure or
board changes its judge. The route comes from a submission's stored spec of the same judge id and
version (the version covers the route); a judge scored before specs were stored keeps no route word.
A label is the same wherever a judge is named (figures, boards, human rows): pages select judges by
(id, version, label).
"""

import re

from django.db import migrations

OLD = re.compile(r"AtelierJudge via (?P<model>.+?) at (?P<endpoint>\S*); (?=CLIP )")


def public_label(label: str, route: str) -> str:
    said = f", route {route}" if route else ""
    return OLD.sub(lambda m: f"AtelierJudge via {m['model']}{said}; ", label)


def hosts(label: str) -> str:
    return ", ".join(dict.fromkeys(m["endpoint"].rpartition("@")[2] for m in OLD.finditer(label)))


def forwards(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    routes = {}
    for judge_id, version, spec in Submission.objects.exclude(judge_spec={}).values_list("judge_id", "judge_version", "judge_spec").iterator():
        routes.setdefault((judge_id, version), (spec or {}).get("route", ""))
    for submission in list(Submission.objects.filter(judge_label__contains=" at ")):
        submission.judge_endpoint = submission.judge_endpoint or hosts(submission.judge_label)[:300]
        submission.judge_label = public_label(submission.judge_label, routes.get((submission.judge_id, submission.judge_version), ""))
        submission.save(update_fields=["judge_label", "judge_endpoint"])
    for model in ("Figure", "HumanRow", "BoardStats"):
        rows = apps.get_model("leaderboard", model).objects.filter(judge_label__contains=" at ")
        for judge_id, version, label in list(rows.order_by().values_list("judge_id", "judge_version", "judge_label").distinct()):
            new = public_label(label, routes.get((judge_id, version), ""))
            if new != label:
                rows.filter(judge_id=judge_id, judge_version=version, judge_label=label).update(judge_label=new)


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0012_submission_judge_endpoint"),
        ("leaderboard", "0008_figure_coverage"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
