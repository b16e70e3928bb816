from django.apps import AppConfig


def _done(sender, *, submission, **kwargs) -> None:
    """evaluation.signals.submission_finished: done is 'done'; incomplete (not publishable) is told as 'failed'."""
    from evaluation.models import Status

    from .services import notify_on_commit

    notify_on_commit(submission.pk, "done" if submission.status == Status.DONE else "failed")


def _failed(sender, *, submission_id: int, **kwargs) -> None:
    from .services import notify_on_commit

    notify_on_commit(submission_id, "failed")


def _published(sender, *, submission_id: int, **kwargs) -> None:
    from .services import notify_on_commit

    notify_on_commit(submission_id, "published")


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "E-mail notifications"

    def ready(self) -> None:
        """The evaluation layer and the submissions app never import this app: they send signals, received here."""
        from evaluation.signals import submission_failed, submission_finished, submission_published

        submission_finished.connect(_done, dispatch_uid="notifications.done")
        submission_failed.connect(_failed, dispatch_uid="notifications.failed")
        submission_published.connect(_published, dispatch_uid="notifications.published")
