from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from evaluator import difficulty
from evaluator.difficulty.report import meets_goal, rows, table
from tasks.difficulty import predictor_written


class Command(BaseCommand):
    help = "Train the prompt difficulty predictor on a folder of PQPP's splits: fit on train, choose on validation, report on test."

    def add_arguments(self, parser):
        parser.add_argument("--pqpp", required=True, help="folder holding PQPP's train.csv, validation.csv and test.csv")
        parser.add_argument("--out", help="artefact folder (default: the setting ATELIER_DIFFICULTY_MODEL)")
        parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="one model per seed, combined as --combine says")
        parser.add_argument("--epochs", type=int, help="training epochs per seed (the best epoch on validation is kept)")
        parser.add_argument(
            "--combine",
            choices=["auto", "best", "ensemble"],
            help="several seeds: the best, the average, or (auto) whichever does better on validation",
        )
        parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="another hyperparameter (docs/difficulty.md)")

    def handle(self, *args, pqpp: str, out: str | None, seeds: list[int], epochs: int | None, combine: str | None, **options):
        target = Path(out) if out else Path(settings.ATELIER_DIFFICULTY_MODEL)
        try:  # everything the user typed is checked before any training
            chosen = difficulty.Hyperparameters.parse(options["set"])
            chosen |= {k: v for k, v in (("epochs", epochs), ("combine", combine)) if v is not None}
            difficulty.Hyperparameters.of(chosen)
            difficulty.read_splits(pqpp)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        with tqdm(total=1, unit="step", file=self.stderr, dynamic_ncols=True) as bar:

            def progress(done: int, total: int, what: str) -> None:
                bar.total = total
                bar.set_description(what, refresh=False)
                bar.update(done - bar.n)

            manifest = difficulty.train_seeds(pqpp, target, seeds=seeds, progress=progress, **chosen)
        predictor_written(target)  # installed: the boards' releases follow
        self.stdout.write(table(rows(manifest)))
        goal = "meets" if meets_goal(manifest) else "does not meet"
        self.stdout.write(
            f"\n{manifest['version']} written to {target} in {manifest['training_seconds']:.0f} s "
            f"({manifest['torch_threads']} torch thread(s)); its test figures {goal} the goal (Pearson 0.600, Kendall 0.448)"
        )
