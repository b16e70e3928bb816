from django import forms
from django.conf import settings

from tasks.models import TaskPack
from teams.models import Team

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


def judge_by_batch_field() -> forms.BooleanField:
    """The team's choice of judge route, offered where the deployer asks (ATELIER_JUDGE_BATCH=ask)."""
    return forms.BooleanField(
        required=False,
        label="Judge by batch: cheaper for the site, results within 24 h",
        help_text="The judge's requests go to its provider's batch API, which bills them at about half price but answers "
        "within 24 hours, not minutes: the scores come later. Unticked: judged as the images come in.",
    )


def offer_judge_route(form: forms.Form) -> None:
    """The page's tick box where the deployer asks; a form that declares its own field (the API's) keeps it."""
    if settings.ATELIER_JUDGE_BATCH == "ask" and "judge_by_batch" not in form.fields:
        form.fields["judge_by_batch"] = judge_by_batch_field()


class JudgeRouteField(forms.NullBooleanField):
    """The API's judge_by_batch: true or false (JSON booleans, or the words as JSON spells them in form fields), or left
    out (None: the site's route). Anything else (1, yes, True) is refused naming the field, never read as a choice; under
    ATELIER_JUDGE_BATCH=off or all, a value that contradicts the site's route is refused by the service
    (submissions.services.judge_route_for)."""

    widget = forms.TextInput  # the value as sent (NullBooleanSelect would read an unknown word as "left out")
    CHOSEN = {"true": True, "false": False}

    def to_python(self, value):
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value in self.CHOSEN:
            return self.CHOSEN[value]
        raise forms.ValidationError("Send true or false (as JSON spells them), or leave the field out.", code="invalid")


def api_judge_route_field() -> JudgeRouteField:
    return JudgeRouteField(
        required=False,
        help_text="true: judge by the provider's batch API (cheaper, scores within 24 h); false: synchronously. Left out: "
        "synchronous, or by batch where the site judges every submission so. Refused (400) where it contradicts the site's "
        "only route (ATELIER_JUDGE_BATCH off or all).",
    )


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

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Chosen from the start: the newest pack (the only one, on most sites), as the API's default is.
        self.fields["pack"].initial = TaskPack.objects.order_by("-loaded_at").values_list("pk", flat=True).first()
        offer_judge_route(self)


# --- endpoint prompters ------------------------------------------------------------------------------


def refusal_field(message: str, fields) -> str | None:
    """The form field a service refusal names ('base URL: …' → base_url), or None for a message about the whole form."""
    prefix, sep, _ = message.partition(": ")
    name = prefix.strip().lower().replace(" ", "_")
    return name if sep and name in fields else None


def add_refusal(form: forms.Form, message: str) -> None:
    form.add_error(refusal_field(message, form.fields), message)


def _condition_choices() -> list[tuple[str, str]]:
    from evaluation.runtime import conditions

    return [(name, f"{c.label}: {c.description}" if c.description else c.label) for name, c in conditions().items()]


def _backend_choices() -> list[tuple[str, str]]:
    from evaluation.runtime import backend_configs

    return [("", "(none: single-turn)")] + [(name, f"{name}: {c.label}" if c.label else name) for name, c in backend_configs().items()]


class EndpointForm(EchoSafeForm):
    name = forms.CharField(max_length=100)
    base_url = forms.CharField(max_length=500, label="Base URL", help_text="OpenAI-compatible, e.g. https://api.example.com/v1")
    model = forms.CharField(max_length=200)
    api_key = forms.CharField(
        max_length=500,
        required=False,
        label="API key",
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted; never shown again. Leave empty for an endpoint without a key.",
    )
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    top_p = forms.FloatField(required=False, min_value=0, max_value=1)
    max_tokens = forms.IntegerField(required=False, min_value=1)
    seed = forms.IntegerField(required=False, help_text="Sent where the server accepts one; sample k sends seed + k.")
    max_in_flight = forms.IntegerField(required=False, min_value=1, initial=4, help_text="Calls in flight at once.")

    def params(self) -> dict:
        """The keyword arguments of services.endpoint_create."""
        return dict(self.cleaned_data)


class EndpointTestForm(forms.Form):
    pack = forms.ModelChoiceField(queryset=TaskPack.objects.all(), empty_label=None)
    condition = forms.ChoiceField(choices=_condition_choices, initial="plain")


class RunForm(EchoSafeForm):
    pack = forms.ModelChoiceField(queryset=TaskPack.objects.all(), empty_label=None)
    condition = forms.ChoiceField(choices=_condition_choices, initial="plain")
    samples = forms.IntegerField(min_value=1, initial=1, help_text="Prompts per task.")
    temperatures = forms.CharField(
        max_length=500, required=False, help_text="Optional: comma-separated, one per sample (e.g. 0.2, 0.7); default: the endpoint's."
    )
    rounds = forms.IntegerField(
        min_value=1, initial=1, help_text="1 = single-turn; more = the prompter sees its image and a score, and tries again."
    )
    feedback_backend = forms.ChoiceField(
        choices=_backend_choices, required=False, help_text="Required when rounds > 1: the backend whose first image is fed back."
    )
    call_budget = forms.IntegerField(required=False, min_value=1, help_text="Most HTTP requests for the run (default: the site's limit).")
    token_budget = forms.IntegerField(required=False, min_value=1, help_text="Most prompt + completion tokens (optional).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        offer_judge_route(self)

    def clean_temperatures(self) -> list[float]:
        raw = self.cleaned_data["temperatures"]
        try:
            return [float(part) for part in raw.split(",") if part.strip()]
        except ValueError:
            raise forms.ValidationError("Comma-separated numbers, e.g. 0.2, 0.7.") from None

    def clean(self):
        cleaned = super().clean()
        if (cleaned.get("rounds") or 1) > 1 and not cleaned.get("feedback_backend"):
            self.add_error("feedback_backend", "Choose a feedback backend for more than one round.")
        return cleaned

    def run_kwargs(self) -> dict:
        """The keyword arguments of services.endpoint_run_create (pack included)."""
        return dict(self.cleaned_data)
