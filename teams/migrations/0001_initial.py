"""Teams, members, tokens and endpoints move here from submissions/ with their tables (state only: no row moves)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('submissions', '0012_submission_judge_endpoint'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Membership',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('is_owner', models.BooleanField(default=False)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'submissions_membership',
                },
            ),
            migrations.CreateModel(
                name='Team',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100, unique=True)),
                    ('slug', models.SlugField(max_length=100, unique=True)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('members', models.ManyToManyField(related_name='teams', through='teams.Membership', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'submissions_team',
                },
            ),
            migrations.AddField(
                model_name='membership',
                name='team',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='teams.team'),
            ),
            migrations.CreateModel(
                name='Endpoint',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('base_url', models.CharField(help_text='OpenAI-compatible base URL, e.g. https://host/v1', max_length=500)),
                    ('model', models.CharField(max_length=200)),
                    ('key_encrypted', models.TextField(blank=True, help_text="Fernet token of the API key ('' when none)")),
                    ('temperature', models.FloatField(blank=True, null=True)),
                    ('top_p', models.FloatField(blank=True, null=True)),
                    ('max_tokens', models.PositiveIntegerField(blank=True, null=True)),
                    ('seed', models.BigIntegerField(blank=True, help_text='sent where the server accepts one; sample k sends seed + k', null=True)),
                    ('max_in_flight', models.PositiveSmallIntegerField(default=4, help_text='calls in flight at once, across all workers')),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('archived', models.BooleanField(default=False)),
                    ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='endpoints', to='teams.team')),
                ],
                options={
                    'db_table': 'submissions_endpoint',
                    'ordering': ['name'],
                },
            ),
            migrations.CreateModel(
                name='ApiToken',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('prefix', models.CharField(help_text='first characters, to recognise the token', max_length=12)),
                    ('digest', models.CharField(max_length=64, unique=True)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('last_used', models.DateTimeField(blank=True, null=True)),
                    ('revoked', models.BooleanField(default=False)),
                    ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tokens', to='teams.team')),
                ],
                options={
                    'db_table': 'submissions_apitoken',
                },
            ),
            migrations.AddConstraint(
                model_name='membership',
                constraint=models.UniqueConstraint(fields=('team', 'user'), name='unique_membership'),
            ),
            migrations.AddConstraint(
                model_name='endpoint',
                constraint=models.UniqueConstraint(fields=('team', 'name'), name='unique_endpoint_name'),
            ),
    
        ]),
    ]
