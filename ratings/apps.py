from django.apps import AppConfig

# The statistics job of /judge/ (ratings/jobs.py), named by dotted path as the work queue names every job.
REPORT_JOB = "ratings.jobs.report_job"


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Human ratings (judge memory and expert ratings)"

    def ready(self) -> None:
        """/judge/'s statistics are recomputed by job when what they read changes (ratings/reports.py): ratings (sent by
        this app's services and admin), a rated submission's judgements (submission_finished), a board's figures
        (board_rebuilt) or predictions (difficulty_changed); reconcile sends any report still owed its job."""
        from evaluation.queues import DEFAULT_QUEUE
        from evaluation.reconcile import register_check
        from evaluation.signals import board_rebuilt, submission_finished
        from evaluation.workqueue import register_jobs
        from tasks.signals import difficulty_changed

        register_jobs({REPORT_JOB: DEFAULT_QUEUE})
        register_check(_reconcile)
        submission_finished.connect(_judged, dispatch_uid="ratings-reports-judged")
        board_rebuilt.connect(_board_rebuilt, dispatch_uid="ratings-reports-board")
        difficulty_changed.connect(_predicted, dispatch_uid="ratings-reports-predicted")


# Receivers import ratings.reports when called, not at start-up (it imports the statistics).
def _reconcile() -> str:
    from .reports import reports_reconcile

    return reports_reconcile()


def _judged(sender, submission, **kwargs) -> None:
    """A submission finished judging (or a rescore did): the judge's agreement follows, if an expert rated it."""
    from .models import ExpertRating, Pool
    from .reports import ratings_changed

    if ExpertRating.objects.filter(entry__submission=submission, pool=Pool.EVALUATION).exists():
        ratings_changed()


def _board_rebuilt(sender, pack_id: int, revision: int, **kwargs) -> None:
    from .reports import difficulty_keys, reports_send

    reports_send(difficulty_keys({(pack_id, revision)}))


def _predicted(sender, texts: list[str] | None, **kwargs) -> None:
    from .reports import texts_predicted

    texts_predicted(texts)
