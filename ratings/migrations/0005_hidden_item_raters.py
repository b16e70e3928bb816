"""ratings.rate_hidden_items, off for everyone, and the group "Hidden-item raters" holding it: staff add an expert
to it (admin → Groups, or the permission on the user) before items of hidden (test-split) tasks reach them.

As in 0004, the permission is created here, with the codename and name RatingAssignment.Meta declares.
"""

from django.db import migrations

GROUP = "Hidden-item raters"
CODENAME, NAME = "rate_hidden_items", "Can rate items of hidden (test-split) tasks, whose checklists are secret"


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    content_type, _ = ContentType.objects.get_or_create(app_label="ratings", model="ratingassignment")
    permission, _ = Permission.objects.get_or_create(content_type=content_type, codename=CODENAME, defaults={"name": NAME})
    group, _ = apps.get_model("auth", "Group").objects.get_or_create(name=GROUP)
    group.permissions.add(permission)


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0004_expert_raters_group"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="ratingassignment",
            options={
                "ordering": ["created", "pk"],
                "permissions": [
                    ("rate_items", "Can rate prompt/image pairs as an expert"),
                    ("rate_hidden_items", "Can rate items of hidden (test-split) tasks, whose checklists are secret"),
                ],
            },
        ),
        migrations.RunPython(create_group, remove_group),
    ]
