from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from evaluation.models import PromptCall, PromptEntry
from tasks import difficulty
from tasks.models import Task


class Command(BaseCommand):
    help = "Score every task's brief and every submitted prompt not yet scored by the installed difficulty predictor (after training one)."

    def handle(self, *args, **options):
        manifest = difficulty.installed()
        if manifest is None:
            raise CommandError(
                f"no usable difficulty predictor at {settings.ATELIER_DIFFICULTY_MODEL}: train one with `{difficulty.TRAIN_HINT}`"
            )
        texts = {difficulty.task_text(task) for task in Task.objects.all()}
        texts |= set(PromptEntry.objects.values_list("text", flat=True))
        texts |= set(PromptCall.objects.exclude(text="").values_list("text", flat=True))
        texts = {t for t in texts if t.strip()}
        todo = len(texts) - len(difficulty.scores(texts, manifest["version"]))
        with tqdm(total=todo, unit="prompt", file=self.stderr, dynamic_ncols=True, desc="predicting") as bar:
            done = difficulty.predict_missing(texts, progress=bar.update)
        difficulty.boards_follow(None)  # applied: a predictor installed by hand shows on every board now, so each is released
        self.stdout.write(f"{manifest['version']}: {done} prompt(s) scored now, {len(texts) - done} already scored, {len(texts)} in all")
