"""Every model of this app moved to teams/ or evaluation/ (state only; the tables stay). The app keeps its history."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0012_models_move_to_evaluation'),
        ('ratings', '0006_exemplars_move_to_evaluation'),
        ('studies', '0003_references_follow_the_move'),
        ('submissions', '0012_submission_judge_endpoint'),
        ('evaluation', '0001_initial'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='endpoint',
                name='team',
            ),
            migrations.RemoveField(
                model_name='submission',
                name='endpoint',
            ),
            migrations.RemoveField(
                model_name='judgement',
                name='entry',
            ),
            migrations.RemoveField(
                model_name='judgement',
                name='render',
            ),
            migrations.RemoveField(
                model_name='judgement',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='membership',
                name='team',
            ),
            migrations.RemoveField(
                model_name='membership',
                name='user',
            ),
            migrations.RemoveField(
                model_name='team',
                name='members',
            ),
            migrations.RemoveField(
                model_name='promptcall',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='promptcall',
                name='task',
            ),
            migrations.RemoveField(
                model_name='promptentry',
                name='submission',
            ),
            migrations.RemoveField(
                model_name='promptentry',
                name='task',
            ),
            migrations.RemoveField(
                model_name='render',
                name='entry',
            ),
            migrations.RemoveField(
                model_name='render',
                name='reused_from',
            ),
            migrations.RemoveField(
                model_name='submission',
                name='pack',
            ),
            migrations.RemoveField(
                model_name='submission',
                name='team',
            ),
            migrations.DeleteModel(
                name='ApiToken',
            ),
            migrations.DeleteModel(
                name='Endpoint',
            ),
            migrations.DeleteModel(
                name='Judgement',
            ),
            migrations.DeleteModel(
                name='Membership',
            ),
            migrations.DeleteModel(
                name='PromptCall',
            ),
            migrations.DeleteModel(
                name='PromptEntry',
            ),
            migrations.DeleteModel(
                name='Render',
            ),
            migrations.DeleteModel(
                name='Submission',
            ),
            migrations.DeleteModel(
                name='Team',
            ),
    
        ]),
    ]
