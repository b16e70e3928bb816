"""The prompting stage of an endpoint run: call the team's prompter for every task × sample × round.

Units, all keyed by a PromptCall row (one round of one task and sample):
  prompt     (queue `prompter`)          call the endpoint; write the reply and its log
  feedback   (queue `render-<backend>`)  rounds > 1: render the prompt's first image on the feedback backend
  score      (queue `judge`)             score that image (IM: similarity to the target; OE/CO: the image checks)
              and release the next round, or end the trajectory.
A prompt job keeps up to the endpoint's limit of calls in flight: besides its own call it claims
other ready calls of the same run (a claim is a pending→running update, so each call is made once)
and refills as calls finish. Slots (evaluation/slots.py) hold that limit across worker processes.
When a trajectory ends, its last answered round becomes the PromptEntry that is rendered and
judged like an uploaded prompt; when no call is open any more, submission_advance moves on.
"""

from __future__ import annotations

import logging
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone
from PIL import Image

from evaluation.crypto import decrypt
from evaluation.models import CallStatus, PromptCall, PromptEntry, Status, Submission, UnitStatus
from evaluator.categories import IMITATION
from evaluator.judge.skills import feedback_skill, get_skill
from evaluator.prompters.client import OK, CallOutcome, EndpointSpec, PrompterClient
from evaluator.prompters.messages import Feedback, elided, round_messages
from tasks.selectors import pack_tasks_at, prompter_tasks, prompter_view, task_at
from teams.models import Endpoint

from . import runtime
from .judging import redactor, target_for
from .rendering import render_prompt, store_png
from .units import entry_task, submission_advance, submission_fail, task_input
from .workqueue import FEEDBACK_JUDGE_JOB, FEEDBACK_RENDER_JOB, PROMPT_JOB, enqueue

log = logging.getLogger(__name__)
TARGET_SKILL, CHECKS_SKILL = feedback_skill(target=True), feedback_skill(target=False)  # IM; OE and CO (the registry says which)


def endpoint_spec(endpoint: Endpoint) -> EndpointSpec:
    return EndpointSpec(
        base_url=endpoint.base_url,
        model=endpoint.model,
        api_key=decrypt(endpoint.key_encrypted),
        temperature=endpoint.temperature,
        top_p=endpoint.top_p,
        max_tokens=endpoint.max_tokens,
        seed=endpoint.seed,
        timeout=settings.ATELIER_PROMPTER_TIMEOUT,
        max_retries=settings.ATELIER_PROMPTER_MAX_RETRIES,
        allowed_hosts=settings.ATELIER_PROMPTER_ALLOWED_HOSTS,
    )


def in_flight_limit(endpoint: Endpoint) -> int:
    return max(1, min(endpoint.max_in_flight, settings.ATELIER_PROMPTER_MAX_IN_FLIGHT))


def prompting_start(submission_id: int) -> None:
    """Claim a queued endpoint run, plan every round's call (round 0 ready, later rounds waiting) and send round 0."""
    if not Submission.objects.filter(pk=submission_id, status=Status.QUEUED).update(status=Status.PROMPTING, started=timezone.now()):
        return
    submission = Submission.objects.select_related("pack").get(pk=submission_id)
    configs, judge = runtime.backend_configs(), runtime.judge()
    if not configs:
        submission_fail(submission_id, "no rendering backend is enabled in the backends file")
        return
    if submission.rounds > 1 and submission.feedback_backend not in configs:
        submission_fail(
            submission_id, f"feedback backend {submission.feedback_backend!r} is not enabled here; enabled: {', '.join(configs)}"
        )
        return
    temperatures = submission.prompting.get("temperatures") or []
    tasks = pack_tasks_at(submission.pack, submission.pack_revision)  # as the run's revision has them, whatever came since
    # A task a prompter (or a person) cannot be shown (IM with no target image yet) is left out, and said so.
    shown = {t.pk for t in prompter_tasks(tasks)}
    left_out = [t.task_id for t in tasks if t.pk not in shown]
    tasks = [t for t in tasks if t.pk in shown]
    with transaction.atomic():
        Submission.objects.filter(pk=submission_id).update(
            **runtime.snapshot_fields(judge, configs), prompting={**submission.prompting, "left_out": left_out}
        )
        calls = [
            PromptCall(
                submission=submission,
                task=task,
                sample_index=k,
                round=r,
                status=CallStatus.PENDING if r == 0 else CallStatus.WAITING,
                temperature=temperatures[k] if k < len(temperatures) else None,
                seed=sample_seed(submission, k),
            )
            for task in tasks
            for k in range(submission.samples)
            for r in range(submission.rounds)
        ]
        PromptCall.objects.bulk_create(calls, ignore_conflicts=True)
        for pk in PromptCall.objects.filter(submission_id=submission_id, round=0, status=CallStatus.PENDING).values_list("pk", flat=True):
            enqueue(PROMPT_JOB, pk)


def sample_seed(submission: Submission, sample: int) -> int | None:
    base = (submission.prompting.get("endpoint") or {}).get("seed")
    return None if base is None else base + sample


def prompt_calls(call_id: int) -> None:
    """Make this call and every other ready call of its run, at most the endpoint's limit at once."""
    call = PromptCall.objects.select_related("submission__endpoint").get(pk=call_id)
    submission = call.submission
    if submission.status == Status.PROMPTING and submission.endpoint is not None:
        call_window(submission, first=call_id)
    submission_advance(submission.pk)


def call_window(submission: Submission, first: int) -> None:
    """Make `first` and then every ready call of the run, at most the endpoint's limit in flight; returns when none is ready."""
    from .slots import Slots

    client, limit = PrompterClient(endpoint_spec(submission.endpoint)), in_flight_limit(submission.endpoint)
    slots = Slots(submission.endpoint.pk, limit, lease=settings.ATELIER_PROMPTER_TIMEOUT * (settings.ATELIER_PROMPTER_MAX_RETRIES + 2))
    queue: list[int] = [first]
    with ThreadPoolExecutor(limit, thread_name_prefix="prompter") as pool:
        running: dict = {}
        while True:
            while len(running) < limit and Submission.objects.filter(pk=submission.pk, status=Status.PROMPTING).exists():
                pk = queue.pop() if queue else _next_ready(submission.pk)
                if pk is None:
                    break
                call = _claim(pk)
                if call is None:
                    continue
                try:
                    prepared = _prepare(call, submission)
                except Exception as exc:  # noqa: BLE001 - recorded on the call; the window goes on with the others
                    log.exception("could not build the request of call %s", call.pk)
                    prepared = f"could not build the request: {type(exc).__name__}: {exc}"
                if isinstance(prepared, str):
                    _finish(call, [], _not_made(prepared))
                    continue
                messages, params = prepared
                future = pool.submit(slots.run, client.call, messages, max_chars=settings.ATELIER_MAX_PROMPT_CHARS, **params)
                running[future] = (call, elided(messages))
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                call, request = running.pop(future)
                _finish(call, request, future.result())


def _next_ready(submission_id: int) -> int | None:
    return (
        PromptCall.objects.filter(submission_id=submission_id, status=CallStatus.PENDING)
        .order_by("round", "pk")
        .values_list("pk", flat=True)
        .first()
    )


def _claim(pk: int) -> PromptCall | None:
    if not PromptCall.objects.filter(pk=pk, status=CallStatus.PENDING).update(status=CallStatus.RUNNING, started_at=timezone.now()):
        return None
    return PromptCall.objects.select_related("task").get(pk=pk)


def _not_made(reason: str) -> CallOutcome:
    return CallOutcome(status="failed", text="", reply="", error=reason, http_status=None, requests=0, latency=0.0)


def _prepare(call: PromptCall, submission: Submission) -> tuple[list, dict] | str:
    """The messages and parameters of a call, or why it cannot be made (the run's budget is spent, no target image)."""
    spent = PromptCall.objects.filter(submission_id=submission.pk).aggregate(
        calls=Sum("requests"), tokens=Sum(F("prompt_tokens") + F("completion_tokens"))
    )
    budget = submission.prompting.get("budget", {})
    if (spent["calls"] or 0) >= budget.get("calls", settings.ATELIER_PROMPTER_MAX_CALLS):
        return f"the run's call budget ({budget.get('calls')} requests) is spent"
    if (spent["tokens"] or 0) >= budget.get("tokens", settings.ATELIER_PROMPTER_MAX_TOKENS):
        return f"the run's token budget ({budget.get('tokens')} tokens) is spent"
    condition = runtime.conditions()[submission.condition]
    history = [_feedback(past) for past in _trajectory(call).filter(round__lt=call.round, status=CallStatus.OK)]
    messages = round_messages(condition, prompter_view(task_at(call.task, submission.pack_revision)), history)
    return messages, {"temperature": call.temperature, "seed": call.seed}


def _feedback(past: PromptCall) -> Feedback:
    image = None
    if past.feedback_image:
        with past.feedback_image.open("rb") as handle:
            image = handle.read()
    return Feedback(prompt=past.text, image_png=image, score_line=past.feedback_details.get("line", ""))


def _trajectory(call: PromptCall):
    return PromptCall.objects.filter(submission_id=call.submission_id, task_id=call.task_id, sample_index=call.sample_index)


def _finish(call: PromptCall, request: list, outcome: CallOutcome) -> None:
    """Write a call's outcome (dropped, except what it spent, when the run was cancelled meanwhile) and move its trajectory on."""
    fields = {
        "status": outcome.status,
        "text": outcome.text,
        "reply": outcome.reply,
        "error": outcome.error,
        "http_status": outcome.http_status,
        "latency": outcome.latency,
        "request": request,
        "finished_at": timezone.now(),
    }
    spent = {name: F(name) + getattr(outcome, name) for name in ("requests", "prompt_tokens", "completion_tokens")}
    with transaction.atomic():
        if not PromptCall.objects.filter(pk=call.pk, status=CallStatus.RUNNING).update(**fields, **spent):
            PromptCall.objects.filter(pk=call.pk).update(**spent)
            return
        rounds = Submission.objects.values_list("rounds", "feedback_backend").get(pk=call.submission_id)
        if outcome.status == OK and rounds[0] > 1:
            PromptCall.objects.filter(pk=call.pk).update(feedback_status=UnitStatus.PENDING)
            enqueue(FEEDBACK_RENDER_JOB, call.pk, backend=rounds[1])
        elif outcome.status == OK:
            trajectory_end(call)
        else:
            _end_early(call, f"round {call.round + 1} {outcome.status}: {outcome.error}")


def _end_early(call: PromptCall, reason: str) -> None:
    _trajectory(call).filter(round__gt=call.round, status=CallStatus.WAITING).update(status=CallStatus.SKIPPED, error=reason)
    trajectory_end(call)


def trajectory_end(call: PromptCall) -> None:
    """The last answered round of a trajectory becomes its entry (none answered: the task stays missing, with the reasons on its calls)."""
    last = _trajectory(call).filter(status=CallStatus.OK).order_by("-round").first()
    if last is not None:
        PromptEntry.objects.get_or_create(
            submission_id=call.submission_id, task_id=call.task_id, sample_index=call.sample_index, defaults={"text": last.text}
        )


def feedback_render(call_id: int) -> None:
    """Render a round's prompt once on the feedback backend (its first seed), then send the image to be scored."""
    call = PromptCall.objects.select_related("task", "submission").get(pk=call_id)
    if call.feedback_status != UnitStatus.PENDING or call.submission.status != Status.PROMPTING:
        return
    if not call.feedback_image:
        config = runtime.backend_configs()[call.submission.feedback_backend]
        images, _, rewritten = render_prompt(config, call.text, config.seeds_for(call.task.task_id, call.sample_index)[:1])
        name, _ = store_png(images[0])
        details = {**call.feedback_details, "config_hash": config.version_hash(), **({"rewritten": rewritten} if rewritten else {})}
        PromptCall.objects.filter(pk=call_id).update(feedback_image=name, feedback_details=details)
    enqueue(FEEDBACK_JUDGE_JOB, call_id)


def feedback_score(call_id: int) -> None:
    """Score a round's feedback image, then release the next round (or end the trajectory after the last)."""
    call = PromptCall.objects.select_related("task", "submission").get(pk=call_id)
    if call.feedback_status != UnitStatus.PENDING:
        return
    task, judge = entry_task(call), runtime.judge()
    with call.feedback_image.open("rb") as handle:
        image = Image.open(handle).convert("RGB")
    skill = feedback_skill(target=task.category == IMITATION)
    target = target_for(task, _feedback_config_hash(call)) if get_skill(skill).needs_target else None
    result = judge.run(skill, task_input(task), call.text, image, target=target)
    fields = {"feedback_status": UnitStatus.FAILED, "feedback_error": redactor(task).text(result.reason or f"{skill} {result.status}")}
    if result.remote_text:  # the remote's words: the staff's log only
        log.warning("feedback score of call %s: %s", call_id, redactor(task).text(result.remote_text))
    if result.status == UnitStatus.OK and result.value is not None:
        score = get_skill(skill).scale.to_100(result.value)
        hide = redactor(task)
        details = {
            **call.feedback_details,
            "skill": skill,
            "line": feedback_line(task, score, result.checklist),
            "checklist": hide.value(result.checklist),
        }
        fields = {"feedback_status": UnitStatus.OK, "feedback_score": score, "feedback_details": details, "feedback_error": ""}
    with transaction.atomic():
        if not PromptCall.objects.filter(pk=call_id, feedback_status=UnitStatus.PENDING).update(**fields):
            return
        following = _trajectory(call).filter(round=call.round + 1, status=CallStatus.WAITING).first()
        if following is None:
            trajectory_end(call)
        elif PromptCall.objects.filter(pk=following.pk, status=CallStatus.WAITING).update(
            status=CallStatus.PENDING, queued_at=timezone.now()
        ):
            enqueue(PROMPT_JOB, following.pk)
    submission_advance(call.submission_id)


def _feedback_config_hash(call: PromptCall) -> str:
    """The version hash of the backend config that rendered the call's feedback image (recorded when it was rendered;
    a call rendered before that was recorded: the config the backends file gives the feedback backend now)."""
    return call.feedback_details.get("config_hash") or runtime.backend_configs()[call.submission.feedback_backend].version_hash()


def feedback_line(task, score: float, checklist: dict) -> str:
    """What the prompter is told about its image: IM the similarity; OE/CO the checks met (named only on the public split)."""
    if task.category == IMITATION:
        return f"It scores {score:.0f}/100 for similarity to the target image."
    met = [item for item, ok in checklist.items() if ok]
    line = f"It meets {len(met)} of {len(checklist)} checks for this request ({score:.0f}/100)."
    if task.is_public and checklist:
        missed = [item for item, ok in checklist.items() if not ok]
        line += (" Met: " + "; ".join(met) + "." if met else "") + (" Missed: " + "; ".join(missed) + "." if missed else "")
    return line


def prompt_call_fail(call_id: int, reason: str) -> None:
    """A prompt job that raised: this call fails and its trajectory ends here (calls the job claimed but did not
    finish stay `running` until reconcile's lease runs out)."""
    call = PromptCall.objects.get(pk=call_id)
    if PromptCall.objects.filter(pk=call_id, status__in=[CallStatus.PENDING, CallStatus.RUNNING]).update(
        status=CallStatus.FAILED, error=reason
    ):
        _end_early(call, f"round {call.round + 1} failed: {reason}")
    submission_advance(call.submission_id)


def feedback_fail(call_id: int, reason: str) -> None:
    """A feedback step that raised: the trajectory ends at this round (its prompt is kept), the reason is recorded."""
    with transaction.atomic():
        call = PromptCall.objects.get(pk=call_id)
        if PromptCall.objects.filter(pk=call_id, feedback_status=UnitStatus.PENDING).update(
            feedback_status=UnitStatus.FAILED, feedback_error=reason
        ):
            _end_early(call, f"no feedback after round {call.round + 1}: {reason}")
    submission_advance(call.submission_id)
