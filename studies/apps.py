from django.apps import AppConfig

# The attempt jobs (studies/jobs.py), named by dotted path as the work queue names every job: registering them and
# enqueueing them never imports the job module, which pulls in the whole evaluation pipeline.
ATTEMPT_RENDER_JOB = "studies.jobs.attempt_render_job"
ATTEMPT_JUDGE_JOB = "studies.jobs.attempt_judge_job"


def human_rows_after_finish(sender, **kwargs) -> None:
    """evaluation.signals.submission_finished, received here and handled by studies.humans, imported when the first
    submission finishes rather than at start-up (it imports the figures' aggregation)."""
    from .humans import human_rows_after_finish as rebuild

    rebuild(sender, **kwargs)


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Human studies"

    def ready(self) -> None:
        """Hook into the evaluation layer, which never imports this app: the attempt jobs, and the human rows
        rebuilt whenever a participant's submission finishes. Both by name only: start-up imports neither module."""
        from evaluation.queues import JUDGE_QUEUE
        from evaluation.signals import submission_finished
        from evaluation.workqueue import RENDER, register_jobs

        register_jobs({ATTEMPT_RENDER_JOB: RENDER, ATTEMPT_JUDGE_JOB: JUDGE_QUEUE})
        submission_finished.connect(human_rows_after_finish, dispatch_uid="studies.human_rows")
