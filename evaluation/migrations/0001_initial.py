"""The pipeline's tables move here from submissions/, leaderboard/ and ratings/ with their names (state only: no row moves)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models



MOVED = {
    "evaluation": {"submissions": ["submission", "promptentry", "render", "judgement", "promptcall"],
                   "leaderboard": ["figure", "humanrow", "boardstats", "boardrow"], "ratings": ["exemplar", "exemplarembedding"]},
    "teams": {"submissions": ["team", "membership", "apitoken", "endpoint"]},
}


def _relabel(apps, backwards: bool) -> None:
    """Content types (and so permissions and admin history) follow their models to the new app."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for new, sources in MOVED.items():
        for old, models_ in sources.items():
            source, target = (new, old) if backwards else (old, new)
            for model in models_:
                if not ContentType.objects.filter(app_label=target, model=model).exists():
                    ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def content_types_follow(apps, schema_editor) -> None:
    _relabel(apps, backwards=False)


def content_types_return(apps, schema_editor) -> None:
    _relabel(apps, backwards=True)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('tasks', '0001_initial'),
        ('teams', '0001_initial'),
        ('submissions', '0012_submission_judge_endpoint'),
        ('leaderboard', '0011_humanrow_scripted'),
        ('ratings', '0005_hidden_item_raters'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Exemplar',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('side', models.CharField(choices=[('prompt', 'prompt'), ('image', 'image')], max_length=6)),
                    ('category', models.CharField(choices=[('OE', 'Open-ended'), ('CO', 'Constrained'), ('IM', 'Imitation')], max_length=2)),
                    ('task_id', models.CharField(help_text='the task it was scored on; never used as calibration for that task', max_length=40)),
                    ('text', models.TextField(blank=True)),
                    ('image', models.ImageField(blank=True, upload_to='exemplars/')),
                    ('scores', models.JSONField(default=dict, help_text='dimension -> score 1..5')),
                    ('notes', models.JSONField(blank=True, default=dict, help_text='dimension -> short rationale')),
                    ('source', models.CharField(help_text='e.g. an imported file, or a rating made on this site', max_length=200)),
                    ('content_sha', models.CharField(help_text='sha256 of text and image: the same content is stored once', max_length=64)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                ],
                options={
                    'db_table': 'ratings_exemplar',
                    'ordering': ['category', 'task_id', 'side'],
                    'constraints': [models.UniqueConstraint(fields=('side', 'category', 'task_id', 'content_sha'), name='unique_exemplar')],
                },
            ),
            migrations.CreateModel(
                name='PromptEntry',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('sample_index', models.PositiveSmallIntegerField(default=0)),
                    ('text', models.TextField()),
                    ('line', models.PositiveIntegerField(default=0, help_text='line in the uploaded file')),
                    ('task', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='entries', to='tasks.task')),
                ],
                options={
                    'db_table': 'submissions_promptentry',
                    'ordering': ['task__category', 'task__task_id', 'sample_index'],
                },
            ),
            migrations.CreateModel(
                name='Render',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('backend', models.CharField(max_length=100)),
                    ('image_index', models.PositiveSmallIntegerField()),
                    ('seed', models.BigIntegerField()),
                    ('config_hash', models.CharField(max_length=64)),
                    ('prompt_sha', models.CharField(max_length=64)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('ok', 'Ok'), ('failed', 'Failed'), ('skipped', 'Skipped'), ('blocked', 'Blocked')], default='pending', max_length=8)),
                    ('image', models.ImageField(blank=True, upload_to='renders/')),
                    ('sha256', models.CharField(blank=True, max_length=64)),
                    ('error', models.TextField(blank=True)),
                    ('note', models.CharField(blank=True, help_text='what the backend did to the prompt, e.g. cut it to what its text encoder reads', max_length=200)),
                    ('rewritten', models.TextField(blank=True, help_text="the prompt as the backend's middleware rewrote it before rendering ('' when it has none)")),
                    ('seconds', models.FloatField(blank=True, null=True)),
                    ('queued_at', models.DateTimeField(default=django.utils.timezone.now, help_text='when its job was last sent')),
                    ('started_at', models.DateTimeField(blank=True, help_text='when a worker last began it; empty: waiting for a worker', null=True)),
                    ('entry', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='renders', to='evaluation.promptentry')),
                    ('reused_from', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='evaluation.render')),
                ],
                options={
                    'db_table': 'submissions_render',
                    'ordering': ['entry_id', 'backend', 'image_index'],
                },
            ),
            migrations.CreateModel(
                name='Submission',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('pack_revision', models.PositiveIntegerField(default=1, help_text="the pack's revision when the prompts came in")),
                    ('prompter', models.CharField(help_text='who or what wrote the prompts, e.g. a model name', max_length=200)),
                    ('condition', models.CharField(blank=True, help_text="e.g. novice or skilled; an endpoint run's condition name (plain, guided…)", max_length=40)),
                    ('origin', models.CharField(default='file', help_text='where the prompts came from: file (an upload) or endpoint', max_length=20)),
                    ('condition_version', models.CharField(blank=True, help_text="an endpoint run's condition version (evaluator/prompters/conditions.py)", max_length=40)),
                    ('prompting', models.JSONField(blank=True, default=dict, help_text="an endpoint run's settings as they were: endpoint, parameters, condition, rounds, budgets")),
                    ('samples', models.PositiveSmallIntegerField(default=1)),
                    ('rounds', models.PositiveSmallIntegerField(default=1, help_text='1 = single-turn; more = feedback rounds')),
                    ('feedback_backend', models.CharField(blank=True, help_text='the backend whose first image is fed back between rounds', max_length=100)),
                    ('is_baseline', models.BooleanField(default=False)),
                    ('baseline_note', models.TextField(blank=True, help_text='provenance of a baseline row')),
                    ('source_name', models.CharField(blank=True, max_length=255)),
                    ('idempotency_key', models.CharField(blank=True, help_text="the API's Idempotency-Key: a retried upload returns this submission", max_length=200)),
                    ('request_fingerprint', models.CharField(blank=True, help_text='sha256 of what was uploaded with that key', max_length=64)),
                    ('status', models.CharField(choices=[('queued', 'Queued'), ('prompting', 'prompting (calling the endpoint)'), ('rendering', 'Rendering'), ('judging', 'Judging'), ('done', 'Done'), ('incomplete', 'incomplete (too many judgements failed)'), ('failed', 'Failed'), ('cancelled', 'Cancelled')], default='queued', max_length=12)),
                    ('error', models.TextField(blank=True)),
                    ('published', models.BooleanField(default=False)),
                    ('withdrawn', models.DateTimeField(blank=True, help_text='when the team last took it off the board (history kept)', null=True)),
                    ('judge_id', models.CharField(blank=True, max_length=200)),
                    ('judge_label', models.CharField(blank=True, max_length=300)),
                    ('judge_version', models.CharField(blank=True, max_length=40)),
                    ('judge_endpoint', models.CharField(blank=True, help_text='the host(s) the judge called, without credentials: staff only, never on a public page', max_length=300)),
                    ('judge_spec', models.JSONField(blank=True, default=dict, help_text="the judge's full spec (models, route, rubric version, parameters) as it scored")),
                    ('backends', models.JSONField(blank=True, default=list, help_text='backend configs used, with version hashes')),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('started', models.DateTimeField(blank=True, null=True)),
                    ('finished', models.DateTimeField(blank=True, null=True)),
                    ('endpoint', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='submissions', to='teams.endpoint')),
                    ('pack', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='submissions', to='tasks.taskpack')),
                    ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='teams.team')),
                ],
                options={
                    'db_table': 'submissions_submission',
                    'ordering': ['-created'],
                },
            ),
            migrations.AddField(
                model_name='promptentry',
                name='submission',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entries', to='evaluation.submission'),
            ),
            migrations.CreateModel(
                name='PromptCall',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('sample_index', models.PositiveSmallIntegerField(default=0)),
                    ('round', models.PositiveSmallIntegerField(default=0)),
                    ('status', models.CharField(choices=[('waiting', "waiting for the previous round's feedback"), ('pending', 'Pending'), ('running', 'Running'), ('ok', 'Ok'), ('failed', 'Failed'), ('refused', 'Refused'), ('skipped', 'skipped (an earlier round ended the trajectory)'), ('cancelled', 'Cancelled')], default='pending', max_length=10)),
                    ('temperature', models.FloatField(blank=True, null=True)),
                    ('seed', models.BigIntegerField(blank=True, null=True)),
                    ('request', models.JSONField(blank=True, default=list, help_text='the messages sent, images replaced by their size and hash')),
                    ('reply', models.TextField(blank=True)),
                    ('text', models.TextField(blank=True, help_text='the prompt taken from the reply')),
                    ('error', models.TextField(blank=True)),
                    ('http_status', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('requests', models.PositiveIntegerField(default=0, help_text='HTTP requests sent, retries included')),
                    ('latency', models.FloatField(blank=True, null=True)),
                    ('prompt_tokens', models.PositiveIntegerField(default=0)),
                    ('completion_tokens', models.PositiveIntegerField(default=0)),
                    ('queued_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('finished_at', models.DateTimeField(blank=True, null=True)),
                    ('feedback_status', models.CharField(blank=True, choices=[('pending', 'Pending'), ('ok', 'Ok'), ('failed', 'Failed'), ('skipped', 'Skipped'), ('blocked', 'Blocked')], help_text="'' when the run has one round", max_length=8)),
                    ('feedback_image', models.ImageField(blank=True, upload_to='feedback/')),
                    ('feedback_score', models.FloatField(blank=True, help_text='IM: similarity to the target; OE/CO: share of image checks met; 0-100', null=True)),
                    ('feedback_details', models.JSONField(blank=True, default=dict)),
                    ('feedback_error', models.TextField(blank=True)),
                    ('task', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='calls', to='tasks.task')),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='calls', to='evaluation.submission')),
                ],
                options={
                    'db_table': 'submissions_promptcall',
                    'ordering': ['submission_id', 'task__category', 'task__task_id', 'sample_index', 'round'],
                },
            ),
            migrations.CreateModel(
                name='Judgement',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('skill', models.CharField(max_length=40)),
                    ('judge_id', models.CharField(max_length=200)),
                    ('judge_version', models.CharField(max_length=40)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('ok', 'Ok'), ('failed', 'Failed'), ('skipped', 'Skipped'), ('blocked', 'Blocked')], default='pending', max_length=8)),
                    ('value', models.FloatField(blank=True, help_text="the skill's headline number, on `scale`; empty unless ok", null=True)),
                    ('scale', models.CharField(blank=True, choices=[('likert_1_5', 'rubric score 1–5'), ('rate_0_1', 'share 0–1'), ('score_0_100', 'score 0–100'), ('distance_0_1', 'distance 0–1 (lower is closer)')], help_text='empty for a gate', max_length=20)),
                    ('scores', models.JSONField(blank=True, default=dict)),
                    ('checklist', models.JSONField(blank=True, default=dict)),
                    ('rationales', models.JSONField(blank=True, default=dict)),
                    ('raw', models.TextField(blank=True)),
                    ('reason', models.TextField(blank=True, help_text="why it failed, was skipped or blocked, in the platform's own words (evaluator.failures)")),
                    ('remote_text', models.TextField(blank=True, help_text="what the judge's endpoint or the exception said, hidden items redacted: staff only")),
                    ('calls', models.PositiveIntegerField(default=0)),
                    ('prompt_tokens', models.PositiveIntegerField(default=0)),
                    ('completion_tokens', models.PositiveIntegerField(default=0)),
                    ('cache_key', models.CharField(blank=True, db_index=True, max_length=64)),
                    ('cached', models.BooleanField(default=False, help_text='result copied from an identical earlier judgement')),
                    ('details', models.JSONField(blank=True, default=dict, help_text='skill extras: ensemble spread, faithfulness requirements…')),
                    ('queued_at', models.DateTimeField(default=django.utils.timezone.now, help_text='when its job was last sent')),
                    ('started_at', models.DateTimeField(blank=True, help_text='when a worker last began it; empty: waiting for a worker', null=True)),
                    ('updated', models.DateTimeField(auto_now=True)),
                    ('entry', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judgements', to='evaluation.promptentry')),
                    ('render', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='judgements', to='evaluation.render')),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judgements', to='evaluation.submission')),
                ],
                options={
                    'db_table': 'submissions_judgement',
                },
            ),
            migrations.CreateModel(
                name='Figure',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('judge_id', models.CharField(max_length=200)),
                    ('judge_version', models.CharField(max_length=40)),
                    ('judge_label', models.CharField(blank=True, max_length=300)),
                    ('scope', models.CharField(max_length=20)),
                    ('key', models.CharField(max_length=100)),
                    ('value', models.FloatField(blank=True, null=True)),
                    ('scale', models.CharField(choices=[('likert_1_5', 'rubric score 1–5'), ('rate_0_1', 'share 0–1'), ('score_0_100', 'score 0–100'), ('distance_0_1', 'distance 0–1 (lower is closer)')], default='score_0_100', max_length=20)),
                    ('n', models.PositiveIntegerField(default=0)),
                    ('failures', models.PositiveIntegerField(default=0)),
                    ('ci_low', models.FloatField(blank=True, null=True)),
                    ('ci_high', models.FloatField(blank=True, null=True)),
                    ('coverage', models.JSONField(blank=True, default=dict, help_text='{scored, planned, skills: {skill: [scored, planned]}}: what it rests on (evaluator.metrics.coverage)')),
                    ('computed', models.DateTimeField(auto_now=True)),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='figures', to='evaluation.submission')),
                ],
                options={
                    'db_table': 'leaderboard_figure',
                    'ordering': ['submission', 'scope', 'key'],
                },
            ),
            migrations.CreateModel(
                name='BoardRow',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('revision', models.PositiveIntegerField()),
                    ('judge_id', models.CharField(max_length=200)),
                    ('judge_version', models.CharField(max_length=40)),
                    ('condition', models.CharField(blank=True, max_length=40)),
                    ('overall', models.FloatField(null=True)),
                    ('score', models.FloatField(help_text="the ranked score (BoardStats: test split or all tasks): the statistics' order", null=True)),
                    ('tasks_covered', models.PositiveIntegerField(default=0)),
                    ('figures', models.JSONField(default=dict, help_text='{overall: figure, category: {key: figure}, backend: {key: figure}}')),
                    ('sort', models.JSONField(default=dict, help_text='sort key -> value: OE, CO, IM, backend:<name>, lc, win_rate, test, dev, gap')),
                    ('stats', models.JSONField(default=dict, help_text="the entry's BoardStats figures, with tied and next_gap")),
                    ('backend_labels', models.JSONField(default=dict)),
                    ('pack', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='board_rows', to='tasks.taskpack')),
                    ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='board_rows', to='evaluation.submission')),
                ],
                options={
                    'db_table': 'leaderboard_boardrow',
                },
            ),
            migrations.CreateModel(
                name='BoardStats',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('revision', models.PositiveIntegerField()),
                    ('judge_id', models.CharField(max_length=200)),
                    ('judge_version', models.CharField(max_length=40)),
                    ('entries', models.JSONField(default=dict, help_text='submission id -> {score, low, high, rank, rank_high, win_rate, lc, dev, test, gap, length, covers, of, missing}')),
                    ('comparisons', models.JSONField(default=list, help_text='neighbour pairs in score order: upper, lower, difference, tasks, p, p_holm, separated')),
                    ('wins', models.JSONField(default=dict, help_text="'a:b' -> [wins, ties, losses] of a against b on common tasks")),
                    ('length', models.JSONField(default=list, help_text='per category: coefficient, interval, n')),
                    ('settings', models.JSONField(default=dict, help_text='seed, alpha, resamples, tie margin, ranked split minimum: what recomputes the same numbers')),
                    ('backends', models.JSONField(default=dict, help_text="the board's backend columns: name -> label")),
                    ('ranked_on', models.JSONField(default=dict, help_text="{split: 'test' or 'all', tasks scored, ranked entries}: what the ranking statistics use")),
                    ('intervals', models.JSONField(default=dict, help_text='{shown, minimum_tasks}: whether the board has enough tasks for intervals and rank ranges')),
                    ('separable', models.JSONField(default=dict, help_text='{possible, best_p_holm, tests}: whether any neighbour test can reach alpha at all')),
                    ('style', models.JSONField(default=dict, help_text='{identified, categories, minimum_dof}: where the length control is fitted')),
                    ('judge_label', models.CharField(blank=True, max_length=300)),
                    ('entry_count', models.PositiveIntegerField(default=0, help_text='published entries scored by this judge')),
                    ('conditions', models.JSONField(default=list, help_text='condition names on the board, for its filter')),
                    ('has_split', models.BooleanField(default=False, help_text='some entry has both a dev and a test score')),
                    ('computed', models.DateTimeField(auto_now=True)),
                    ('pack', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='board_stats', to='tasks.taskpack')),
                ],
                options={
                    'db_table': 'leaderboard_boardstats',
                    'indexes': [models.Index(fields=['pack', 'revision', 'entry_count'], name='board_stats_by_board')],
                    'constraints': [models.UniqueConstraint(fields=('pack', 'revision', 'judge_id', 'judge_version'), name='unique_board_stats')],
                },
            ),
            migrations.CreateModel(
                name='ExemplarEmbedding',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('model', models.CharField(max_length=200)),
                    ('vector', models.JSONField()),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('exemplar', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='embeddings', to='evaluation.exemplar')),
                ],
                options={
                    'db_table': 'ratings_exemplarembedding',
                    'constraints': [models.UniqueConstraint(fields=('exemplar', 'model'), name='unique_exemplar_embedding')],
                },
            ),
            migrations.CreateModel(
                name='HumanRow',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('revision', models.PositiveIntegerField()),
                    ('tier', models.CharField(max_length=8)),
                    ('judge_id', models.CharField(max_length=200)),
                    ('judge_version', models.CharField(max_length=40)),
                    ('judge_label', models.CharField(blank=True, max_length=300)),
                    ('figures', models.JSONField(default=list, help_text='[{scope, key, value, n, failures, ci_low, ci_high, scale}]')),
                    ('tasks', models.JSONField(default=list, help_text='task ids with a human score')),
                    ('participants', models.PositiveIntegerField(default=0)),
                    ('tasks_per_participant', models.FloatField(default=0)),
                    ('protocols', models.JSONField(default=list, help_text='study protocol versions pooled here')),
                    ('studies', models.JSONField(default=list, help_text='study names pooled here')),
                    ('first', models.DateTimeField(blank=True, help_text='first completed participant', null=True)),
                    ('last', models.DateTimeField(blank=True, help_text='last completed participant', null=True)),
                    ('scripted', models.BooleanField(default=False, help_text='pools scripted demo participants (rules, not people) only')),
                    ('computed', models.DateTimeField(auto_now=True)),
                    ('pack', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='human_rows', to='tasks.taskpack')),
                ],
                options={
                    'db_table': 'leaderboard_humanrow',
                    'ordering': ['pack', 'revision', '-scripted', 'tier'],
                    'constraints': [models.UniqueConstraint(fields=('pack', 'revision', 'tier', 'judge_id', 'judge_version', 'scripted'), name='unique_human_row')],
                },
            ),
            migrations.AddIndex(
                model_name='render',
                index=models.Index(fields=['config_hash', 'prompt_sha', 'seed'], name='submissions_config__6ae5e6_idx'),
            ),
            migrations.AddIndex(
                model_name='render',
                index=models.Index(fields=['status', 'entry'], name='render_status_entry'),
            ),
            migrations.AddConstraint(
                model_name='render',
                constraint=models.UniqueConstraint(fields=('entry', 'backend', 'image_index'), name='unique_render'),
            ),
            migrations.AddConstraint(
                model_name='submission',
                constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key', ''), _negated=True), fields=('team', 'idempotency_key'), name='unique_idempotency_key'),
            ),
            migrations.AddConstraint(
                model_name='promptentry',
                constraint=models.UniqueConstraint(fields=('submission', 'task', 'sample_index'), name='unique_entry'),
            ),
            migrations.AddConstraint(
                model_name='promptcall',
                constraint=models.UniqueConstraint(fields=('submission', 'task', 'sample_index', 'round'), name='unique_call'),
            ),
            migrations.AddIndex(
                model_name='judgement',
                index=models.Index(fields=['submission', 'status'], name='judgement_submission_status'),
            ),
            migrations.AddConstraint(
                model_name='judgement',
                constraint=models.UniqueConstraint(condition=models.Q(('render__isnull', True)), fields=('entry', 'skill', 'judge_id', 'judge_version'), name='unique_prompt_judgement'),
            ),
            migrations.AddConstraint(
                model_name='judgement',
                constraint=models.UniqueConstraint(condition=models.Q(('render__isnull', False)), fields=('render', 'skill', 'judge_id', 'judge_version'), name='unique_image_judgement'),
            ),
            migrations.AddConstraint(
                model_name='figure',
                constraint=models.UniqueConstraint(fields=('submission', 'judge_id', 'judge_version', 'scope', 'key'), name='unique_figure'),
            ),
            migrations.AddConstraint(
                model_name='boardrow',
                constraint=models.UniqueConstraint(fields=('submission', 'judge_id', 'judge_version'), name='unique_board_row'),
            ),
    
        ]),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
