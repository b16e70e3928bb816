from django.apps import AppConfig

RELEASE_JOB = "leaderboard.jobs.release_job"


class LeaderboardConfig(AppConfig):
    name = "leaderboard"

    def ready(self) -> None:
        """A board is released again whenever what its release carries changes: its statistics (board_rebuilt), its
        human rows (board_changed) or its difficulty predictions (difficulty_changed); by job, not by its download."""
        from evaluation.queues import DEFAULT_QUEUE
        from evaluation.signals import board_changed, board_rebuilt
        from evaluation.workqueue import register_jobs
        from tasks.signals import difficulty_changed

        register_jobs({RELEASE_JOB: DEFAULT_QUEUE})
        board_rebuilt.connect(_release_later, dispatch_uid="leaderboard-release")
        board_changed.connect(_release_later, dispatch_uid="leaderboard-release-changed")
        difficulty_changed.connect(_release_predicted, dispatch_uid="leaderboard-release-predicted")


def _release_later(sender, pack_id: int, revision: int, **kwargs) -> None:
    """Once the change commits, release the board (leaderboard/releases.py)."""
    from evaluation.workqueue import enqueue

    enqueue(RELEASE_JOB, pack_id, revision)


def _release_predicted(sender, texts: list[str] | None, **kwargs) -> None:
    """Release each board whose published entries hold one of these prompts; every board, for None (a predictor was
    installed: the job finds the boards, so a command that trains one where no database answers still ends well)."""
    from evaluation.difficulty import boards_of_texts
    from evaluation.workqueue import enqueue

    if texts is None:
        enqueue(RELEASE_JOB)
        return
    for pack_id, revision in sorted(boards_of_texts(texts)):
        _release_later(sender, pack_id, revision)
