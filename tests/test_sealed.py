"""Sealed: no hidden checklist text reaches a team, the public or a download through any failure path.

A scripted judge and a scripted prompter echo what they were sent in every way we could think of
(plain, JSON-encoded twice, cut mid-item at several offsets, inside HTML, inside a refusal, as a
checklist reply whose values are other items, escaped to ASCII, in a 429's body, in a rationale), over
test-split tasks whose items carry quotes, backslashes and non-ASCII. A scanner that brings every
body to one normal form (HTML unescaped until stable, \\uXXXX decoded, backslashes dropped, NFC,
casefold, whitespace collapsed; CSV parsed) then looks for every whole item and every 40-character
piece of one on every surface but the staff's: pages, API, CSV, JSON Lines, the board zip with
board.json, call logs, team and endpoint pages. The scanner is written here, apart from the
platform's redactor, so a fault in one is not hidden by the same fault in the other.
"""

from __future__ import annotations

import csv
import html
import io
import itertools
import json
import re
import shutil
import unicodedata
import zipfile

import pytest

from evaluation.models import Judgement, PromptCall, Submission, UnitStatus
from submissions.services import endpoint_create, endpoint_run_create, submission_create, submissions_publish, token_create
from tasks.loaders import read_own_pack
from tasks.services import pack_save
from tests.conftest import ROOT
from tests.openai_server import Reply, judge_responder, request_text

PIECE = 40
_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})")


def scan_form(text: str) -> str:
    """The scanner's normal form (written apart from evaluator.judge.redact on purpose)."""
    for _ in range(10):
        unescaped = html.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    for _ in range(4):  # nested escapes (\\\\u00e9 after two JSON encodings) come apart one level at a time
        text = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = re.sub(r"\\+[nrt]", " ", text).replace("\\", "")
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text).casefold()).strip()


def body_forms(name: str, body: bytes) -> str:
    """Every readable form of a surface: its text, and for CSV its parsed cells (doubled quotes undone)."""
    text = body.decode("utf-8", "replace")
    if name.endswith(".csv") or "text/csv" in name:
        text += "\n" + "\n".join(" ".join(row) for row in csv.reader(io.StringIO(text)))
    return scan_form(text)


def pieces(item: str) -> set[str]:
    form = scan_form(item)
    return {form} | {form[i : i + PIECE] for i in range(len(form) - PIECE + 1)}


def hidden_items(n: int, task_id: str, side: str) -> list[str]:
    """Items built to break a redactor: quotes, backslashes, non-ASCII, HTML-ish, longer than a piece."""
    return [
        f'{side} №{k} of {task_id}: the «brass» lamp\\shade says "naïve café" — <b>&amp;</b> über-Ω {k * 7919} ✓ beyond forty chars'
        if k % 2 == 0
        else f"{side} {task_id}/{k}: Ærø's \\\"quoted\\\" mark, ½ 'tilted' ∑ (hidden) {k * 104729}"
        for k in range(1, n + 1)
    ]


@pytest.fixture
def sealed_pack(transactional_db, tmp_path):
    """The sample pack with every test-split checklist item replaced by a hostile hidden one."""
    folder = tmp_path / "sealed"
    shutil.copytree(ROOT / "tasks" / "packs" / "sample", folder)
    meta = json.loads((folder / "pack.json").read_text())
    (folder / "pack.json").write_text(json.dumps({**meta, "name": "sealed"}))
    for path in folder.glob("*.jsonl"):
        tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for task in tasks:
            if task["split"] == "test":
                task["prompt_checklist"] = hidden_items(len(task["prompt_checklist"]), task["task_id"], "prompt")
                task["image_checklist"] = hidden_items(len(task["image_checklist"]), task["task_id"], "image")
        path.write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in tasks) + "\n")
    pack, _ = pack_save(data=read_own_pack(folder))
    return pack


def hidden_of(pack) -> list[str]:
    return [item for task in pack.tasks.filter(split="test") for item in [*task.prompt_checklist, *task.image_checklist]]


def cut(item: str, at: int) -> str:
    return item[: max(1, len(item) * at // 100)]


def echo_judge():
    """Answers each request in the next of ten ways, each carrying what it was sent; the last answers well."""
    serial = itertools.count()

    def answer(request: dict) -> Reply:
        text, sent = request_text(request), json.dumps(request)
        mode = next(serial) % 10
        if mode == 0:
            return Reply(content=text)  # plain, not JSON: the parser complains and the repair turn repeats it
        if mode == 1:
            return Reply(status=500, raw_body=json.dumps(json.dumps({"error": {"message": sent}})))
        if mode == 2:
            return Reply(status=400, raw_body=json.dumps({"error": {"message": " | ".join(cut(text, p) for p in (13, 37, 61, 89))}}))
        if mode == 3:
            return Reply(
                status=502,
                raw_body=f"<html><body><h1>Bad gateway</h1><pre>{html.escape(text)}</pre></body></html>",
                headers={"Content-Type": "text/html"},
            )
        if mode == 4:
            return Reply(refusal=f"I will not judge this: {text}")
        if mode == 5:
            lines = [line.strip("- ").strip() for line in text.splitlines() if line.strip()]
            return Reply(content=json.dumps(dict(zip(lines, lines[1:])), ensure_ascii=False))  # values are other items
        if mode == 6:
            return Reply(content=json.dumps({"note": text, "again": json.dumps(text)}, ensure_ascii=True))
        if mode == 7:
            return Reply(status=429, headers={"Retry-After": "0"}, raw_body=json.dumps({"error": {"message": f"slow down: {text}"}}))
        if mode == 8:
            good = judge_responder(request)
            reply = json.loads(good.content) if good.content and good.content.startswith("{") else None
            if isinstance(reply, dict):
                reply["rationale"] = text[-400:]
                return Reply(content=json.dumps(reply, ensure_ascii=False))
            return good
        return judge_responder(request)

    return answer


def echo_prompter():
    """A prompter that echoes its request (feedback lines included) in reply, refusal, error body and HTML."""
    serial = itertools.count()

    def answer(request: dict) -> Reply:
        text = request_text(request)
        mode = next(serial) % 5
        if mode == 1:
            return Reply(refusal=f"No: {text[-600:]}")
        if mode == 2:
            return Reply(status=500, raw_body=json.dumps(json.dumps({"error": {"message": text}})))
        if mode == 3:
            return Reply(status=400, raw_body=f"<html><pre>{html.escape(text)}</pre></html>")
        return Reply(content=f"A picture of this request: {text[-300:]}")  # the feedback line travels into the prompt

    return answer


SURFACES_ANON = ["/", "/tasks/", "/judge/"]


def surfaces(client, owner_client, token, pack, submissions, endpoint) -> dict[str, bytes]:
    """Every page, API answer and download a team or the public can open for these submissions."""
    got: dict[str, bytes] = {}

    def fetch(name: str, who, url: str, **headers) -> None:
        response = who.get(url, **headers)
        assert response.status_code == 200, (name, url, response.status_code)
        got[name] = b"".join(response.streaming_content) if response.streaming else response.content

    for url in (
        SURFACES_ANON + [f"/tasks/?pack={pack.pk}"] + [f"/tasks/{pack.pk}/{t}/" for t in pack.tasks.values_list("task_id", flat=True)]
    ):
        fetch(f"public {url}", client, url)
    team = submissions[0].team
    for url in (f"/teams/{team.slug}/", f"/teams/{team.slug}/endpoints/{endpoint.pk}/"):
        fetch(f"team {url}", owner_client, url)
    for s in submissions:
        for who_name, who in (("public", client), ("team", owner_client)):
            for url in (f"/submissions/{s.pk}/", f"/submissions/{s.pk}/breakdown.csv", f"/submissions/{s.pk}/breakdown.jsonl"):
                fetch(f"{who_name} {url}", who, url)
        if s.origin == "endpoint":
            for url in (f"/submissions/{s.pk}/calls/", f"/submissions/{s.pk}/calls.csv", f"/submissions/{s.pk}/calls.jsonl"):
                fetch(f"team {url}", owner_client, url)
            fetch(f"api calls {s.pk}", client, f"/api/v1/submissions/{s.pk}/calls", HTTP_AUTHORIZATION=f"Bearer {token}")
        fetch(f"api {s.pk}", client, f"/api/v1/submissions/{s.pk}", HTTP_AUTHORIZATION=f"Bearer {token}")
    fetch("api endpoints", client, "/api/v1/endpoints", HTTP_AUTHORIZATION=f"Bearer {token}")
    board = re.search(r'href="(/board\.zip\?[^"]+)"', got["public /"].decode())
    assert board, "the board page links its whole-board download"
    fetch("board.zip", client, html.unescape(board.group(1)))
    with zipfile.ZipFile(io.BytesIO(got.pop("board.zip"))) as archive:
        for name in archive.namelist():
            got[f"board.zip/{name}"] = archive.read(name)
    assert "board.zip/board.json" in got
    return got


@pytest.mark.django_db(transaction=True)
def test_echoing_judge_and_prompter_leak_no_hidden_text_on_any_surface(
    sealed_pack, team, owner, client, scripted_judge, prompter_server, settings
):
    settings.ATELIER_MAX_MISSING_RATE = 1.0  # finish and publish whatever failed: the surfaces are the point
    settings.ATELIER_JUDGE_MAX_RETRIES = 1
    settings.ATELIER_PROMPTER_ALLOWED_HOSTS = ("127.0.0.1",)
    settings.ATELIER_PROMPTER_MAX_RETRIES = 0
    scripted_judge.default, prompter_server.default = echo_judge(), echo_prompter()
    hidden = hidden_of(sealed_pack)
    wanted = {p: item for item in hidden for p in pieces(item)}

    prompts = "\n".join(json.dumps({"task_id": t.task_id, "prompt": f"A picture for {t.title}"}) for t in sealed_pack.tasks.all())
    upload = submission_create(team=team, pack=sealed_pack, prompter="Echo file", filename="p.jsonl", data=prompts.encode())
    endpoint = endpoint_create(team=team, name="echo", base_url=prompter_server.base_url, model="echo", max_in_flight=2)
    run = endpoint_run_create(team=team, endpoint=endpoint, pack=sealed_pack, rounds=2, feedback_backend="smoke-sd")
    submissions = list(Submission.objects.filter(pk__in=[upload.pk, run.pk]).order_by("pk"))
    assert submissions_publish(submissions=Submission.objects.filter(pk__in=[upload.pk, run.pk])) == 2

    # The test means something only if the judge was sent the items, echoed them, and failures were recorded.
    sent = scan_form("\n".join(request_text(r) for r in scripted_judge.requests))
    assert all(scan_form(item) in sent for item in hidden)
    failed = Judgement.objects.filter(submission__in=submissions, status=UnitStatus.FAILED, entry__task__split="test")
    assert failed.count() >= 10 and {j.reason.split(" (")[0] for j in failed} >= {"invalid reply after 3 attempt(s)", "the model refused"}
    assert PromptCall.objects.filter(submission=run).exclude(status="ok").exists()

    owner_client = client_for(owner)
    _, token = token_create(team=team, name="scan")
    bodies = surfaces(client, owner_client, token, sealed_pack, submissions, endpoint)
    hits = [(name, wanted[p]) for name, body in bodies.items() for form in [body_forms(name, body)] for p in wanted if p in form]
    print(f"\nsealed: {len(bodies)} surfaces x {len(hidden)} hidden items ({len(wanted)} pieces) scanned, {len(set(hits))} hits")
    assert sorted(set(hits)) == []


def client_for(user):
    from django.test import Client

    logged_in = Client()
    logged_in.force_login(user)
    return logged_in


def test_the_scanner_finds_items_in_every_form_the_echoes_take():
    """The scanner is itself tested: each echo form of a hostile item is found (whole or by a piece)."""
    item = hidden_items(2, "co-x", "prompt")[1]
    forms = [
        item,
        json.dumps(json.dumps({"m": item})),
        json.dumps({"m": item}, ensure_ascii=True),
        html.escape(html.escape(item)),
        cut(item, 61),
        '"' + item.replace('"', '""') + '"',  # a CSV cell
    ]
    wanted = pieces(item)
    for form in forms:
        found = body_forms("x.csv", form.encode())
        assert any(p in found for p in wanted), form
    assert not any(p in body_forms("x.csv", b"nothing hidden here") for p in wanted)


MARK = 'MARK-«café» "q" \\ <b>x</b>'
VOCABULARY = re.compile(
    r"^(?:(?:timed out|could not connect|HTTP \d{3}|unreadable response|error) \([A-Za-z_]\w*\)(?: after \d+ requests)?"
    r"|the model refused|invalid reply after \d+ attempt\(s\)|timed out after [\d.]+ s)$"
)
REMOTE_FAILURES = {
    "500 body": Reply(status=500, raw_body=json.dumps({"error": {"message": MARK}})),
    "html 502": Reply(status=502, raw_body=f"<html>{MARK}</html>", headers={"Content-Type": "text/html"}),
    "429 body": Reply(status=429, headers={"Retry-After": "0"}, raw_body=json.dumps({"error": {"message": MARK}})),
    "refusal": Reply(refusal=MARK),
    "not json": Reply(content=MARK),
    "wrong shape": Reply(content=json.dumps({MARK: MARK})),
    "not a completion": Reply(raw_body=json.dumps({"message": MARK})),
    "not json body": Reply(raw_body=f"{MARK} not json"),
}


@pytest.mark.parametrize("name", list(REMOTE_FAILURES))
def test_a_failure_reason_is_built_from_our_words_only(name, openai_server, prompter_server):
    """Whatever the remote sends, the reason a team sees matches the closed vocabulary and carries none of it."""
    from evaluator.judge.config import JudgeConfig
    from evaluator.judge.openai_judge import OpenAIJudge
    from evaluator.judge.types import TaskInput
    from evaluator.prompters.client import EndpointSpec, PrompterClient

    task = TaskInput("co-1", "CO", "Fox", "A fox.", {}, ("a fox",), ("a fox",))
    openai_server.default = prompter_server.default = lambda request: REMOTE_FAILURES[name]
    config = JudgeConfig(base_url=openai_server.base_url, model="m", timeout=5.0, max_retries=1, clip_pretrained="random")
    judged = OpenAIJudge(config).run("prompt_objective", task, "a fox")
    spec = EndpointSpec(base_url=prompter_server.base_url, model="m", timeout=5.0, max_retries=1, allowed_hosts=("127.0.0.1",))
    called = PrompterClient(spec).call([{"role": "user", "content": "a fox"}], max_chars=2000)
    assert judged.status == "failed" and VOCABULARY.match(judged.reason), judged.reason
    assert called.status == "ok" or VOCABULARY.match(called.error) or called.error == "not a chat completion (no choices or no message)", (
        called.error
    )
    assert "MARK" not in judged.reason + called.error
    assert "MARK" in judged.remote_text + judged.raw  # kept for the staff


def test_the_staff_redactor_takes_items_out_of_every_echo_form_before_any_cut():
    """What the staff keep is redacted on the normal form: whole items, items cut past a piece, every encoding."""
    from evaluator.judge.redact import Redactor

    items = hidden_items(4, "co-x", "prompt")
    hide = Redactor.for_items(items, ["a short one"])
    echoes = [
        json.dumps(json.dumps({"m": items[0]})),
        html.escape(html.escape(items[1])),
        json.dumps({"m": items[2]}, ensure_ascii=True),
        items[3][: len(items[3]) * 2 // 3],
        "A SHORT ONE",
    ]
    stored = hide.text(" | ".join(echoes))
    assert [p for item in items for p in pieces(item) if p in scan_form(stored)] == [] and "short one" not in stored.casefold()
    assert all(label in stored for label in ("item 1", "item 2", "item 3", "item 4", "image item 1")), stored


def test_the_judge_keeps_no_key_or_url_credentials_in_what_the_staff_see(openai_server):
    """A judge endpoint that echoes its key and a URL with credentials: the staff text has neither."""
    from evaluator.judge.config import JudgeConfig
    from evaluator.judge.openai_judge import OpenAIJudge
    from evaluator.judge.types import TaskInput

    key = "sk-judge-secret-0123456789"
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {key} for http://admin:hunter22@judge.internal/v1"}})
    openai_server.default = lambda request: Reply(status=401, raw_body=body)
    task = TaskInput("co-1", "CO", "Fox", "A fox.", {}, ("a fox",), ("a fox",))
    config = JudgeConfig(base_url=openai_server.base_url, model="m", api_key=key, max_retries=0, clip_pretrained="random")
    result = OpenAIJudge(config).run("prompt_objective", task, "a fox")
    assert result.reason == "HTTP 401 (AuthenticationError)" and "Incorrect API key provided" in result.remote_text
    assert key not in result.remote_text + result.raw and "hunter22" not in result.remote_text and "[API key]" in result.remote_text
