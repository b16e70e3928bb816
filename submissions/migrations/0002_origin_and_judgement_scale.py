"""Submission.kind is now Submission.origin ("kind" meant three things); a judgement stores its value's scale."""

from django.db import migrations, models

# The scale each skill's value is on, as the registry declared it when this migration was written
# (evaluator.judge.skills); gates have none.
SKILL_SCALES = {
    "prompt_subjective": "likert_1_5", "image_subjective": "likert_1_5",
    "prompt_objective": "rate_0_1", "image_objective": "rate_0_1", "text_rendering": "rate_0_1", "faithfulness": "rate_0_1",
    "target_similarity": "score_0_100", "color_shift": "distance_0_1", "safety_prompt": "", "safety_image": "",
}  # fmt: skip
SCALE_CHOICES = [("likert_1_5", "rubric score 1–5"), ("rate_0_1", "share 0–1"), ("score_0_100", "score 0–100"), ("distance_0_1", "distance 0–1 (lower is closer)")]


def fill_scales(apps, schema_editor):
    Judgement = apps.get_model("submissions", "Judgement")
    for skill, scale in SKILL_SCALES.items():
        Judgement.objects.filter(skill=skill).update(scale=scale)


class Migration(migrations.Migration):
    dependencies = [("submissions", "0001_initial")]

    operations = [
        migrations.RenameField("submission", "kind", "origin"),
        migrations.AlterField(
            "submission", "origin",
            models.CharField(default="file", help_text="where the prompts came from: an uploaded file", max_length=20),
        ),
        migrations.AddField(
            "judgement", "scale",
            models.CharField(blank=True, choices=SCALE_CHOICES, help_text="empty for a gate", max_length=20),
        ),
        migrations.AlterField(
            "judgement", "value",
            models.FloatField(blank=True, help_text="the skill's headline number, on `scale`; empty unless ok", null=True),
        ),
        migrations.RunPython(fill_scales, migrations.RunPython.noop),
    ]
