from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Human studies"

    def ready(self) -> None:
        """Hook into the evaluation layer, which never imports this app: the attempt jobs, and the human rows
        rebuilt whenever a participant's submission finishes."""
        from evaluation.signals import submission_finished
        from evaluation.workqueue import RENDER, register_jobs

        from .attempts import ATTEMPT_JUDGE_JOB, ATTEMPT_RENDER_JOB
        from .humans import human_rows_after_finish

        register_jobs({ATTEMPT_RENDER_JOB: RENDER, ATTEMPT_JUDGE_JOB: "judge"})
        submission_finished.connect(human_rows_after_finish, dispatch_uid="studies.human_rows")
