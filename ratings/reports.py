"""The statistics /judge/ shows, computed by a job when what they are computed from changes, never in a request.

Each report is one StoredReport row: the judge against the raters (per judge), the raters among themselves (people's
and the demo's scripted raters' apart), and predicted difficulty against a board's judge (per board and judge). A row
holds the figures as JSON, when they were computed, and the digest of the inputs and code they came from. The inputs'
digest as they stand now is a few counts and latest-change times (one cheap read each), so the page tells current
figures from stale ones without computing: stale or missing figures send the report's job (report_job, keyed by the
report), which recomputes them unless they are current. The job is also sent on commit whenever ratings change (the
services and the admin), a rated submission finishes judging, or a board or its predictions change (ratings/apps.py),
and reconcile sends any that is still missing. A failed job records why on the row and is not sent again for the
same inputs: the page says so, and the next change of ratings or boards tries again.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import operator
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import redis
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone
from pydantic import TypeAdapter

from evaluation import difficulty as evaluation_difficulty
from evaluation.difficulty import boards_of_texts
from evaluation.judges import JudgeKey, pick_judge
from evaluation.models import BoardStats, Judgement, UnitStatus
from evaluation.workqueue import enqueue, job_alive
from evaluator.failures import class_name
from evaluator.metrics import agreement as agreement_metrics
from evaluator.metrics.agreement import PeopleAgreement
from tasks import difficulty
from tasks.models import PredictedDifficulty

from . import agreement
from . import difficulty as board_reports
from .agreement import Report, agreement_report, evaluation, judges_with_ratings, people_report
from .apps import REPORT_JOB
from .difficulty import BoardDifficulty, board_difficulty, board_name
from .models import ReportKind, StoredReport

log = logging.getLogger(__name__)
RESAMPLES = 1000
# The code that computes and shapes the figures: stored figures of other code are recomputed, and never read (their shape).
CODE = hashlib.sha256(
    b"".join(
        Path(m.__file__).read_bytes() for m in (sys.modules[__name__], agreement, board_reports, evaluation_difficulty, agreement_metrics)
    )
).hexdigest()[:12]
SHAPES = {
    ReportKind.JUDGE: TypeAdapter(Report),
    ReportKind.PEOPLE: TypeAdapter(list[PeopleAgreement]),
    ReportKind.DIFFICULTY: TypeAdapter(BoardDifficulty),
}


@dataclass(frozen=True)
class ReportKey:
    """A report's natural key: its row, and its job's arguments (so its job id)."""

    kind: str
    scripted: bool = False
    subject: str = ""

    @property
    def args(self) -> tuple[str, bool, str]:
        return (str(self.kind), bool(self.scripted), self.subject)  # plain values: the same digest from RQ's pickle or a shell

    @property
    def where(self) -> dict[str, Any]:
        return {"kind": self.kind, "scripted": self.scripted, "subject": self.subject}


def board_key(stats: BoardStats) -> ReportKey:
    judge = JudgeKey(stats.judge_id, stats.judge_version)
    return ReportKey(ReportKind.DIFFICULTY, subject=f"{stats.pack_id}:{stats.revision}:{judge.key}")


def _board(subject: str) -> BoardStats | None:
    pack_id, revision, judge = subject.split(":", 2)
    found = JudgeKey.parse(judge)
    where = {"pack_id": int(pack_id), "revision": int(revision), "judge_id": found.judge_id, "judge_version": found.version}
    return BoardStats.objects.select_related("pack").filter(**where).first()


# --- what the figures are computed from -------------------------------------------------------------------------------


def _ratings_stamp(scripted: bool) -> tuple:
    """Any rating added, changed (its `updated` moves) or deleted (the count or the last id moves) changes this."""
    found = evaluation(scripted).aggregate(n=Count("pk"), last=Max("updated"), top=Max("pk"))
    return found["n"], found["last"], found["top"]


def _judged_stamp(judge: JudgeKey, scripted: bool) -> tuple:
    """The judge's judgements of rated items: a rescore sets them pending (the count of successful ones moves), and a
    judgement saved moves `updated`."""
    rated = evaluation(scripted).values("entry_id")
    rows = Judgement.objects.filter(judge_id=judge.judge_id, judge_version=judge.version, entry_id__in=rated)
    found = rows.aggregate(ok=Count("pk", filter=Q(status=UnitStatus.OK)), last=Max("updated"))
    return found["ok"], found["last"]


def _inputs(key: ReportKey) -> tuple:
    if key.kind == ReportKind.PEOPLE:
        return (_ratings_stamp(key.scripted),)
    if key.kind == ReportKind.JUDGE:
        return _ratings_stamp(key.scripted), _judged_stamp(JudgeKey.parse(key.subject), key.scripted)
    stats, manifest = _board(key.subject), difficulty.installed()
    version = manifest["version"] if manifest else None
    scored = PredictedDifficulty.objects.filter(predictor=version).count()  # predictions made since
    return (stats.pk, stats.computed) if stats else None, version, scored


def input_digest(key: ReportKey) -> str:
    return hashlib.sha256(repr((CODE, RESAMPLES, key.args, _inputs(key))).encode()).hexdigest()  # datetimes: repr is exact


# --- the job's work ---------------------------------------------------------------------------------------------------


def _compute(key: ReportKey) -> object | None:
    """The report's figures; None for a board (or predictor) that is gone."""
    if key.kind == ReportKind.PEOPLE:
        return people_report(RESAMPLES, scripted=key.scripted)
    if key.kind == ReportKind.JUDGE:
        return agreement_report(JudgeKey.parse(key.subject), RESAMPLES, scripted=key.scripted)
    stats, manifest = _board(key.subject), difficulty.installed()
    return board_difficulty(stats, manifest["version"], RESAMPLES) if stats and manifest else None


def report_refresh(kind: str, scripted: bool, subject: str) -> None:
    """Recompute one report unless its stored figures are of the inputs as they stand (a re-sent job changes nothing).
    The digest is taken first: a rating that arrives while the job runs leaves the row stale, and it runs again."""
    key = ReportKey(kind, scripted, subject)
    digest = input_digest(key)
    if StoredReport.objects.filter(**key.where, digest=digest).exists():
        return
    started = time.perf_counter()
    figures = _compute(key)
    if figures is None:
        StoredReport.objects.filter(**key.where).delete()
        return
    done = {"data": SHAPES[kind].dump_python(figures, mode="json"), "digest": digest, "code": CODE, "computed_at": timezone.now()}
    done |= {"seconds": round(time.perf_counter() - started, 3), "error": "", "failed_digest": "", "failed_at": None}
    StoredReport.objects.update_or_create(**key.where, defaults=done)


def report_fail(kind: str, scripted: bool, subject: str, exc: Exception) -> None:
    """Why the job failed, in our words, on the report's row (its figures stay): not sent again for these inputs."""
    key = ReportKey(kind, scripted, subject)
    failed = {"error": f"job error ({class_name(exc)})", "failed_digest": input_digest(key), "failed_at": timezone.now()}
    StoredReport.objects.update_or_create(**key.where, defaults=failed)


# --- when the job is sent ---------------------------------------------------------------------------------------------


def agreement_keys() -> list[ReportKey]:
    """Every agreement report that has ratings to read: people's and the scripted raters', each judge's."""
    keys = []
    for scripted in (False, True):
        if evaluation(scripted).exists():
            keys.append(ReportKey(ReportKind.PEOPLE, scripted))
            keys += [ReportKey(ReportKind.JUDGE, scripted, judge.key) for judge in judges_with_ratings(scripted=scripted)]
    return keys


def difficulty_keys(boards: set[tuple[int, int]] | None = None) -> list[ReportKey]:
    """The difficulty report of each board and judge (of these (pack id, revision) boards only); none without a predictor."""
    if difficulty.installed() is None or boards == set():
        return []
    rows = BoardStats.objects.order_by("pk")
    if boards is not None:
        rows = rows.filter(functools.reduce(operator.or_, (Q(pack_id=pack_id, revision=revision) for pack_id, revision in boards)))
    return [board_key(stats) for stats in rows]


def reports_send(keys: list[ReportKey]) -> None:
    """Send these reports' jobs once the surrounding transaction commits (a change of their inputs: always sent). A queue
    that cannot be reached then costs nothing the change wrote: Django logs the error (robust) and reconcile sends them."""
    transaction.on_commit(functools.partial(_send, keys), robust=True)


def _send(keys: list[ReportKey]) -> None:
    for key in keys:
        enqueue(REPORT_JOB, *key.args)


def ratings_changed() -> None:
    """Called by whatever writes or deletes evaluation ratings, inside its transaction."""
    reports_send(agreement_keys())


def texts_predicted(texts: list[str] | None) -> None:
    """Predictions were made for these prompt texts (every board's may have changed for None: a predictor installed)."""
    reports_send(difficulty_keys(None if texts is None else boards_of_texts(texts)))


def _owed(key: ReportKey, row: StoredReport | None, digest: str) -> bool:
    """Whether the report's job should be sent: its figures are not current, it did not fail on these very inputs, and
    no job of it is coming."""
    if row is not None and digest in (row.digest, row.failed_digest):
        return False
    return not job_alive(REPORT_JOB, *key.args)


def reports_reconcile() -> str:
    """reconcile's check (registered in ratings/apps.py): send every report that is owed its job."""
    owed = [
        key
        for key in (*agreement_keys(), *difficulty_keys())
        if _owed(key, StoredReport.objects.filter(**key.where).first(), input_digest(key))
    ]
    reports_send(owed)
    return f"{len(owed)} statistics report(s) sent"


# --- what the page reads ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """A report as the page shows it: its figures (None until computed), when they were computed, whether they are of
    the inputs as they stand, and why the job failed on those inputs ("" unless it did)."""

    figures: Any
    computed_at: datetime | None = None
    current: bool = False
    error: str = ""
    failed_at: datetime | None = None


def report_shown(key: ReportKey) -> Shown:
    """The stored figures of one report. When they are owed a job it is sent, so the page says they are being computed:
    a worker (or the web process's background thread) runs it; in-process without one (commands, tests) it runs here."""
    digest = input_digest(key)
    row = StoredReport.objects.filter(**key.where).first()
    try:
        owed = _owed(key, row, digest)
    except redis.RedisError as exc:  # the queue is down: the page still shows what is stored
        log.warning("statistics report %s: could not ask the queue for its job (%s)", key.args, exc)
        owed = False
    if owed:
        reports_send([key])
        row = StoredReport.objects.filter(**key.where).first()
    if row is None:
        return Shown(None)
    figures = SHAPES[key.kind].validate_python(row.data) if row.data is not None and row.code == CODE else None
    error = row.error if row.failed_digest == digest else ""
    return Shown(figures, row.computed_at if figures is not None else None, row.digest == digest, error, row.failed_at)


def people_shown(*, scripted: bool = False) -> Shown:
    if not evaluation(scripted).exists():
        return Shown([], current=True)  # nothing to compute
    return report_shown(ReportKey(ReportKind.PEOPLE, scripted))


def judge_shown(judge: JudgeKey, *, scripted: bool = False) -> Shown:
    return report_shown(ReportKey(ReportKind.JUDGE, scripted, judge.key))


@dataclass(frozen=True)
class ScriptedShown:
    """The demo's scripted raters' section (rules, not people): ratings.agreement.ScriptedSection, read from storage."""

    raters: list[str]
    judges: list[JudgeKey]
    judge: JudgeKey | None
    report_shown: Shown | None  # None when no judge has figures for what they rated
    people_shown: Shown

    @property
    def report(self) -> Report | None:
        return self.report_shown.figures if self.report_shown else None

    @property
    def people(self) -> list[PeopleAgreement] | None:
        return self.people_shown.figures


def scripted_shown(requested: str | None = None) -> ScriptedShown | None:
    """The scripted raters' figures against the requested judge (else the one with most figures); None without scripted ratings."""
    raters = list(evaluation(scripted=True).order_by("rater").values_list("rater", flat=True).distinct())
    if not raters:
        return None
    judges = judges_with_ratings(scripted=True)
    judge = pick_judge(judges, requested)
    report = judge_shown(judge, scripted=True) if judge else None
    return ScriptedShown(raters, judges, judge, report, people_shown(scripted=True))


def difficulty_shown() -> list[tuple[str, str, Shown]] | None:
    """(board, judge label, stored report) of each board and judge, most entries first; None without a predictor."""
    if difficulty.installed() is None:
        return None
    return [(board_name(stats), stats.judge_label or stats.judge_id, report_shown(board_key(stats))) for stats in board_reports.boards()]


def judge_page(requested: str | None) -> dict[str, Any]:
    """What /judge/ shows of the requested judge (else the one with most figures), as stored: `computing` when some
    section waits for its job (the page then reloads itself)."""
    judges = judges_with_ratings()
    judge = pick_judge(judges, requested)
    report, people = judge_shown(judge) if judge else None, people_shown()
    scripted, boards = scripted_shown(requested), difficulty_shown()
    sections = [report, people, *((scripted.report_shown, scripted.people_shown) if scripted else ()), *(s for *_, s in boards or ())]
    return {
        "judges": judges,
        "judge": judge,
        "report_shown": report,
        "report": report.figures if report else None,
        "people_shown": people,
        "people": people.figures,
        "scripted": scripted,  # the demo's rule raters: a section of their own, or None
        "difficulty": boards,
        "computing": any(s and not s.current and not s.error for s in sections),
    }
