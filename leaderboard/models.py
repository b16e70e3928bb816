"""Signed whole-board releases and the keys that signed them (leaderboard/releases.py writes both)."""

from __future__ import annotations

from django.db import models


class SigningKey(models.Model):
    """A public key the site has signed releases with. The private key lives in the file ATELIER_RELEASE_KEY names,
    never here; a key is listed from its first use until a newer key is first used (`retired`), and kept after that so
    older releases still verify."""

    fingerprint = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the raw Ed25519 public key, hex")
    public_key = models.TextField(help_text="PEM (SubjectPublicKeyInfo)")
    created = models.DateTimeField(help_text="when the site began signing with it")
    retired = models.DateTimeField(null=True, blank=True, help_text="when a newer key replaced it")

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return f"ed25519 {self.fingerprint[:16]}…"


class Release(models.Model):
    """One signed release of a board (pack revision) scored by one judge version: the zip is stored under `file`,
    its manifest's SHA-256 is `digest`, and it names the digest of the board's previous release (`previous`).
    A board that changes gets a new release. A release is changed only by a redaction (Redaction): the erasure of
    withdrawn entries' prompts, image links and rationales, when `file` and `size` move to the re-issued zip; its
    digest, manifest and place in the chain never change, and no release is deleted."""

    pack = models.ForeignKey("tasks.TaskPack", on_delete=models.PROTECT, related_name="releases")
    revision = models.PositiveIntegerField()
    judge_id = models.CharField(max_length=200)
    judge_version = models.CharField(max_length=40)
    number = models.PositiveIntegerField(help_text="1 for the board's first release, then one more each time")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of MANIFEST.json")
    previous = models.CharField(max_length=64, blank=True, help_text="the digest of the board's release before this one")
    key = models.ForeignKey(SigningKey, on_delete=models.PROTECT, related_name="releases")
    created = models.DateTimeField()
    file = models.CharField(max_length=300, help_text="the zip's name in the media storage")
    size = models.PositiveBigIntegerField()
    members = models.JSONField(help_text="[{name, sha256, size}] as the manifest lists them")
    seen_version = models.CharField(
        max_length=40, blank=True, help_text="the boards' version (evaluation.boards.boards_version) when this was last found current"
    )
    entries = models.JSONField(
        null=True, blank=True, help_text="the ids of the entries (submissions) it carries; null until read (releases made before 0014)"
    )

    class Meta:
        ordering = ["pack", "revision", "judge_id", "judge_version", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["pack", "revision", "judge_id", "judge_version", "number"], name="unique_release_number"),
            # one release follows each release: two makers racing cannot fork a board's chain
            models.UniqueConstraint(fields=["pack", "revision", "judge_id", "judge_version", "previous"], name="unique_release_previous"),
        ]

    def __str__(self) -> str:
        return f"{self.pack} rev {self.revision} · {self.judge_id} {self.judge_version} · release {self.number}"


class Redaction(models.Model):
    """A release re-issued without withdrawn entries' prompts, rewritten prompts, image links and judge rationales
    (leaderboard/redaction.py): REDACTION.json in the zip, signed by the key in use, says what was removed, when and
    by which key. A release's redactions are cumulative: the latest one's record names every entry removed so far."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="redactions")
    number = models.PositiveIntegerField(help_text="1 for the release's first redaction, then one more each time")
    entries = models.JSONField(help_text="the ids of the entries this redaction removed (earlier ones removed the rest)")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of its REDACTION.json")
    key = models.ForeignKey(SigningKey, on_delete=models.PROTECT, related_name="redactions")
    created = models.DateTimeField()
    files = models.JSONField(help_text="[{name, sha256, size, original}] of each member it changed")
    replaced = models.CharField(
        max_length=300, blank=True, help_text="the zip it replaced, until that is deleted from the media storage ('' once it is)"
    )
    recorded_in = models.ForeignKey(
        Release,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="records",
        help_text="the later release whose manifest names it",
    )

    class Meta:
        ordering = ["release", "number"]
        constraints = [models.UniqueConstraint(fields=["release", "number"], name="unique_redaction_number")]

    def __str__(self) -> str:
        return f"{self.release} · redaction {self.number}"
