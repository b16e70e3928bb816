"""JSON API for teams: submit a prompt file, or register a prompter endpoint and run it, and follow the progress,
with a per-team bearer token."""

from __future__ import annotations

import json
from datetime import datetime
from functools import wraps
from itertools import islice
from urllib.parse import urlparse

from django import forms
from django.conf import settings
from django.db import IntegrityError
from django.db.models import Max, QuerySet
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from pydantic import ValidationError

from evaluation.models import Origin, Submission
from evaluation.runtime import conditions
from evaluation.selectors import (
    pack_coverage,
    submission_cost,
    submission_eta,
    submission_figures,
    submission_judge_cost,
    submission_progress,
)
from evaluation.trajectories import call_log_rows, prompting_progress
from evaluation.units import submission_cancel
from evaluation.workqueue import QueueUnavailable
from evaluator.metrics.coverage import FULL, WITHHELD
from evaluator.metrics.scopes import Scope
from tasks.models import TaskPack
from teams import ratelimit
from teams.forms import PrompterForm
from teams.models import Endpoint, Prompter, Team
from teams.schemas import CardChange, CardNew, PrompterHistory, PrompterVersion, refusal
from teams.schemas import Prompter as CardAnswer
from teams.services import CardRefused, card_save, parameters_label

from . import schemas as answers
from . import services
from .forms import EchoSafeForm, EndpointForm, RunForm, api_judge_route_field, refusal_field
from .parsing import PromptFileError
from .schemas import CallsQuery, Idempotency, headers
from .views import shown_test_call

RETRY_SECONDS = 30
REALM = "AtelierEval API"


PACK_HELP = "name or name@version; default: the newest pack"


class ApiSubmitForm(EchoSafeForm):
    """The same field rules as the web form (lengths, no NUL characters), for multipart API uploads; the OpenAPI
    document's description of the upload is read from these fields (atelier/openapi.py)."""

    file = forms.FileField()
    prompter = forms.CharField(max_length=200)
    condition = forms.CharField(max_length=40, required=False)
    pack = forms.CharField(max_length=141, required=False, help_text=PACK_HELP)
    judge_by_batch = api_judge_route_field()


def _cap_reached(exc: services.CapReached) -> JsonResponse:
    """The daily cap, on every route that creates a submission: 429 with when to try again."""
    response = JsonResponse({"error": str(exc)}, status=429)
    if exc.retry_after:
        response["Retry-After"] = str(exc.retry_after)
    return response


def idempotency_key(request: HttpRequest) -> str | JsonResponse:
    """The Idempotency-Key header as submissions.schemas.Idempotency declares it, or the 422 refusing it (a longer
    key than the stored one is refused, never cut: cutting could merge two)."""
    try:
        return headers(Idempotency, request).key
    except ValidationError as exc:
        error, field = refusal(exc, "header")
        return JsonResponse({"error": error, "field": field}, status=422)


def _queue_down() -> JsonResponse:
    return JsonResponse(
        {"error": "the work queue is unavailable right now; nothing was stored. Retry later (send an Idempotency-Key to retry safely)."},
        status=503,
        headers={"Retry-After": str(RETRY_SECONDS)},
    )


def token_required(view):
    """A live token passes from any address; a wrong one is counted, and refused with 429 once its address has sent
    too many; a request without one is refused with 401 and never counted (teams/ratelimit.py's policy)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        token = ratelimit.bearer(request)
        row = services.token_row(token) if token else None
        if row is None and token and ratelimit.credential_refused(request, "token-failures"):
            window = settings.ATELIER_TOKEN_FAILURE_WINDOW
            return JsonResponse(
                {"error": f"invalid token; this address sent too many, so its invalid tokens are refused for up to {window} s"},
                status=429,
                headers={"Retry-After": str(window)},
            )
        if row is None:
            return _unauthorized(bool(token))
        request.team, request.api_token = row.team, row
        return view(request, *args, **kwargs)

    return wrapper


def _unauthorized(presented: bool) -> JsonResponse:
    """401 with the challenge RFC 6750 asks for: the realm, and error="invalid_token" only when a token was presented
    (a request with none gets no error code, section 3.1)."""
    challenge = f'Bearer realm="{REALM}"' + (
        ', error="invalid_token", error_description="unknown, revoked or mistyped token"' if presented else ""
    )
    response = JsonResponse({"error": "missing or invalid token: send 'Authorization: Bearer <token>'"}, status=401)
    response["WWW-Authenticate"] = challenge
    return response


def _pack(name_at_version: str) -> TaskPack | None:
    name, _, version = name_at_version.partition("@")
    packs = TaskPack.objects.order_by("-loaded_at")
    return (packs.filter(name=name, **({"version": version} if version else {})) if name else packs).first()


@csrf_exempt
@require_POST
@token_required
def submit(request: HttpRequest) -> JsonResponse:
    form = ApiSubmitForm(request.POST, request.FILES)
    if not form.is_valid():
        return JsonResponse(
            {
                "error": "send multipart fields 'file' and 'prompter' (and optionally 'pack', 'condition', 'judge_by_batch')",
                "fields": form.errors,
            },
            status=400,
        )
    pack = _pack(form.cleaned_data["pack"])
    if pack is None:
        return JsonResponse({"error": f"no pack {form.cleaned_data['pack']!r}", "fields": {"pack": ["no such pack"]}}, status=400)
    upload, limit = form.cleaned_data["file"], services.upload_limits().max_bytes
    if upload.size > limit:  # the declared 413, before a byte is parsed (parsing would refuse it with a 400)
        return JsonResponse({"error": f"the file is {upload.size:,} bytes; the limit is {limit:,}", "field": "file"}, status=413)
    key = idempotency_key(request)
    if isinstance(key, JsonResponse):
        return key
    try:
        submission = services.submission_create(
            team=request.team,
            pack=pack,
            prompter=form.cleaned_data["prompter"],
            condition=form.cleaned_data["condition"],
            filename=upload.name,
            data=upload.read(limit + 1),
            idempotency_key=key,
            judge_by_batch=form.cleaned_data["judge_by_batch"],
        )
    except services.JudgeRouteRefused as exc:
        return _bad(str(exc), "judge_by_batch")
    except PromptFileError as exc:
        return JsonResponse(
            {
                "error": "the prompt file was rejected; nothing was stored",
                "file": exc.filename,
                "errors": exc.errors,
                "problems": exc.total,
            },
            status=400,
        )
    except services.IdempotencyConflict as exc:
        return JsonResponse({"error": str(exc)}, status=422)
    except services.CapReached as exc:
        return _cap_reached(exc)
    except QueueUnavailable:
        return _queue_down()
    submission.refresh_from_db()  # in-process jobs may have run already: answer with the state as it is
    return JsonResponse(_status(request, submission).answer(), status=201)


@require_safe
@token_required
def status(request: HttpRequest, submission_id: int) -> JsonResponse:
    submission = get_object_or_404(Submission, pk=submission_id, team=request.team)
    return JsonResponse(_status(request, submission).answer())


def _status(request: HttpRequest, submission: Submission) -> answers.Submission:
    figures = submission_figures(submission)  # scope -> [Figure]
    return answers.Submission(
        id=submission.pk,
        status=submission.status,
        error=submission.error,
        pack=str(submission.pack),
        status_url=request.build_absolute_uri(reverse("api-status", args=[submission.pk])),
        page_url=request.build_absolute_uri(reverse("submission", args=[submission.pk])),
        progress=(progress := submission_progress(submission)),
        eta=submission_eta(submission, progress),
        judge=submission.judge_label,
        judge_version=submission.judge_version,
        judge_route=submission.judge_route,
        cost=submission_cost(submission),
        judge_cost=submission_judge_cost(submission),
        figures={f"{f.scope}:{f.key}": _figure(f) for group in figures.values() for f in group},
        prompter_card=submission.card_id,
        origin=submission.origin,
        condition=submission.condition,
        condition_version=submission.condition_version,
        warnings=[c["warning"]] if (c := pack_coverage(submission)) else [],
        **({"prompting": _jsonable(prompting_progress(submission))} if submission.origin == Origin.ENDPOINT else {}),
    )


def _figure(figure) -> answers.Figure:
    """A figure with what it rests on: a withheld one has no value; a partial one says so (evaluator.metrics.coverage).
    Its 95 % interval (`low`, `high`, on the figure's own scale) as stored, or `interval_note` saying why there is none."""
    covered = {"scored": figure.coverage["scored"], "planned": figure.coverage["planned"]} if figure.coverage else None
    withheld = figure.standing == WITHHELD
    note = _interval_note(figure, withheld)
    return answers.Figure(
        value=None if withheld else figure.value,
        scale=figure.scale,
        low=None if note else figure.ci_low,
        high=None if note else figure.ci_high,
        interval_note=note,
        partial=figure.standing != FULL,
        withheld=withheld,
        coverage=covered,
    )


NO_INTERVAL_SCOPES = (Scope.PART, Scope.CATEGORY_BACKEND, Scope.TASK)  # evaluator.metrics.aggregate gives these none


def _interval_note(figure, withheld: bool) -> str | None:
    """Why a figure has no interval, in the API's words; None when it has one. evaluator.metrics.aggregate gives an interval
    to every overall, category, backend, skill and top-1 figure with at least one scored task, from one task on."""
    if withheld:
        return "no interval: withheld, as its value is (too many of its planned units are missing)"
    if figure.ci_low is not None and figure.ci_high is not None:
        return None
    if figure.scope in NO_INTERVAL_SCOPES:
        return "no interval: none is computed for this kind of figure"
    if figure.value is None or not figure.n:
        return "no interval: none of its tasks has a score"
    return "no interval: computed by an older version of the scoring, which gave none here (a rescore adds one)"


def _jsonable(progress: dict | None) -> dict | None:
    return None if progress is None else {k: v.isoformat() if isinstance(v, datetime) else v for k, v in progress.items()}


# --- endpoint prompters ------------------------------------------------------------------------------

CALLS_PAGE = 1000


class ApiRunForm(RunForm):
    """RunForm with the pack named as in the upload API (name or name@version; default: the newest pack), and the
    judge route as the upload takes it (whatever ATELIER_JUDGE_BATCH says: a contradicting choice is refused)."""

    pack = forms.CharField(max_length=141, required=False, help_text=PACK_HELP)
    judge_by_batch = api_judge_route_field()


RUN_DEFAULTS = {"condition": "plain", "samples": 1, "rounds": 1}  # what an API run leaves out (the form requires them)


class ApiTestForm(forms.Form):
    """A test call's fields: the pack as in the upload API; the condition, checked against the site's (400 naming it)."""

    pack = forms.CharField(max_length=141, required=False, help_text=PACK_HELP)
    condition = forms.CharField(max_length=40, required=False, help_text="default: plain")


def _fields(request: HttpRequest) -> dict | None:
    """The request's fields, from a JSON object body or form fields (None when the JSON is not an object)."""
    if request.content_type != "application/json":
        return request.POST.dict()
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _bad(error: str, field: str | None, **extra) -> JsonResponse:
    return JsonResponse({"error": error, "field": field, **extra}, status=400)


def _invalid(form: forms.Form) -> JsonResponse:
    field, errors = next(iter(form.errors.items()))
    return _bad(f"{field}: {errors[0]}", None if field == "__all__" else field, fields=form.errors)


def _refused(exc: services.EndpointRefused, form: forms.Form) -> JsonResponse:
    return _bad(str(exc), refusal_field(str(exc), form.fields))


def _endpoint(request: HttpRequest, endpoint: Endpoint) -> dict:
    """An endpoint as the API shows it: never the key, only whether one is set."""
    return answers.Endpoint(
        id=endpoint.pk,
        name=endpoint.name,
        model=endpoint.model,
        host=urlparse(endpoint.base_url).netloc,
        has_key=endpoint.has_key,
        parameters=endpoint.parameters(),
        max_in_flight=endpoint.max_in_flight,
        archived=endpoint.archived,
        runs_url=request.build_absolute_uri(reverse("api-endpoint-runs", args=[endpoint.pk])),
    ).answer()


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
@token_required
def endpoints(request: HttpRequest) -> JsonResponse:
    """GET (or HEAD): the team's endpoints. POST (JSON or form fields as on the page): register one."""
    if request.method != "POST":
        return JsonResponse({"endpoints": [_endpoint(request, e) for e in request.team.endpoints.all()]})
    data = _fields(request)
    if data is None:
        return _bad("send a JSON object (or form fields)", None)
    form = EndpointForm(data)
    if not form.is_valid():
        return _invalid(form)
    try:
        endpoint = services.endpoint_create(team=request.team, **form.params())
    except services.EndpointRefused as exc:
        return _refused(exc, form)
    return JsonResponse(_endpoint(request, endpoint), status=201)


@csrf_exempt
@require_POST
@token_required
def endpoint_test(request: HttpRequest, endpoint_id: int) -> JsonResponse:
    """One call, as round 1 of a run would make it, on the pack's first public task; nothing is stored."""
    endpoint = get_object_or_404(Endpoint, pk=endpoint_id, team=request.team)
    data = _fields(request)
    if data is None:
        return _bad("send a JSON object (or form fields)", None)
    form = ApiTestForm(data)
    if not form.is_valid():
        return _invalid(form)
    pack, condition = _pack(form.cleaned_data["pack"]), form.cleaned_data["condition"] or "plain"
    if pack is None:
        return _bad(f"pack: no pack {form.cleaned_data['pack']!r}", "pack")
    if condition not in conditions():
        return _bad(f"condition: unknown condition {condition!r}; available: {', '.join(conditions())}", "condition")
    try:
        test = services.endpoint_test_call(endpoint=endpoint, pack=pack, condition=condition)
    except services.EndpointRefused as exc:
        return _bad(str(exc), refusal_field(str(exc), ("pack", "condition")))
    result = shown_test_call(test)
    del result["request_json"]
    return JsonResponse(result)


@csrf_exempt
@require_POST
@token_required
def endpoint_runs(request: HttpRequest, endpoint_id: int) -> JsonResponse:
    """Start a run (fields as the page's run form; Idempotency-Key makes a retry return the same submission)."""
    endpoint = get_object_or_404(Endpoint, pk=endpoint_id, team=request.team)
    data = _fields(request)
    if data is None:
        return _bad("send a JSON object (or form fields)", None)
    if isinstance(data.get("temperatures"), list):
        data["temperatures"] = ",".join(map(str, data["temperatures"]))
    form = ApiRunForm({**RUN_DEFAULTS, **data})
    if not form.is_valid():
        return _invalid(form)
    kwargs = form.run_kwargs()
    kwargs["pack"] = _pack(kwargs["pack"])
    if kwargs["pack"] is None:
        return _bad(f"pack: no pack {form.cleaned_data['pack']!r}", "pack")
    key = idempotency_key(request)
    if isinstance(key, JsonResponse):
        return key
    try:
        submission = services.endpoint_run_create(team=request.team, endpoint=endpoint, idempotency_key=key, **kwargs)
    except services.EndpointRefused as exc:
        return _refused(exc, form)
    except services.CapReached as exc:
        return _cap_reached(exc)
    except services.IdempotencyConflict as exc:
        return JsonResponse({"error": str(exc)}, status=422)
    except QueueUnavailable:
        return _queue_down()
    return JsonResponse(_status(request, submission).answer(), status=202)


@require_safe
@token_required
def calls(request: HttpRequest, submission_id: int) -> JsonResponse:
    """The run's call log, CALLS_PAGE calls at a time (?offset=N): request messages with images elided, no key."""
    submission = get_object_or_404(Submission, pk=submission_id, team=request.team)
    try:
        offset = CallsQuery.model_validate(request.GET.dict()).offset
    except ValidationError as exc:
        return _bad(*refusal(exc, "query parameter"))
    rows = list(islice(call_log_rows(submission), offset, offset + CALLS_PAGE))
    more = len(rows) == CALLS_PAGE and submission.calls.count() > offset + CALLS_PAGE
    page = answers.Calls(id=submission.pk, offset=offset, next_offset=offset + CALLS_PAGE if more else None, calls=rows)
    return JsonResponse(page.answer())


@csrf_exempt
@require_POST
@token_required
def cancel(request: HttpRequest, submission_id: int) -> JsonResponse:
    """Stop a run that is under way (409 when it has already ended)."""
    submission = get_object_or_404(Submission, pk=submission_id, team=request.team)
    cancelled = submission_cancel(submission.pk, f"cancelled through the API by team {request.team.name}")
    submission.refresh_from_db()
    return JsonResponse({"id": submission.pk, "cancelled": cancelled, "status": submission.status}, status=200 if cancelled else 409)


# --- prompter cards ------------------------------------------------------------------------------


def _cards(team: Team) -> QuerySet[Prompter]:
    """The team's cards, each with its latest version number (`version`)."""
    return team.prompters.annotate(version=Max("versions__number"))


def _card(request: HttpRequest, card: Prompter) -> dict:
    """A card as its own team sees it: every field, the contact included (card from _cards())."""
    return CardAnswer(
        id=card.pk,
        **card.values(),
        parameters_label=parameters_label(card.parameters),
        described=card.described,
        version=card.version,
        created=card.created.isoformat(),
        updated=card.updated.isoformat(),
        versions_url=request.build_absolute_uri(reverse("api-prompter-versions", args=[card.pk])),
    ).answer()


def _json_object(request: HttpRequest) -> dict | None:
    """The request's JSON object body; None when the body is not JSON or not an object."""
    if request.content_type != "application/json":
        return None
    try:
        data = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _card_input(data: dict | None, declared: type[CardChange]) -> tuple[dict, JsonResponse | None]:
    """The given fields as PrompterForm reads them, or the 400 refusing them: stricter than a form post, as the
    declaration (teams.schemas.CardNew, CardChange: what the OpenAPI document prints) says."""
    if data is None:
        return {}, _bad("send a JSON object of card fields (Content-Type: application/json)", None)
    try:
        return declared.model_validate(data).given(), None
    except ValidationError as exc:
        return {}, _bad(*refusal(exc, "field", declared))


def _card_saved(request: HttpRequest, card: Prompter | None, given: dict) -> JsonResponse:
    """Check the card as it would be after the change (PrompterForm), then save the given fields only (a version)."""
    current = {name: "" if value is None else str(value) for name, value in card.values().items()} if card else {}
    form = PrompterForm({**current, **given}, instance=card)
    if not form.is_valid():
        return _invalid(form)
    values = {name: value for name, value in form.values().items() if name in given}
    try:
        saved, _ = card_save(team=request.team, user=None, token=request.api_token, values=values, card=card)
    except CardRefused as exc:
        other = Prompter.objects.filter(team=request.team, name=values.get("name")).values_list("pk", flat=True).first()
        return JsonResponse({"error": f"{exc} (id {other}: change that one instead)", "field": "name", "id": other}, status=409)
    except IntegrityError:  # the same name saved by a concurrent request between card_save's check and its save
        return JsonResponse(
            {"error": "the card was changed by another request at the same time; nothing was saved", "field": "name"}, status=409
        )
    return JsonResponse(_card(request, _cards(request.team).get(pk=saved.pk)), status=200 if card else 201)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
@token_required
def prompters(request: HttpRequest) -> JsonResponse:
    """GET: the team's prompter cards. POST (a JSON object): describe a new prompter; `name` is required."""
    if request.method != "POST":
        return JsonResponse({"prompters": [_card(request, card) for card in _cards(request.team)]})
    given, refused = _card_input(_json_object(request), CardNew)
    return refused or _card_saved(request, None, given)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "PATCH"])
@token_required
def prompter(request: HttpRequest, prompter_id: int) -> JsonResponse:
    """GET: one card. PATCH (a JSON object): change the fields given, and only those; the result is checked whole."""
    card = get_object_or_404(_cards(request.team), pk=prompter_id)
    if request.method != "PATCH":
        return JsonResponse(_card(request, card))
    given, refused = _card_input(_json_object(request), CardChange)
    return refused or _card_saved(request, card, given)


def _version(version) -> PrompterVersion:
    return PrompterVersion(
        number=version.number, by=version.by, when=version.created.isoformat(), changed=version.changed, values=version.values
    )


@require_safe
@token_required
def prompter_versions(request: HttpRequest, prompter_id: int) -> JsonResponse:
    """A card's history, oldest first: who, when, which fields, and every value after each change."""
    card = get_object_or_404(Prompter, pk=prompter_id, team=request.team)
    versions = card.versions.select_related("user", "token").order_by("number")
    return JsonResponse(PrompterHistory(id=card.pk, name=card.name, versions=[_version(v) for v in versions]).answer())
