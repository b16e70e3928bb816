from django.apps import AppConfig

RELEASE_JOB = "leaderboard.jobs.release_job"


class LeaderboardConfig(AppConfig):
    name = "leaderboard"

    def ready(self) -> None:
        from evaluation.queues import DEFAULT_QUEUE
        from evaluation.signals import board_rebuilt
        from evaluation.workqueue import register_jobs

        register_jobs({RELEASE_JOB: DEFAULT_QUEUE})
        board_rebuilt.connect(_release_later, dispatch_uid="leaderboard-release")


def _release_later(sender, pack_id: int, revision: int, **kwargs) -> None:
    """Once the rebuild commits, release the board (leaderboard/releases.py)."""
    from evaluation.workqueue import enqueue

    enqueue(RELEASE_JOB, pack_id, revision)
