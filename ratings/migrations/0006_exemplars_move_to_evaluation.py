"""Exemplars and their embeddings now belong to evaluation/ (state only; the tables stay)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0001_initial'),
        ('ratings', '0005_hidden_item_raters'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='exemplarembedding',
                name='exemplar',
            ),
            migrations.AlterField(
                model_name='expertrating',
                name='entry',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='expert_ratings', to='evaluation.promptentry'),
            ),
            migrations.AlterField(
                model_name='expertrating',
                name='render',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='expert_ratings', to='evaluation.render'),
            ),
            migrations.AlterField(
                model_name='ratingassignment',
                name='entry',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rating_assignments', to='evaluation.promptentry'),
            ),
            migrations.AlterField(
                model_name='ratingassignment',
                name='render',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rating_assignments', to='evaluation.render'),
            ),
            migrations.DeleteModel(
                name='Exemplar',
            ),
            migrations.DeleteModel(
                name='ExemplarEmbedding',
            ),
    
        ]),
    ]
