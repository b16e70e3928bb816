"""Reads for the public pages. Views stay thin; everything that touches several models is here."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q, QuerySet, Sum

from submissions.models import Judgement, PromptEntry, Render, Submission, UnitStatus
from tasks.models import TaskPack

from .models import SubmissionScore

CATEGORY_KEYS = ("OE", "CO", "IM")


@dataclass
class Row:
    submission: Submission
    overall: SubmissionScore | None = None
    categories: dict[str, SubmissionScore] = field(default_factory=dict)
    backends: dict[str, SubmissionScore] = field(default_factory=dict)
    tasks_covered: int = 0

    def sort_value(self, key: str) -> float:
        score = self.overall if key == "overall" else self.categories.get(key) or self.backends.get(key.removeprefix("backend:"))
        return score.value if score is not None and score.value is not None else float("-inf")


def public_submissions() -> QuerySet[Submission]:
    return Submission.objects.filter(published=True, status="done").select_related("team", "pack")


def visible_to(user, submission: Submission) -> bool:
    if submission.published or user.is_staff:
        return True
    return user.is_authenticated and submission.team.members.filter(pk=user.pk).exists()


@dataclass(frozen=True)
class Board:
    """One leaderboard: a pack version at one revision, scored by one judge. Nothing else is ranked together."""

    pack: TaskPack
    revision: int

    @property
    def key(self) -> str:
        return f"{self.pack.pk}:{self.revision}"

    def __str__(self) -> str:
        return f"{self.pack.name} v{self.pack.version}" + (f" rev {self.revision}" if self.revision > 1 else "")


def leaderboard_boards() -> list[Board]:
    pairs = public_submissions().values_list("pack_id", "pack_revision").distinct()
    packs = TaskPack.objects.in_bulk({p for p, _ in pairs})
    return sorted((Board(packs[p], r) for p, r in set(pairs)), key=lambda b: (b.pack.name, -b.pack.loaded_at.timestamp(), -b.revision))


def board_submissions(board: Board) -> QuerySet[Submission]:
    return public_submissions().filter(pack=board.pack, pack_revision=board.revision)


@dataclass(frozen=True)
class JudgeKey:
    """A judge model (or ensemble) at one rubric version: figures of different keys are never mixed."""

    judge_id: str
    version: str
    label: str = ""

    @property
    def key(self) -> str:
        return f"{self.judge_id}|{self.version}"

    @classmethod
    def parse(cls, key: str) -> JudgeKey:
        judge_id, _, version = key.rpartition("|")
        return cls(judge_id, version)

    def __str__(self) -> str:
        return f"{self.label or self.judge_id} ({self.version})"


def judges_of(submission_ids) -> list[JudgeKey]:
    """Judge keys with figures for these submissions, most used first."""
    overall = SubmissionScore.objects.filter(submission_id__in=submission_ids, scope="overall")
    counts = Counter(overall.values_list("judge_id", "judge_version", "judge_label"))
    return [JudgeKey(*triple) for triple, _ in counts.most_common()]


def pick_judge(judges: list[JudgeKey], requested: str | None, default: JudgeKey | None = None) -> JudgeKey | None:
    by_key = {j.key: j for j in judges}
    return by_key.get(requested or "") or (default and by_key.get(default.key)) or (judges[0] if judges else None)


def leaderboard_rows(board: Board, judge: JudgeKey, sort: str = "overall", descending: bool = True) -> tuple[list[Row], list[tuple[str, str]]]:
    """Published rows of one board scored by one judge version (figures from different judges are not comparable)."""
    scores = SubmissionScore.objects.filter(submission__in=board_submissions(board), judge_id=judge.judge_id, judge_version=judge.version)
    submissions = list(board_submissions(board).filter(pk__in=scores.values("submission_id")).annotate(tasks=Count("entries__task", distinct=True)))
    rows = {s.pk: Row(submission=s, tasks_covered=s.tasks) for s in submissions}
    backends: set[str] = set()
    for score in scores.filter(scope__in=("overall", "category", "backend")):
        row = rows[score.submission_id]
        if score.scope == "overall":
            row.overall = score
        elif score.scope == "category":
            row.categories[score.key] = score
        else:
            row.backends[score.key] = score
            backends.add(score.key)
    ordered = sorted(rows.values(), key=lambda r: r.sort_value(sort), reverse=descending)
    labels = {b["name"]: b.get("label", "") for s in submissions for b in s.backends}
    return ordered, [(name, labels.get(name, "")) for name in sorted(backends)]


def submission_judge(submission: Submission) -> JudgeKey:
    return JudgeKey(submission.judge_id, submission.judge_version, submission.judge_label)


def submission_figures(submission: Submission, judge: JudgeKey | None = None) -> dict[str, list[SubmissionScore]]:
    judge = judge or submission_judge(submission)
    grouped: dict[str, list[SubmissionScore]] = defaultdict(list)
    for score in submission.scores.filter(judge_id=judge.judge_id, judge_version=judge.version):
        grouped[score.scope].append(score)
    return dict(grouped)  # a plain dict: templates would read defaultdict's .items as a missing key


def submission_progress(submission: Submission) -> dict[str, dict[str, int]]:
    def counts(qs: QuerySet) -> dict[str, int]:
        by_status = dict(qs.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
        result = {s: by_status.get(s, 0) for s in UnitStatus.values}
        result["total"] = sum(result.values())
        result["done"] = result["total"] - result["pending"]
        return result

    return {
        "renders": counts(Render.objects.filter(entry__submission=submission)),
        "judgements": counts(Judgement.objects.filter(submission=submission)),
    }


def entry_breakdown(entries: list[PromptEntry], judge: JudgeKey) -> dict[int, dict]:
    """For a page of entries: their renders and one judge's judgements, in two queries."""
    ids = [e.pk for e in entries]
    renders = defaultdict(list)
    for render in Render.objects.filter(entry_id__in=ids):
        renders[render.entry_id].append(render)
    judgements = defaultdict(list)
    same_judge = Q(judge_id=judge.judge_id, judge_version=judge.version)
    for judgement in Judgement.objects.filter(same_judge, entry_id__in=ids):
        judgements[judgement.entry_id].append(judgement)
    return {i: {"renders": renders[i], "judgements": judgements[i]} for i in ids}


def entry_rows(entries: list[PromptEntry], judge: JudgeKey) -> list[dict]:
    """Display rows for the submission page: prompt-side judgements, and per backend its images and image-side means."""
    details = entry_breakdown(entries, judge)
    rows = []
    for entry in entries:
        detail = details[entry.pk]
        prompt = {j.skill: j for j in detail["judgements"] if j.render_id is None}
        by_render = defaultdict(list)
        for j in detail["judgements"]:
            if j.render_id is not None and j.status == UnitStatus.OK:
                by_render[j.render_id].append(j)
        backends = []
        for name in sorted({r.backend for r in detail["renders"]}):
            renders = sorted((r for r in detail["renders"] if r.backend == name), key=lambda r: r.image_index)
            values = defaultdict(list)
            for render in renders:
                for j in by_render[render.pk]:
                    values[j.skill].append(j.value)
            means = {skill: sum(v) / len(v) for skill, v in values.items()}
            backends.append({"name": name, "renders": renders, "means": means})
        rows.append({"entry": entry, "prompt": prompt, "backends": backends})
    return rows


def submission_cost(submission: Submission) -> dict[str, int]:
    """Judge calls and tokens spent on a submission, over every judge version that scored it."""
    totals = Judgement.objects.filter(submission=submission).aggregate(
        calls=Sum("calls"), prompt_tokens=Sum("prompt_tokens"), completion_tokens=Sum("completion_tokens")
    )
    totals = {k: v or 0 for k, v in totals.items()}
    totals["cached"] = Judgement.objects.filter(submission=submission, cached=True).count()
    return totals


def skill_missing(submission: Submission, judge: JudgeKey) -> list[dict]:
    """Per skill: how many judgements ended ok, failed, blocked or skipped, and the missing rate
    (failed / (all − skipped)): AtelierEval reports it so that a score is read with what it lacks."""
    rows = Judgement.objects.filter(submission=submission, judge_id=judge.judge_id, judge_version=judge.version)
    counts: dict[str, Counter] = defaultdict(Counter)
    for skill, status, n in rows.values_list("skill", "status").annotate(n=Count("pk")):
        counts[skill][status] += n
    out = []
    for skill, c in sorted(counts.items()):
        judged = sum(c.values()) - c["skipped"]
        out.append({"skill": skill, **{s: c[s] for s in ("ok", "failed", "blocked", "skipped", "pending")}, "missing": c["failed"] / judged if judged else None})
    return out
