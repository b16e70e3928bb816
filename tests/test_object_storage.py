"""Media on S3-compatible object storage, over real HTTP against moto's standalone S3 server (a stand-in for AWS S3,
MinIO or R2): no file touches a local folder, the media view keeps its permission check and then redirects to a
presigned URL (or streams, or points a published file at the CDN), content addressing and the render dedupe hold,
and withdrawal (a participant's, or a team's of its entry) deletes the objects nothing else names.

The two-host test runs the platform as deployed on three machines that share no disk: two worker "hosts" (real
`manage.py work` processes on every queue, each with its own empty MEDIA_ROOT) and a web host (gunicorn, a third
MEDIA_ROOT), sharing only the database, Redis and the bucket.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import requests

from evaluation.erasure import files_delete_unused
from evaluation.models import Render, Submission
from submissions.services import entry_withdraw, submission_create, submissions_publish
from tasks.models import Task
from tests.conftest import ROOT, TEST_BACKENDS
from tests.once import copy_database
from tests.test_lockout_workers import Gunicorn, environment, free_port, setting, stop_process

BUCKET = "atelier-media"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
PROMPT = b'{"task_id": "im-s01", "prompt": "Red sun over three blue hills, flat poster"}\n'


@dataclass
class S3:
    endpoint: str
    client: object

    def keys(self) -> set[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return {item["Key"] for page in pages for item in page.get("Contents", [])}


@pytest.fixture
def s3_server() -> Iterator[S3]:
    """moto's S3 server in its own process, with an empty bucket."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=2).close()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "moto's S3 server did not start"
                time.sleep(0.2)
        keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)
        client.create_bucket(Bucket=BUCKET)
        yield S3(endpoint, client)
    finally:
        process.terminate()
        process.wait(timeout=30)


def local_files(*folders: Path) -> list[Path]:
    return [p for folder in folders if folder.exists() for p in folder.rglob("*") if p.is_file()]


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


# In one process: the site's own code with settings pointing at the bucket.


@pytest.fixture
def object_storage(settings, s3_server, monkeypatch) -> S3:
    """The storage settings the site builds from its environment (atelier/settings.py), with moto's credentials."""
    from atelier.settings import _media_storage

    env = {"ATELIER_S3_BUCKET": BUCKET, "ATELIER_S3_ENDPOINT_URL": s3_server.endpoint, "ATELIER_S3_REGION": "eu-west-1"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("atelier.settings.ATELIER_S3_BUCKET", BUCKET)
    storage = _media_storage()
    storage["OPTIONS"] |= {"access_key": "testing", "secret_key": "testing", "querystring_expire": 60}
    settings.STORAGES = {**settings.STORAGES, "default": storage}
    settings.ATELIER_MEDIA_DELIVERY, settings.ATELIER_MEDIA_PUBLIC_URL = "redirect", ""
    return s3_server


@pytest.fixture
def rendered(object_storage, team, sample_pack) -> Submission:
    submission = submission_create(team=team, pack=sample_pack, prompter="private", filename="p.jsonl", data=PROMPT)
    submission.refresh_from_db()
    assert submission.status == "done", submission.error
    return submission


@pytest.mark.django_db(transaction=True)
def test_renders_and_targets_go_to_the_bucket_and_are_served_by_presigned_redirect(rendered, object_storage, client, owner, settings):
    render = Render.objects.filter(entry__submission=rendered, status="ok").first()
    target = Task.objects.get(task_id="im-s01").target_image
    assert {render.image.name, target.name} <= object_storage.keys()
    assert local_files(Path(settings.MEDIA_ROOT)) == []
    url = render.image.url
    assert url == f"/media/{render.image.name}"  # the site's URL, never the bucket's, on pages and in downloads
    assert client.get(url).status_code == 404  # unpublished, anonymous: the check comes before any redirect
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 302 and response["Cache-Control"] == "private, no-store"
    location = response["Location"]
    assert location.startswith(object_storage.endpoint + f"/{BUCKET}/{render.image.name}?")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
    # Signature Version 4 with the bucket's region, what AWS and R2 accept (moto would take version 2 as well)
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256" and "/eu-west-1/s3/aws4_request" in query["X-Amz-Credential"]
    assert "Signature" not in query and "AWSAccessKeyId" not in query
    assert hashlib.sha256(fetch(location)).hexdigest() == render.sha256
    settings.ATELIER_MEDIA_DELIVERY = "stream"
    streamed = client.get(url)
    assert streamed.status_code == 200 and hashlib.sha256(b"".join(streamed.streaming_content)).hexdigest() == render.sha256
    client.logout()
    assert client.get(target.url).status_code == 200  # targets are public


@pytest.mark.django_db(transaction=True)
def test_a_published_file_may_go_to_the_cdn_and_a_private_one_never(rendered, client, owner, settings):
    settings.ATELIER_MEDIA_PUBLIC_URL = "https://cdn.example.org/atelier/"
    render = Render.objects.filter(entry__submission=rendered, status="ok").first()
    client.force_login(owner)
    assert "cdn.example.org" not in client.get(render.image.url)["Location"]  # not published: presigned
    client.logout()
    submissions_publish(submissions=Submission.objects.filter(pk=rendered.pk))
    public = client.get(render.image.url)
    assert public.status_code == 302 and public["Location"] == f"https://cdn.example.org/atelier/{render.image.name}"
    assert public["Cache-Control"].startswith("public")


@pytest.mark.django_db(transaction=True)
def test_the_dedupe_holds_and_withdrawal_deletes_only_unshared_objects(rendered, object_storage, team, sample_pack):
    before = object_storage.keys()
    twin = submission_create(team=team, pack=sample_pack, prompter="twin", filename="p.jsonl", data=PROMPT)
    names = set(Render.objects.filter(entry__submission=rendered).exclude(image="").values_list("image", flat=True))
    assert names and set(Render.objects.filter(entry__submission=twin).exclude(image="").values_list("image", flat=True)) == names
    assert object_storage.keys() == before  # the same prompt and seed: the same objects, nothing uploaded again
    storage = Render._meta.get_field("image").storage
    Submission.objects.filter(pk=rendered.pk).delete()
    assert files_delete_unused(dict.fromkeys(names, storage)) == []  # the twin still names them
    Submission.objects.filter(pk=twin.pk).delete()
    assert sorted(files_delete_unused(dict.fromkeys(names, storage))) == sorted(names)
    assert not names & object_storage.keys()


@pytest.mark.django_db(transaction=True)
def test_a_withdrawal_deletes_the_entrys_objects_from_the_bucket(rendered, object_storage):
    names = set(Render.objects.filter(entry__submission=rendered).exclude(image="").values_list("image", flat=True))
    submissions_publish(submissions=Submission.objects.filter(pk=rendered.pk))
    assert names and names <= object_storage.keys()
    entry_withdraw(submission=Submission.objects.get(pk=rendered.pk))  # the erase job runs once the withdrawal commits
    assert not names & object_storage.keys() and not Render.objects.filter(entry__submission=rendered).exclude(image="").exists()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ["'self'", "data:"]),
        (
            {"ATELIER_S3_ENDPOINT_URL": "https://minio.example.org:9000", "ATELIER_S3_ADDRESSING_STYLE": "path"},
            ["'self'", "data:", "https://minio.example.org:9000"],
        ),
        (
            {"ATELIER_S3_REGION": "eu-west-1", "ATELIER_MEDIA_PUBLIC_URL": "https://cdn.example.org/m/"},
            ["'self'", "data:", "https://s3.amazonaws.com", "https://s3.eu-west-1.amazonaws.com", "https://media-b.s3.amazonaws.com"]
            + ["https://media-b.s3.eu-west-1.amazonaws.com", "https://cdn.example.org"],
        ),
    ],
)
def test_the_pages_allow_images_from_the_bucket_and_the_cdn(tmp_path, env, expected):
    """Browsers check a redirected image against img-src: the bucket's and the CDN's origins are in it, no more."""
    bucket = {"ATELIER_S3_BUCKET": "media-b"} if env else {}
    done = setting(environment(tmp_path, **bucket, **env), "settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['img-src']")
    assert done.returncode == 0 and done.stdout.strip() == repr(expected), done.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ATELIER_S3_BUCKET": "b-1", "ATELIER_MEDIA_ACCEL_REDIRECT": "/protected-media/"}, "ATELIER_MEDIA_ACCEL_REDIRECT serves files"),
        ({"ATELIER_MEDIA_DELIVERY": "proxy"}, "ATELIER_MEDIA_DELIVERY must be 'redirect' or 'stream'"),
        ({"ATELIER_S3_BUCKET": "b-1", "ATELIER_S3_ENDPOINT_URL": "minio:9000"}, "ATELIER_S3_ENDPOINT_URL='minio:9000'"),
        ({"ATELIER_S3_BUCKET": "b-1", "ATELIER_S3_SIGNATURE_VERSION": "v4"}, "ATELIER_S3_SIGNATURE_VERSION must be 's3v4'"),
    ],
)
def test_a_wrong_object_storage_setting_is_refused_by_name(tmp_path, env, message):
    done = setting(environment(tmp_path, **env), "settings.STORAGES")
    assert done.returncode != 0 and "ImproperlyConfigured" in done.stderr and message in done.stderr


# Three hosts that share no disk.

SETUP = """
import json
from django.contrib.auth import get_user_model
from django.test import Client
from submissions.services import team_create, token_create
users = get_user_model().objects
owner, stranger = users.create_user("owner", password="pw-owner-1"), users.create_user("stranger", password="pw-stranger-1")
staff = users.create_superuser("staff", password="pw-staff-1")
team = team_create(user=owner, name="Two Hosts")
sessions = {}
for user in (owner, stranger, staff):
    client = Client()
    client.force_login(user)
    sessions[user.username] = client.cookies["sessionid"].value
print(json.dumps({"token": token_create(team=team, name="ci")[1], "sessions": sessions}))
"""

IMAGES = """
import json
from evaluation.models import PromptCall, Render
from tasks.models import Task
print(json.dumps({
    "renders": {r.image.name: r.entry.submission_id for r in Render.objects.exclude(image="").select_related("entry")},
    "feedback": {c.feedback_image.name: c.submission_id for c in PromptCall.objects.exclude(feedback_image="")},
    "targets": [t.target_image.name for t in Task.objects.exclude(target_image="")],
}))
"""


class Host:
    """A `manage.py` process with its own environment; its output is collected by a thread."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        threading.Thread(target=lambda: self.lines.extend(line.rstrip() for line in self.process.stdout), daemon=True).start()

    def wait_for(self, needle: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in list(self.lines)):
            assert time.monotonic() < deadline and self.process.poll() is None, "\n".join(self.lines[-40:])
            time.sleep(0.2)

    def stop(self) -> None:
        stop_process(self.process)


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def shell(env: dict[str, str], code: str) -> object:
    """What `code` printed last, as JSON, run by `manage.py shell` on that host."""
    return json.loads(manage(env, "shell", "--no-imports", "-c", code).strip().splitlines()[-1])


def wait_done(base: str, token: str, submission_id: int, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = requests.get(f"{base}/api/v1/submissions/{submission_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
        if status["status"] in ("done", "failed", "cancelled"):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(1)


def host_env(tmp_path: Path, media: Path, redis_url: str, s3: S3, prompter_port: int) -> dict[str, str]:
    return environment(
        tmp_path,
        DEBUG="true",  # the pages need no collected static files; the media view behaves as deployed
        MEDIA_ROOT=str(media),
        REDIS_URL=redis_url,
        ATELIER_BACKENDS_FILE=str(TEST_BACKENDS),
        ATELIER_PROMPTER_ALLOWED_HOSTS=f"127.0.0.1:{prompter_port}",
        ATELIER_PROMPTER_MAX_RETRIES="0",
        ATELIER_S3_BUCKET=BUCKET,
        ATELIER_S3_ENDPOINT_URL=s3.endpoint,
        ATELIER_S3_REGION="us-east-1",
        **CREDENTIALS,
    )


def get(base: str, path: str, session: str | None = None) -> requests.Response:
    cookies = {"sessionid": session} if session else {}
    return requests.get(base + path, cookies=cookies, allow_redirects=False, timeout=30)


def test_two_worker_hosts_and_a_web_host_share_only_the_bucket(
    redis_url, s3_server, prompter_server, tmp_path, example_prompts, migrated_sqlite
):
    folders = [tmp_path / name for name in ("worker-a", "worker-b", "web")]
    envs = [
        host_env(tmp_path, folder, redis_url, s3_server, int(prompter_server.base_url.split(":")[2].split("/")[0])) for folder in folders
    ]
    web_env = envs[2]
    copy_database(migrated_sqlite, Path(web_env["DATABASE_URL"].removeprefix("sqlite:///")))  # the run's migrated one (tests/once.py)
    manage(web_env, "load_tasks", str(ROOT / "tasks" / "packs" / "sample"))
    actors = shell(web_env, SETUP)
    queues = shell(web_env, "from django.conf import settings; import json; print(json.dumps(settings.ATELIER_QUEUES))")
    workers = [Host(env, "work", *queues) for env in envs[:2]]
    web = Gunicorn(web_env)
    try:
        for worker in workers:
            worker.wait_for("Listening on")
        web.wait_ready()
        base, token = f"http://127.0.0.1:{web.port}", actors["token"]
        bearer = {"Authorization": f"Bearer {token}"}
        upload = requests.post(
            f"{base}/api/v1/submissions",
            headers=bearer,
            data={"prompter": "files"},
            files={"file": ("p.jsonl", example_prompts)},
            timeout=60,
        )
        assert upload.status_code == 201, upload.text
        endpoint = requests.post(
            f"{base}/api/v1/endpoints",
            headers=bearer,
            json={"name": "local", "base_url": prompter_server.base_url, "model": "m"},
            timeout=30,
        )
        assert endpoint.status_code == 201, endpoint.text
        run = {"pack": "sample", "condition": "plain", "samples": 1, "rounds": 2, "feedback_backend": "smoke-sd"}
        started = requests.post(f"{base}/api/v1/endpoints/{endpoint.json()['id']}/runs", headers=bearer, json=run, timeout=30)
        assert started.status_code == 202, started.text
        for submission_id in (upload.json()["id"], started.json()["id"]):
            status = wait_done(base, token, submission_id)
            assert status["status"] == "done", status

        images = shell(web_env, IMAGES)
        assert images["renders"] and images["feedback"] and images["targets"]
        everything = {**images["renders"], **images["feedback"], **dict.fromkeys(images["targets"])}
        assert set(everything) <= s3_server.keys()
        for worker in workers:  # both hosts did work, each with a folder of its own
            assert any("Successfully completed" in line or "Job OK" in line for line in worker.lines), "\n".join(worker.lines[-20:])

        sessions = actors["sessions"]
        for name in everything:  # targets are public; renders and feedback images are the team's (and staff's)
            public = name in images["targets"]
            assert get(base, f"/media/{name}", sessions["stranger"]).status_code == (302 if public else 404)
            mine = get(base, f"/media/{name}", sessions["owner"])
            assert mine.status_code == 302 and mine.headers["Cache-Control"] == "private, no-store"
            body = fetch(mine.headers["Location"])
            assert body.startswith(b"\x89PNG") and (public or hashlib.sha256(body).hexdigest() in name)  # named by content
        some = next(name for name, owner in images["renders"].items() if owner == upload.json()["id"])
        assert get(base, f"/media/{some}").status_code == 404  # anonymous, unpublished
        assert get(base, f"/media/{some}", sessions["staff"]).status_code == 302
        manage(
            web_env,
            "shell",
            "-c",
            f"from evaluation.models import Submission; from submissions.services import submissions_publish; submissions_publish(submissions=Submission.objects.filter(pk={upload.json()['id']}))",
        )
        assert get(base, f"/media/{some}").status_code == 302  # published: anyone
        assert local_files(*folders) == []
    finally:
        web.stop()
        for worker in workers:
            worker.stop()
