from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ratings', '0006_exemplars_move_to_evaluation'),
    ]

    operations = [
        migrations.AddField(
            model_name='expertrating',
            name='scripted',
            field=models.BooleanField(default=False, help_text="a scripted demo rater's (a rule, not a person): its figures on /judge/ are labelled scripted (demo) and never pooled with real people's"),
        ),
    ]
