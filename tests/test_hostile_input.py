"""Bad and hostile input: never a 500, never a half-written submission, bounded answers, rate limits,
safe retries (Idempotency-Key), a clear 503 when the work queue is down, and CSV cells that cannot run."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import PromptEntry, Submission
from leaderboard.downloads import csv_cell
from submissions.services import token_create

GOOD = b'{"task_id": "oe-s01", "prompt": "Gouache bread in morning light"}\n'


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def token(team):
    return token_create(team=team, name="ci")[1]


def post(client, token, data: bytes = GOOD, name: str = "p.jsonl", **fields):
    payload = {"file": SimpleUploadedFile(name, data), "prompter": "m", "pack": "sample", **fields}
    return client.post("/api/v1/submissions", payload, **auth(token))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"prompter": "p" * 201}, "prompter"),
        ({"condition": "c" * 41}, "condition"),
        ({"prompter": "nul\x00here"}, "prompter"),
        ({"pack": "x" * 500}, "pack"),
        ({"pack": "no\x00pack"}, "pack"),
        ({"judge_by_batch": "tr\x00ue"}, "judge_by_batch"),
        ({"judge_by_batch": "true\x07"}, "judge_by_batch"),
        ({"judge_by_batch": "t" * 100_000}, "judge_by_batch"),
    ],
)
def test_api_fields_are_validated_like_the_form(client, sample_pack, token, fields, field):
    response = post(client, token, **fields)
    assert response.status_code == 400 and field in response.json()["fields"]
    assert not Submission.objects.exists()


def test_a_hostile_file_is_a_bounded_400_and_stores_nothing(client, sample_pack, token):
    lines = [b'{"task_id": "oe-s01", "prompt": "a\\u0000b"}', b'{"task_id": "oe-s01", "prompt": "\\udc80"}', b"[" * 50_000]
    lines += [b"{oops" for _ in range(60_000)]
    response = post(client, token, b"\n".join(lines), name="evil\x00name.jsonl")
    body = response.json()
    assert response.status_code == 400 and body["problems"] == 60_003 and len(body["errors"]) == 51
    assert "line 1: prompt contains a NUL character (U+0000)" in body["errors"] and len(response.content) < 20_000
    assert not Submission.objects.exists() and not PromptEntry.objects.exists()


def multipart(fields: dict[str, str], filename: bytes, data: bytes) -> tuple[bytes, str]:
    """A multipart body built by hand, so the file name can hold bytes no client library would encode."""
    boundary = "atelier-boundary-7f3a"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="'.encode()
        + filename
        + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
        + data
        + b"\r\n"
    )
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@pytest.mark.django_db(transaction=True)
def test_an_accepted_file_with_a_strange_name_is_stored_safely(client, sample_pack, token, no_backends):
    body, content_type = multipart({"prompter": "m", "pack": "sample"}, "évil".encode() + b"\x00" + b"n" * 400 + b".jsonl", GOOD)
    response = client.generic("POST", "/api/v1/submissions", body, content_type=content_type, **auth(token))
    assert response.status_code == 201, response.content
    name = Submission.objects.get().source_name
    assert 0 < len(name) <= 255 and name.startswith("évil") and "\x00" not in name


def test_a_file_name_that_is_not_utf8_is_a_400_naming_the_field(client, sample_pack, token):
    body, content_type = multipart({"prompter": "m", "pack": "sample"}, b"bad\xed\xb2\x80\xff.jsonl", GOOD)
    response = client.generic("POST", "/api/v1/submissions", body, content_type=content_type, **auth(token))
    assert response.status_code == 400 and "file" in response.json()["fields"]  # Django drops a part it cannot decode
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_idempotency_key_returns_the_first_submission(client, sample_pack, token, no_backends):
    first = client.post(
        "/api/v1/submissions",
        {"file": SimpleUploadedFile("p.jsonl", GOOD), "prompter": "m"},
        HTTP_IDEMPOTENCY_KEY="upload-1",
        **auth(token),
    )
    again = client.post(
        "/api/v1/submissions",
        {"file": SimpleUploadedFile("p.jsonl", GOOD), "prompter": "m"},
        HTTP_IDEMPOTENCY_KEY="upload-1",
        **auth(token),
    )
    assert first.status_code == again.status_code == 201 and first.json()["id"] == again.json()["id"]
    assert Submission.objects.count() == 1
    other = client.post(
        "/api/v1/submissions",
        {"file": SimpleUploadedFile("p.jsonl", GOOD + GOOD.replace(b"oe-s01", b"co-s01")), "prompter": "m"},
        HTTP_IDEMPOTENCY_KEY="upload-1",
        **auth(token),
    )
    assert other.status_code == 422 and "already used for a different upload" in other.json()["error"]
    fresh = client.post("/api/v1/submissions", {"file": SimpleUploadedFile("p.jsonl", GOOD), "prompter": "m"}, **auth(token))
    assert fresh.status_code == 201 and Submission.objects.count() == 2  # without a key, a new upload is new


@pytest.mark.django_db(transaction=True)
def test_redis_down_is_a_503_and_stores_nothing(client, owner, team, sample_pack, token, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there: the enqueue fails at once
    from django_rq import settings as rq_settings

    for queue in rq_settings.QUEUES.values():
        queue["URL"], queue["_was"] = "redis://127.0.0.1:1/0?socket_connect_timeout=2", queue["URL"]
    try:
        response = post(client, token)
        assert response.status_code == 503 and response["Retry-After"] == "30" and "nothing was stored" in response.json()["error"]
        client.force_login(owner)
        page = client.post(
            f"/teams/{team.slug}/submit/", {"pack": sample_pack.pk, "prompter": "m", "file": SimpleUploadedFile("p.jsonl", GOOD)}
        )
        assert page.status_code == 503 and "nothing was stored" in page.content.decode()
    finally:
        for queue in rq_settings.QUEUES.values():
            queue["URL"] = queue.pop("_was")
    assert not Submission.objects.exists() and not PromptEntry.objects.exists()


def test_bad_tokens_lock_an_address_out_for_bad_tokens_only(client, sample_pack, token, settings):
    settings.ATELIER_TOKEN_FAILURE_LIMIT = 3
    for _ in range(3):
        assert client.get("/api/v1/submissions/1", **auth("atl_wrong")).status_code == 401
    locked = client.get("/api/v1/submissions/1", **auth("atl_wrong_again"))
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0 and "invalid token" in locked.json()["error"]
    assert client.get("/api/v1/submissions/1", **auth(token)).status_code == 404  # a good token from this address passes
    assert client.get("/api/v1/submissions/1").status_code == 401  # so does a request without one (refused as before)
    assert client.get("/api/v1/submissions/1", REMOTE_ADDR="10.9.8.7", **auth("atl_wrong")).status_code == 401  # other addresses: own count


def test_login_locks_out_after_repeated_wrong_passwords(client, owner, stranger, settings):
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(5):  # page views and forms without a password never reach a password check: not counted
        assert client.get("/accounts/login/").status_code == 200
        assert client.post("/accounts/login/", {"username": "owner", "password": ""}).status_code == 200
    for _ in range(3):
        assert client.post("/accounts/login/", {"username": "owner", "password": "wrong"}).status_code in (200, 429)
    locked = client.post("/accounts/login/", {"username": "owner", "password": "pw-owner-123"})
    assert locked.status_code == 429  # the right password no longer helps until the cool-off
    assert "_auth_user_id" not in client.session
    neighbour = client.post("/accounts/login/", {"username": "stranger", "password": "pw-stranger-123"})
    assert neighbour.status_code == 302  # the lock is the (username, address) pair: another user there logs in


def test_csv_cells_that_look_like_formulas_are_neutralised():
    assert [csv_cell(v) for v in ('=HYPERLINK("x")', "@SUM(A1)", "+1", "-cmd", "\tx", "\rx", "plain", -0.5, 3)] == [
        '\'=HYPERLINK("x")',
        "'@SUM(A1)",
        "'+1",
        "'-cmd",
        "'\tx",
        "'\rx",
        "plain",
        -0.5,
        3,
    ]


@pytest.mark.django_db(transaction=True)
def test_downloaded_prompts_cannot_run_as_formulas(client, team, sample_pack, admin_user):
    from submissions.services import submission_create, submissions_publish

    submission = submission_create(
        team=team, pack=sample_pack, prompter="f", filename="p.jsonl", data=b'{"task_id": "oe-s01", "prompt": "=HYPERLINK(\\"http://x\\")"}'
    )
    submissions_publish(submissions=Submission.objects.filter(pk=submission.pk))
    body = b"".join(client.get(f"/submissions/{submission.pk}/breakdown.csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert rows and all(r["prompt"] == '\'=HYPERLINK("http://x")' for r in rows)
