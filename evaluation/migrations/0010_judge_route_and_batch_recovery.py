"""Submission.judge_route (ATELIER_JUDGE_BATCH=ask: the team chooses when it submits) and the batch row's send key and
cancel record (issue 44). Existing submissions keep the synchronous route, except those the batch route already took
(ATELIER_JUDGE_BATCH=all before this): a judgement waiting for a batch, or a batch sent; new ones take the model's
default, which follows the setting."""

from django.db import migrations, models

import evaluation.models


def batch_where_batched(apps, schema_editor):
    Submission = apps.get_model("evaluation", "Submission")
    batched = Submission.objects.filter(models.Q(judgements__by_batch=True) | models.Q(judge_batches__isnull=False))
    Submission.objects.filter(pk__in=batched.values("pk")).update(judge_route="batch")


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0009_judge_batches")]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="judge_route",
            field=models.CharField(
                choices=[
                    ("sync", "synchronous (each request as its unit is ready)"),
                    ("batch", "by batch (the provider's batch API: cheaper, replies within 24 h)"),
                ],
                default="sync",
                help_text="how its judge requests go out: sync or batch (ATELIER_JUDGE_BATCH; with `ask` the team chose when it submitted)",
                max_length=8,
            ),
        ),
        migrations.RunPython(batch_where_batched, migrations.RunPython.noop),
        migrations.AlterField(  # the rows above stay sync; from now on a new row's default follows the setting
            model_name="submission",
            name="judge_route",
            field=models.CharField(
                choices=[
                    ("sync", "synchronous (each request as its unit is ready)"),
                    ("batch", "by batch (the provider's batch API: cheaper, replies within 24 h)"),
                ],
                default=evaluation.models.default_judge_route,
                help_text="how its judge requests go out: sync or batch (ATELIER_JUDGE_BATCH; with `ask` the team chose when it submitted)",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="judgebatch",
            name="send_key",
            field=models.CharField(
                blank=True,
                help_text="sent as the batch's metadata (atelier_batch): how reconcile finds a batch the send job did not live to record",
                max_length=64,
            ),
        ),
        migrations.AddField(
            model_name="judgebatch",
            name="cancel_requested",
            field=models.DateTimeField(
                blank=True, help_text="when the provider was asked to cancel it (its submission was cancelled)", null=True
            ),
        ),
        migrations.AddField(
            model_name="judgebatch",
            name="cancel_error",
            field=models.TextField(blank=True, help_text="why the provider did not take the cancel, in our words; empty: no failure"),
        ),
        migrations.AlterField(
            model_name="judgebatch",
            name="status",
            field=models.CharField(
                default="validating",
                help_text="the provider's status, as last polled; sending: not known to exist there yet",
                max_length=20,
            ),
        ),
    ]
