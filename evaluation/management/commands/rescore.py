from django.core.management.base import BaseCommand, CommandError

from evaluation import runtime
from evaluation.models import RESUMABLE, Submission
from evaluation.units import submission_rescore
from evaluation.workqueue import QueueUnavailable, enqueued_or_unchanged
from tasks.selectors import RevisionGone


class Command(BaseCommand):
    help = "Score finished or incomplete submissions again with the configured judge: failed judgements are retried, unchanged ones reused (zero calls)."

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--submission", type=int, action="append", help="a submission id (repeatable)")
        group.add_argument("--all", action="store_true", help="every finished or incomplete submission")

    def handle(self, *args, submission: list[int] | None, all: bool, **options):
        targets = Submission.objects.filter(status__in=RESUMABLE)
        if not all:
            targets = targets.filter(pk__in=submission)
            missing = set(submission) - set(targets.values_list("pk", flat=True))
            if missing:
                raise CommandError(f"not finished, not incomplete, or not found: {', '.join(map(str, sorted(missing)))}")
        judge = runtime.judge()
        for pk in targets.values_list("pk", flat=True):
            try:
                with enqueued_or_unchanged():  # with the queue down, this submission stays as it was
                    queued = submission_rescore(pk)
            except (QueueUnavailable, RevisionGone) as exc:
                raise CommandError(f"#{pk}: {exc}; nothing was changed for it") from exc
            self.stdout.write(f"#{pk}: {queued} judgement(s) queued for {judge.judge_id} {judge.version}")
