"""Figures, board rows, board statistics and human rows now belong to evaluation/ (state only; the tables stay)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0011_humanrow_scripted'),
        ('evaluation', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='boardstats',
                name='pack',
            ),
            migrations.RemoveField(
                model_name='figure',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='humanrow',
                name='pack',
            ),
            migrations.DeleteModel(
                name='BoardRow',
            ),
            migrations.DeleteModel(
                name='BoardStats',
            ),
            migrations.DeleteModel(
                name='Figure',
            ),
            migrations.DeleteModel(
                name='HumanRow',
            ),
    
        ]),
    ]
