from django.core.management.base import BaseCommand

from submissions import queue, work
from submissions.jobs import judge_job, render_job, start_submission_job
from submissions.models import Status, Submission


class Command(BaseCommand):
    help = "Re-enqueue the pending units of unfinished submissions (jobs are idempotent, so duplicates are harmless)."

    def handle(self, *args, **options):
        for submission in Submission.objects.exclude(status__in=[Status.DONE, Status.FAILED]):
            if submission.status == Status.QUEUED:
                queue.enqueue("default", start_submission_job, submission.pk)
                self.stdout.write(f"#{submission.pk}: start re-enqueued")
                continue
            pairs, judgements = work.pending_units(submission.pk)
            for entry_id, backend in pairs:
                queue.enqueue(f"render-{backend}", render_job, entry_id, backend)
            for judgement_id in judgements:
                queue.enqueue("judge", judge_job, judgement_id)
            if not pairs and not judgements:
                work.submission_advance(submission.pk)
            self.stdout.write(f"#{submission.pk}: {len(pairs)} render job(s), {len(judgements)} judge job(s) re-enqueued")
