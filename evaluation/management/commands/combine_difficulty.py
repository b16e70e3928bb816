from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluator.difficulty import PredictorInvalid, PredictorMissing, SplitsError
from evaluator.difficulty.combine import combine
from evaluator.difficulty.report import GOAL, PUBLISHED, Row, table
from tasks.difficulty import predictor_written


class Command(BaseCommand):
    help = "Average trained difficulty predictors; keep the combination only if it beats each of them on PQPP's validation split."

    def add_arguments(self, parser):
        parser.add_argument("folders", nargs="+", help="artefact folders made by train_difficulty (two or more)")
        parser.add_argument("--pqpp", required=True, help="folder holding PQPP's train.csv, validation.csv and test.csv")
        parser.add_argument("--out", help="where the kept predictor goes (default: the setting ATELIER_DIFFICULTY_MODEL)")

    def handle(self, *args, folders: list[str], pqpp: str, out: str | None, **options):
        if len(folders) < 2:
            raise CommandError("name at least two artefact folders to average")
        target = out or str(settings.ATELIER_DIFFICULTY_MODEL)
        self.stderr.write(f"Predicting PQPP's validation and test splits with {len(folders)} predictors and their average…")
        try:
            rows, kept = combine(folders, target, pqpp)
        except (ValueError, SplitsError, PredictorMissing, PredictorInvalid) as exc:
            raise CommandError(str(exc)) from None
        predictor_written(target)  # installed: the boards' releases follow
        ours = [
            Row(
                f"{'kept: ' if r['name'] == kept else ''}{r['name']} (validation {r['validation']['pearson']:.3f} / {r['validation']['kendall']:.3f})",
                f"{r['test']['pearson']:.3f}",
                f"{r['test']['kendall']:.3f}",
                r["version"],
            )
            for r in rows
        ]
        self.stdout.write(table(ours, PUBLISHED))
        chosen = next(r for r in rows if r["name"] == kept)
        met = chosen["test"]["pearson"] >= GOAL[0] and chosen["test"]["kendall"] >= GOAL[1]
        self.stdout.write(
            f"\nkept {kept} (best on validation), written to {target}; its test figures {'meet' if met else 'do not meet'} the goal (Pearson 0.600, Kendall 0.448)"
        )
