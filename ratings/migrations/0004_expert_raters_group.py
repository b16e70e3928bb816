"""The "Expert raters" group, holding ratings.rate_items: staff add a person to it to open /rate/ for them.

Permissions are normally created after all migrations ran (post_migrate), so this one creates the
permission it needs itself, with the same codename and name as RatingAssignment.Meta declares.
"""

from django.db import migrations

GROUP = "Expert raters"
CODENAME, NAME = "rate_items", "Can rate prompt/image pairs as an expert"


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="ratings", model="ratingassignment")
    permission, _ = Permission.objects.get_or_create(content_type=content_type, codename=CODENAME, defaults={"name": NAME})
    group, _ = Group.objects.get_or_create(name=GROUP)
    group.permissions.add(permission)


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("ratings", "0003_expert_queue"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, remove_group)]
