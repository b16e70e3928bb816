from django import forms

from tasks.models import TaskPack

from .models import Team
from .parsing import text_problem


class EchoSafeForm(forms.Form):
    """Text fields are made safe to show back before anything can echo them: cut to one character past
    their limit (a 70,000-character value must not come back in the error page) and made encodable (a lone
    surrogate, possible with a non-UTF-8 request charset, would break the page). What was wrong with the
    value as sent is still reported on the field, so nothing wrong is accepted."""

    def __init__(self, data=None, *args, **kwargs):
        self.sent_problems: dict[str, str] = {}
        if data is not None:
            data = data.copy()
            for name, field in self.base_fields.items():
                if isinstance(field, forms.CharField) and isinstance(data.get(name), str):
                    value = data[name]
                    if problem := text_problem(value):
                        self.sent_problems[name] = problem
                    data[name] = value.encode("utf-8", "replace").decode("utf-8")[: (field.max_length or 1000) + 1]
        super().__init__(data, *args, **kwargs)

    def clean(self):
        for name, problem in self.sent_problems.items():
            if name not in self.errors:
                self.add_error(name, f"This field {problem}.")
        return super().clean()


class TeamForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["name"]


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, initial="api")


class SubmitForm(EchoSafeForm):
    pack = forms.ModelChoiceField(queryset=TaskPack.objects.all(), empty_label=None)
    prompter = forms.CharField(max_length=200, help_text="Who or what wrote the prompts, e.g. a model name.")
    condition = forms.CharField(max_length=40, required=False, help_text="Optional, e.g. novice or skilled.")
    file = forms.FileField(help_text="JSON Lines or CSV with task_id, prompt and optional sample.")
