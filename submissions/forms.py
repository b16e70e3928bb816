from django import forms

from tasks.models import TaskPack

from .models import Team


class TeamForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["name"]


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, initial="api")


class SubmitForm(forms.Form):
    pack = forms.ModelChoiceField(queryset=TaskPack.objects.all(), empty_label=None)
    prompter = forms.CharField(max_length=200, help_text="Who or what wrote the prompts, e.g. a model name.")
    condition = forms.CharField(max_length=40, required=False, help_text="Optional, e.g. novice or skilled.")
    file = forms.FileField(help_text="JSON Lines or CSV with task_id, prompt and optional sample.")
