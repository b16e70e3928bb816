"""SubmissionScore is now Figure ("score" and "figure" named the same thing), and a figure stores its scale."""

import django.db.models.deletion
from django.db import migrations, models

SCALE_CHOICES = [("likert_1_5", "rubric score 1–5"), ("rate_0_1", "share 0–1"), ("score_0_100", "score 0–100"), ("distance_0_1", "distance 0–1 (lower is closer)")]
# Skill and top-1 figures keep their skill's scale (as declared when this migration was written).
SKILL_SCALES = {
    "prompt_subjective": "likert_1_5", "image_subjective": "likert_1_5", "prompt_objective": "rate_0_1", "image_objective": "rate_0_1",
    "text_rendering": "rate_0_1", "faithfulness": "rate_0_1", "target_similarity": "score_0_100", "color_shift": "distance_0_1",
}  # fmt: skip


def fill_scales(apps, schema_editor):
    Figure = apps.get_model("leaderboard", "Figure")
    for skill, scale in SKILL_SCALES.items():
        Figure.objects.filter(scope__in=["skill", "top1"], key=skill).update(scale=scale)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0001_initial"), ("submissions", "0002_origin_and_judgement_scale")]

    operations = [
        migrations.RemoveConstraint("submissionscore", "unique_score"),
        migrations.RenameModel("SubmissionScore", "Figure"),
        migrations.AlterField(
            "figure", "submission",
            models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="figures", to="submissions.submission"),
        ),
        migrations.AddField("figure", "scale", models.CharField(choices=SCALE_CHOICES, default="score_0_100", max_length=20)),
        migrations.AddConstraint(
            "figure", models.UniqueConstraint(fields=("submission", "judge_id", "judge_version", "scope", "key"), name="unique_figure")
        ),
        migrations.RunPython(fill_scales, migrations.RunPython.noop),
    ]
