"""Invitation tokens stored hashed: the token column becomes `digest`, and each existing token is replaced, in place,
by its SHA-256 (as API tokens are stored: teams.models.ApiToken.digest_of), its first characters kept as `prefix`.
Links already handed out keep working: the link carries the token, and the site looks it up by its hash.

Backwards, the digests stay where the tokens were (a hash cannot be undone): links made before stop working until the
migration is applied again."""

import hashlib

from django.db import migrations, models


def hash_tokens(apps, schema_editor):
    Invitation = apps.get_model("studies", "Invitation")
    rows = list(Invitation.objects.only("pk", "digest"))
    for row in rows:
        row.prefix, row.digest = row.digest[:6], hashlib.sha256(row.digest.encode()).hexdigest()  # ApiToken.digest_of
    Invitation.objects.bulk_update(rows, ["prefix", "digest"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ("studies", "0003_references_follow_the_move"),
    ]

    operations = [
        migrations.RenameField(model_name="invitation", old_name="token", new_name="digest"),
        migrations.AlterField(
            model_name="invitation",
            name="digest",
            field=models.CharField(
                help_text="SHA-256 of the link's token (the token itself is never stored)", max_length=64, unique=True
            ),
        ),
        migrations.AddField(
            model_name="invitation",
            name="prefix",
            field=models.CharField(blank=True, help_text="the token's first characters, to recognise a link", max_length=6),
        ),
        migrations.RunPython(hash_tokens, migrations.RunPython.noop),
    ]
