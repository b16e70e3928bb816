from django.core.management.base import BaseCommand

from evaluation.memory import embedding_model, embeddings_ensure
from evaluation.models import Exemplar
from evaluator.judge.types import Side


class Command(BaseCommand):
    help = "Embed every exemplar with the judge's current models (MiniLM for prompts, the configured CLIP for images) where missing."

    def handle(self, *args, **options):
        done = embeddings_ensure(Exemplar.objects.all())
        models = ", ".join(f"{side}: {embedding_model(side)}" for side in Side)
        self.stdout.write(f"{done} embedding(s) computed; {Exemplar.objects.count()} exemplar(s) now embedded with {models}")
