"""The prompter card form: the same rules for the team page, the API and the CLI (which goes through the API)."""

from __future__ import annotations

from django import forms
from django.core.validators import URLValidator

from .models import Prompter
from .services import parameters_label, parameters_parse

HTTP_URL = URLValidator(schemes=["http", "https"])


class PrompterForm(forms.ModelForm):
    paper_url = forms.URLField(required=False, max_length=500, assume_scheme="https", validators=[HTTP_URL], label="Paper URL")
    code_url = forms.URLField(required=False, max_length=500, assume_scheme="https", validators=[HTTP_URL], label="Code URL")
    parameters = forms.CharField(
        required=False, max_length=20, help_text="optional: a count with its unit, such as 7B, 350M or 1.5T (B = billion)"
    )

    class Meta:
        model = Prompter
        fields = ["name", "kind", "family", "weights", "parameters", "paper_url", "code_url", "licence", "description", "contact"]
        labels = {"weights": "Weights", "family": "Model family"}
        widgets = {"description": forms.Textarea(attrs={"rows": 3, "maxlength": 600})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.parameters and not self.is_bound:
            self.initial["parameters"] = parameters_label(self.instance.parameters)
        self.fields["kind"].help_text = "what writes the prompts; leave blank only if you cannot say"
        self.fields["contact"].help_text = "an address for questions about this entry: shown to the site's staff only"

    def clean_parameters(self):
        try:
            return parameters_parse(self.cleaned_data.get("parameters"))
        except ValueError as exc:
            raise forms.ValidationError(str(exc).removeprefix("parameters: ")) from exc

    def clean_description(self):
        text = self.cleaned_data.get("description", "")
        if "\x00" in text:
            raise forms.ValidationError("no NUL characters")
        return text.strip()

    def values(self) -> dict:
        """The cleaned values, for teams.services.card_save (which saves; this form never does)."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields if name in self.cleaned_data}
