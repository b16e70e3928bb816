from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.text import slugify

from . import protocol
from .models import Assignment, Invitation, Participant, Study
from .services import study_team


class StudyForm(forms.ModelForm):
    class Meta:
        model = Study
        exclude = ("team", "protocol_version")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.instance.pk:  # a new study starts from the shipped protocol files
            for name, value in protocol.defaults().items():
                self.initial.setdefault(name, value if name != "modules" else {c: m for c, m in value.items() if c != "about"})

    def clean(self):
        data = super().clean()
        given = {
            name: data.get(name) if name in self.fields else getattr(self.instance, name)
            for name in ("questionnaire", "tier_rule", "modules")
        }
        try:
            protocol.check(given["questionnaire"] or {}, given["tier_rule"] or {}, given["modules"] or {})
        except protocol.ProtocolError as exc:
            raise ValidationError(str(exc)) from None
        return data


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    form = StudyForm
    list_display = ("name", "pack", "split", "rounds", "per_category", "retry_attempts", "protocol_version", "is_open", "created")
    readonly_fields = ("protocol_version",)
    # What a participant is shown or scored by (the protocol version covers it): editable until the first participant
    # opens a link, then frozen, so every participant of a study ran one protocol version (a change is a new study).
    FROZEN = (
        "pack",
        "split",
        "per_category",
        "rounds",
        "retry_attempts",
        "retry_backend",
        "consent_text",
        "questionnaire",
        "tier_rule",
        "modules",
    )

    def get_readonly_fields(self, request, obj=None):
        started = obj is not None and obj.participants.exists()
        return (*self.readonly_fields, *(self.FROZEN if started else ()))

    def save_model(self, request, obj, form, change):
        """The protocol version follows what participants see; a new study gets its own (member-less) team."""
        design = [obj.pack_id, obj.split, obj.per_category, obj.rounds, obj.retry_attempts, obj.retry_backend]
        obj.protocol_version = protocol.version(
            {"consent_text": obj.consent_text, "questionnaire": obj.questionnaire, "tier_rule": obj.tier_rule, "modules": obj.modules},
            design,
        )
        if not change:
            obj.slug = obj.slug or slugify(obj.name)[:90]
            obj.team = study_team(obj.name, obj.slug)
        super().save_model(request, obj, form, change)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Links are made on the study's staff page or by `manage.py study_create`, which show each once: only a hash of
    its token is stored, so none can be shown (or typed in) here."""

    list_display = ("study", "prefix", "note", "expires", "created")
    list_filter = ("study",)
    readonly_fields = ("digest", "prefix")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("code", "study", "tier", "points", "consented", "completed", "withdrawn")
    list_filter = ("study", "tier")
    readonly_fields = ("invitation", "submission")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("participant", "position", "round", "task", "submitted", "seconds")
    list_filter = ("participant__study",)
