"""Foreign keys follow the models that moved (state only; the columns stay)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0001_initial'),
        ('studies', '0002_participant_scripted'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='participant',
                name='submission',
                field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='participant', to='evaluation.submission'),
            ),
            migrations.AlterField(
                model_name='study',
                name='team',
                field=models.OneToOneField(help_text="owns the participants' submissions (no members)", on_delete=django.db.models.deletion.PROTECT, related_name='study', to='teams.team'),
            ),
    
        ]),
    ]
