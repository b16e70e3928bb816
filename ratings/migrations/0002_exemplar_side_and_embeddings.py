"""Exemplar.kind is now Exemplar.side, and embeddings move to their own table keyed by the embedding model.

The old single embedding per exemplar is dropped, not copied: it was keyed by a model name that did
not identify the weights, so it cannot be trusted for any model now; retrieval embeds exemplars with
the current model on first use (or run `manage.py embed_exemplars`).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("ratings", "0001_initial")]

    operations = [
        migrations.RemoveConstraint("exemplar", "unique_exemplar"),
        migrations.RenameField("exemplar", "kind", "side"),
        migrations.AlterField("exemplar", "side", models.CharField(choices=[("prompt", "prompt"), ("image", "image")], max_length=6)),
        migrations.AlterField(
            "exemplar", "content_sha",
            models.CharField(help_text="sha256 of text and image: the same content is stored once", max_length=64),
        ),
        migrations.RemoveField("exemplar", "embedding"),
        migrations.RemoveField("exemplar", "embedding_model"),
        migrations.AlterModelOptions("exemplar", {"ordering": ["category", "task_id", "side"]}),
        migrations.AddConstraint(
            "exemplar", models.UniqueConstraint(fields=("side", "category", "task_id", "content_sha"), name="unique_exemplar")
        ),
        migrations.CreateModel(
            name="ExemplarEmbedding",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(max_length=200)),
                ("vector", models.JSONField()),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("exemplar", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="embeddings", to="ratings.exemplar")),
            ],
            options={"constraints": [models.UniqueConstraint(fields=("exemplar", "model"), name="unique_exemplar_embedding")]},
        ),
    ]
