from __future__ import annotations

from django.db import models

from evaluator.categories import CATEGORY_NAMES

TAG_GROUPS: dict[str, tuple[str, ...]] = {
    "content": ("Character", "Object", "Environment", "Typography", "Data_Element"),
    "composition": (
        "Portrait_CloseUp",
        "Full_Body_Shot",
        "Schematic_Diagram",
        "Isometric_View",
        "Knolling_Layout",
        "Sequential_Panel",
        "UI_Interface",
    ),
    "style": ("Photorealistic", "3D_Render", "Cel_Shaded", "Vector_Flat", "Traditional_Media"),
    "theme": ("Corporate_Clean", "Cute_Pop", "Retro_Vintage", "Fantasy_Mythic", "SciFi_Cyberpunk", "Horror_Dark", "Abstract_Conceptual"),
}
TAG_GROUP_OF = {tag: group for group, tags in TAG_GROUPS.items() for tag in tags}


# The benchmark's categories (evaluator.categories), as Django choices: Category.OE == "OE".
Category = models.TextChoices("Category", [(code, (code, name)) for code, name in CATEGORY_NAMES.items()])


class Split(models.TextChoices):
    DEV = "dev", "dev (public)"
    TEST = "test", "test (hidden checklists)"


class TaskPack(models.Model):
    name = models.CharField(max_length=100)
    version = models.CharField(max_length=40)
    source = models.CharField(max_length=20, default="own", help_text="own pack format or 'ateliereval' import")
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    license = models.CharField(max_length=200, blank=True)
    revision = models.PositiveIntegerField(default=1, help_text="bumped whenever a task of this pack version changes")
    loaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="unique_pack_version")]
        ordering = ["name", "-loaded_at"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}" + (f" rev {self.revision}" if self.revision > 1 else "")


class Tag(models.Model):
    name = models.CharField(max_length=40, unique=True)
    group = models.CharField(max_length=20)

    class Meta:
        ordering = ["group", "name"]

    def __str__(self) -> str:
        return self.name


class Task(models.Model):
    pack = models.ForeignKey(TaskPack, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.CharField(max_length=40)
    category = models.CharField(max_length=2, choices=Category.choices)
    split = models.CharField(max_length=4, choices=Split.choices, default=Split.DEV)
    title = models.CharField(max_length=300)
    brief = models.TextField()
    constraints = models.JSONField(default=dict, blank=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="tasks")
    # Hidden on the test split: never shown outside the server.
    prompt_checklist = models.JSONField(default=list, blank=True)
    image_checklist = models.JSONField(default=list, blank=True)
    seed_prompt = models.TextField(blank=True)
    target_image = models.ImageField(upload_to="targets/", blank=True)
    target_note = models.CharField(max_length=300, blank=True, help_text="where the target came from")
    target_seed = models.BigIntegerField(null=True, blank=True)
    target_config_hash = models.CharField(max_length=64, blank=True)
    version = models.PositiveIntegerField(default=1)
    content_hash = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pack", "task_id"], name="unique_task_in_pack")]
        ordering = ["pack", "category", "task_id"]

    def __str__(self) -> str:
        return f"{self.pack.name}/{self.task_id}"

    @property
    def is_public(self) -> bool:
        return self.split == Split.DEV


# What a task's version is made of: what prompters and the judge see (tasks.services.task_hash hashes the same, with the
# tag names). A TaskVersion keeps these as they were.
CONTENT_FIELDS = (
    "category",
    "split",
    "title",
    "brief",
    "constraints",
    "prompt_checklist",
    "image_checklist",
    "seed_prompt",
    "target_image",
)


class TaskVersion(models.Model):
    """One version of a task's content, written when it becomes the task's (a load, a reload, an admin edit, a new
    target) and never changed: the Task row holds only the latest, and a submission made at an earlier revision of the
    pack is shown and judged against the version its revision had (tasks.selectors.task_at). The target image is the
    stored file of that version (storage never overwrites a file under its name, so a new target leaves it there)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    revision = models.PositiveIntegerField(help_text="the pack revision from which this is the task's content")
    category = models.CharField(max_length=2, choices=Category.choices)
    split = models.CharField(max_length=4, choices=Split.choices)
    title = models.CharField(max_length=300)
    brief = models.TextField()
    constraints = models.JSONField(default=dict, blank=True)
    tags = models.JSONField(default=list, blank=True, help_text="tag names")
    prompt_checklist = models.JSONField(default=list, blank=True)
    image_checklist = models.JSONField(default=list, blank=True)
    seed_prompt = models.TextField(blank=True)
    target_image = models.ImageField(upload_to="targets/", blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "version"], name="unique_task_version")]

    def __str__(self) -> str:
        return f"{self.task} v{self.version} (from revision {self.revision})"


class PinnedTask(Task):
    """A task as one revision of its pack had it (tasks.selectors.task_at): the row's identity (pk, pack, task id, so
    its references and URLs are the task's) with the content of the version that revision judged. Read-only: saving
    it would write that content over the task's current one."""

    pinned_revision: int

    class Meta:
        proxy = True

    def save(self, *args, **kwargs):
        raise TypeError(f"{self.task_id} as revision {self.pinned_revision} had it is read-only")

    def delete(self, *args, **kwargs):
        raise TypeError(f"{self.task_id} as revision {self.pinned_revision} had it is read-only")


class TargetReference(models.Model):
    """A render of an IM task's hidden seed prompt on one backend config: the c_k reference that scales
    ArtWhisperer's CLIP score per target (c_k = 100 / unclipped score of this render against the target)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="references")
    backend = models.CharField(max_length=100)
    config_hash = models.CharField(max_length=64)
    seed = models.BigIntegerField()
    image = models.ImageField(upload_to="references/")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "config_hash"], name="unique_reference")]


class PredictedDifficulty(models.Model):
    """A difficulty predictor's score for one prompt text (evaluator.difficulty: PQPP's generative score, −1..2,
    predicted before any image is made), keyed by the predictor's version and the text's sha256: one row serves
    every entry, call and task brief with that text, and a retrained predictor writes rows of its own."""

    predictor = models.CharField(max_length=100, help_text="the predictor's version (its weights' hashes)")
    text_sha = models.CharField(max_length=64)
    score = models.FloatField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "predicted difficulties"
        constraints = [models.UniqueConstraint(fields=["predictor", "text_sha"], name="unique_predicted_difficulty")]

    def __str__(self) -> str:
        return f"{self.score:.2f} by {self.predictor}"
