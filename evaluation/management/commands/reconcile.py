from django.core.management.base import BaseCommand

from evaluation.units import pending_units, submission_advance
from evaluation.workqueue import JUDGE_JOB, RENDER_JOB, START_JOB, enqueue, render_queue
from submissions.models import Status, Submission


class Command(BaseCommand):
    help = "Re-enqueue the pending units of unfinished submissions (jobs are idempotent, so duplicates are harmless)."

    def handle(self, *args, **options):
        for submission in Submission.objects.exclude(status__in=[Status.DONE, Status.FAILED]):
            if submission.status == Status.QUEUED:
                enqueue("default", START_JOB, submission.pk)
                self.stdout.write(f"#{submission.pk}: start re-enqueued")
                continue
            pairs, judgements = pending_units(submission.pk)
            for entry_id, backend in pairs:
                enqueue(render_queue(backend), RENDER_JOB, entry_id, backend)
            for judgement_id in judgements:
                enqueue("judge", JUDGE_JOB, judgement_id)
            if not pairs and not judgements:
                submission_advance(submission.pk)
            self.stdout.write(f"#{submission.pk}: {len(pairs)} render job(s), {len(judgements)} judge job(s) re-enqueued")
