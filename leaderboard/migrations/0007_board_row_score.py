"""BoardRow.score (the ranked score) and the board page's two indexes, in the page's order: best first, entries
without a value last, ties by submission, so a page of the board is a range of an index, never a sort of all rows.
PostgreSQL needs NULLS LAST spelled out (its DESC puts NULLs first); SQLite cannot say it in an index, and its DESC
already puts NULLs last."""

from django.db import migrations, models

COLUMNS = ("overall", "score")


def _create(apps, schema_editor):
    nulls = " NULLS LAST" if schema_editor.connection.vendor == "postgresql" else ""
    for column in COLUMNS:
        schema_editor.execute(
            f'CREATE INDEX "board_row_by_{column}" ON "leaderboard_boardrow" '
            f'("pack_id", "revision", "judge_id", "judge_version", "{column}" DESC{nulls}, "submission_id")'
        )


def _drop(apps, schema_editor):
    for column in COLUMNS:
        schema_editor.execute(f'DROP INDEX IF EXISTS "board_row_by_{column}"')


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0006_board_stats_page_fields"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="boardrow", name="board_row_by_overall"),
        migrations.AddField(
            model_name="boardrow",
            name="score",
            field=models.FloatField(help_text="the ranked score (BoardStats: test split or all tasks): the statistics' order", null=True),
        ),
        migrations.RunPython(_create, _drop),
    ]
