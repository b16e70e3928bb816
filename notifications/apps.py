from django.apps import AppConfig

# The mail queue's job (notifications/jobs.py), named by dotted path as the work queue names every job.
SEND_JOB = "notifications.jobs.notice_send_job"


# Receivers import the services when called, not at start-up; the events are models.Event's.
def _done(sender, *, submission, **kwargs) -> None:
    """evaluation.signals.submission_finished: done is 'done'; incomplete (not publishable) is told as 'failed'."""
    from evaluation.models import Status

    from .models import Event
    from .services import submission_event

    submission_event(submission.pk, Event.DONE if submission.status == Status.DONE else Event.FAILED)


def _failed(sender, *, submission_id: int, **kwargs) -> None:
    from .models import Event
    from .services import submission_event

    submission_event(submission_id, Event.FAILED)


def _published(sender, *, submission_id: int, **kwargs) -> None:
    from .models import Event
    from .services import submission_event

    submission_event(submission_id, Event.PUBLISHED)


def _reconcile() -> str:
    from .services import notices_reconcile

    return notices_reconcile()


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "E-mail notifications"

    def ready(self) -> None:
        """The evaluation layer and the submissions app never import this app: they send signals, received here, in
        the transaction that made the event; the notices' job and reconcile's check of them are registered here."""
        from evaluation.queues import MAIL_QUEUE
        from evaluation.reconcile import register_check
        from evaluation.signals import submission_failed, submission_finished, submission_published
        from evaluation.workqueue import register_jobs

        register_jobs({SEND_JOB: MAIL_QUEUE})
        register_check(_reconcile)
        submission_finished.connect(_done, dispatch_uid="notifications.done")
        submission_failed.connect(_failed, dispatch_uid="notifications.failed")
        submission_published.connect(_published, dispatch_uid="notifications.published")
