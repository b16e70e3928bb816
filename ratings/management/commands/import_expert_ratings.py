from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Submission
from ratings.services import RatingFileError, expert_ratings_import


class Command(BaseCommand):
    help = "Import expert ratings (JSON Lines) of one submission's prompts and images; see docs/judging.md 'Judge agreement'."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--submission", type=int, required=True)

    def handle(self, *args, path: Path, submission: int, **options):
        found = Submission.objects.filter(pk=submission).first()
        if found is None:
            raise CommandError(f"no submission #{submission}")
        try:
            count = expert_ratings_import(submission=found, filename=path.name, data=path.read_bytes())
        except RatingFileError as exc:
            raise CommandError(f"{path}: {len(exc.problems)} problem(s), nothing imported:\n" + "\n".join(exc.problems)) from None
        self.stdout.write(f"{count} rating(s) imported for submission #{found.pk}")
