import django.db.models.deletion
from django.db import migrations, models

CONTENT = ("category", "split", "title", "brief", "constraints", "prompt_checklist", "image_checklist", "seed_prompt", "target_image")


def keep_current_versions(apps, schema_editor):
    """Each task's content as it is now. A task still at version 1 never changed, so it is that content at every
    revision it existed at (revision 1 and up). A changed one became what it is at a revision nobody recorded: only the
    pack's current revision is known to have it, and a submission made at an earlier one finds nothing kept and fails
    with that reason instead of being judged against content it was not made for."""
    Task, TaskVersion = apps.get_model("tasks", "Task"), apps.get_model("tasks", "TaskVersion")
    rows = [
        TaskVersion(
            task=task,
            version=task.version,
            revision=1 if task.version <= 1 else task.pack.revision,
            tags=sorted(tag.name for tag in task.tags.all()),
            **{name: getattr(task, name) for name in CONTENT},
        )
        for task in Task.objects.select_related("pack").prefetch_related("tags")
    ]
    TaskVersion.objects.bulk_create(rows, batch_size=500)


class Migration(migrations.Migration):
    dependencies = [("tasks", "0003_predicted_difficulty_plural")]

    operations = [
        migrations.CreateModel(
            name="TaskVersion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("version", models.PositiveIntegerField()),
                ("revision", models.PositiveIntegerField(help_text="the pack revision from which this is the task's content")),
                ("category", models.CharField(choices=[("OE", "Open-ended"), ("CO", "Constrained"), ("IM", "Imitation")], max_length=2)),
                ("split", models.CharField(choices=[("dev", "dev (public)"), ("test", "test (hidden checklists)")], max_length=4)),
                ("title", models.CharField(max_length=300)),
                ("brief", models.TextField()),
                ("constraints", models.JSONField(blank=True, default=dict)),
                ("tags", models.JSONField(blank=True, default=list, help_text="tag names")),
                ("prompt_checklist", models.JSONField(blank=True, default=list)),
                ("image_checklist", models.JSONField(blank=True, default=list)),
                ("seed_prompt", models.TextField(blank=True)),
                ("target_image", models.ImageField(blank=True, upload_to="targets/")),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("task", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="versions", to="tasks.task")),
            ],
            options={"constraints": [models.UniqueConstraint(fields=("task", "version"), name="unique_task_version")]},
        ),
        migrations.CreateModel(
            name="PinnedTask", fields=[], options={"proxy": True, "indexes": [], "constraints": []}, bases=("tasks.task",)
        ),
        # Reversed, the table goes with its rows: nothing else is lost.
        migrations.RunPython(keep_current_versions, migrations.RunPython.noop),
    ]
