"""nginx in front of gunicorn, as deploy/nginx/atelier.conf sets it up: that file itself, its @NAME@ placeholders filled
with free ports and temporary paths, run by Debian's nginx.

One deployment per module: nginx (in the foreground, with its own prefix, pid and temporary paths; TLS with a
certificate made here) in front of one gunicorn worker in the production profile (DEBUG off, collectstatic,
whitenoise, ATELIER_PROXY_COUNT=1, ATELIER_MEDIA_ACCEL_REDIRECT) on a throw-away SQLite database holding the sample
pack, an evaluated and published submission, the brief-verbatim baseline, expert ratings and a private render.
Every request goes to 127.0.0.1 (from 127.0.0.x source addresses); every loop and wait is bounded.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from django.conf import settings

from tests.once import copy_database

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "deploy" / "nginx" / "atelier.conf"
REQUIRED = os.environ.get("ATELIER_REQUIRE_SERVICES") == "1" or os.environ.get("ATELIER_REQUIRE_BROWSER") == "1"
# Settings this module decides itself: none is inherited from the environment the tests run in.
NOT_INHERITED = (
    "ATELIER_",
    "DATABASE_URL",
    "REDIS_URL",
    "OPENAI_",
    "SECURE_",
    "CSRF_",
    "SESSION_",
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "STATIC_ROOT",
    "MEDIA_ROOT",
)
TOKEN_FAILURE_LIMIT = 20  # ATELIER_TOKEN_FAILURE_LIMIT's default (README, "Deploying")
SLOW_CLIENTS = 4

SEED = """
import io, json
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from PIL import Image
from evaluation import runtime
from ratings.services import expert_ratings_import
from submissions.baselines import baseline_create
from evaluation.models import PromptEntry, Render, Submission
from submissions.services import submission_create, submissions_publish, team_create, token_create
from tasks.loaders import read_own_pack
from tasks.services import pack_save
from tasks.targets import targets_render

pack, _ = pack_save(data=read_own_pack(settings.BASE_DIR / "tasks/packs/sample"))
targets_render(pack=pack, backend=next(iter(runtime.backend_configs().values())), candidates=1)
pack.refresh_from_db()
owner = get_user_model().objects.create_user("owner", password="pw-owner-123")
get_user_model().objects.create_user("stranger", password="pw-stranger-123")
team = team_create(user=owner, name="Pixel Poets")
prompts = settings.BASE_DIR / "examples/demo_prompts.jsonl"
shown = submission_create(team=team, pack=pack, prompter="Example prompter", filename=prompts.name, data=prompts.read_bytes())
baseline = baseline_create(pack=pack, baseline="brief-verbatim")
assert submissions_publish(submissions=Submission.objects.filter(pk__in=[shown.pk, baseline.pk])) == 2
dev = set(pack.tasks.filter(split="dev").values_list("task_id", flat=True))  # hidden tasks need a hidden-item rater
lines = (settings.BASE_DIR / "examples/demo_expert_ratings.jsonl").read_text().splitlines()
ratings = [l for l in lines if l.strip() and json.loads(l)["task_id"] in dev]
assert expert_ratings_import(submission=shown, filename="ratings.jsonl", data="\\n".join(ratings).encode()) > 0
private = Submission.objects.create(team=team, pack=pack, prompter="private", status="done")
entry = PromptEntry.objects.create(submission=private, task=pack.tasks.get(task_id="oe-s01"), text="bread")
buffer = io.BytesIO()
Image.new("RGB", (8, 8), (200, 20, 30)).save(buffer, format="PNG")
render = Render(entry=entry, backend="smoke-sd", image_index=0, seed=1, config_hash="h", prompt_sha="s", status="ok")
render.image.save("private.png", ContentFile(buffer.getvalue()))
public = Render.objects.filter(entry__submission=shown, status="ok").exclude(image="").first()
token = token_create(team=team, name="nginx")[1]
print(json.dumps({"shown": shown.pk, "private": private.pk, "private_image": render.image.name, "public_image": public.image.name, "token": token}))
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if found is None:
        if REQUIRED:
            pytest.fail("nginx is required (ATELIER_REQUIRE_SERVICES=1 or ATELIER_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("nginx not installed (apt-get install nginx)")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that the test's own clients trust, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "tls.crt", folder / "tls.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


def site_config(values: dict[str, str]) -> str:
    """deploy/nginx/atelier.conf with its placeholders filled; every placeholder is named, and none is left over."""
    text = SITE.read_text(encoding="utf-8")
    for name, value in values.items():
        assert f"@{name}@" in text, f"{SITE} has no @{name}@ placeholder"
        text = text.replace(f"@{name}@", value)
    left = [line for line in text.splitlines() if re.search(r"@[A-Z_]+@", line) and not line.lstrip().startswith("#")]
    assert not left, f"placeholders left unfilled in {SITE}: {left}"
    return text


def main_config(folder: Path, site: Path) -> str:
    """The test's nginx.conf around the site file, as Debian's /etc/nginx/nginx.conf includes sites-enabled/."""
    mime = Path("/etc/nginx/mime.types")
    temp = folder / "nginx-temp"
    temp.mkdir()
    temp_paths = "\n".join(f"    {kind}_temp_path {temp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""  # root: workers read the tmp files
    return f"""daemon off;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "nginx-error.log"} warn;
{user}
events {{ worker_connections 256; }}
http {{
    {f"include {mime};" if mime.exists() else ""}
    default_type application/octet-stream;
    access_log {folder / "nginx-access.log"};
{temp_paths}
    include {site};
}}
"""


def environment(folder: Path, https_port: int) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED)}
    return keep | {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "127.0.0.1",
        "CSRF_TRUSTED_ORIGINS": f"https://127.0.0.1:{https_port}",
        "ATELIER_SITE_URL": f"https://127.0.0.1:{https_port}",
        "ATELIER_BEHIND_TLS_PROXY": "true",
        "ATELIER_PROXY_COUNT": "1",
        "ATELIER_MEDIA_ACCEL_REDIRECT": "/protected-media/",
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "STATIC_ROOT": str(folder / "static"),
        "MEDIA_ROOT": str(folder / "media"),
        "ATELIER_BACKENDS_FILE": str(ROOT / "tests" / "backends-test.json"),
    }


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, f"manage.py {args[0]}: {result.stdout}{result.stderr}"
    return result.stdout


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Site:
    folder: Path
    https: int
    http: int
    gunicorn: int
    tls: ssl.SSLContext
    seeded: dict
    processes: list = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.https}"

    def connection(self, *, port: int | None = None, tls: bool = True, source: str = "127.0.0.1", timeout: float = 20.0):
        if tls:
            return http.client.HTTPSConnection(
                "127.0.0.1", port or self.https, timeout=timeout, source_address=(source, 0), context=self.tls
            )
        return http.client.HTTPConnection("127.0.0.1", port or self.http, timeout=timeout, source_address=(source, 0))


class Visitor:
    """A browser-less client with its own source address on the loopback network and its own cookies."""

    def __init__(self, site: Site, source: str = "127.0.0.1"):
        self.site, self.source, self.cookies = site, source, SimpleCookie()

    def request(
        self, method: str, path: str, body: bytes | None = None, port: int | None = None, tls: bool = True, **headers: str
    ) -> Reply:
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={m.value}" for k, m in self.cookies.items())
        connection = self.site.connection(port=port, tls=tls, source=self.source)
        try:
            connection.request(method, path, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()})
            response = connection.getresponse()
            reply = Reply(response.status, response.headers, response.read())
        finally:
            connection.close()
        for cookie in reply.headers.get_all("Set-Cookie") or []:
            self.cookies.load(cookie)
        return reply

    def get(self, path: str, **headers: str) -> Reply:
        return self.request("GET", path, **headers)

    def log_in(self, username: str, password: str) -> None:
        page = self.get("/accounts/login/").body.decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = f"csrfmiddlewaretoken={token}&username={username}&password={password}".encode()
        reply = self.request(
            "POST",
            "/accounts/login/",
            body=form,
            Content_Type="application/x-www-form-urlencoded",
            Origin=self.site.origin,
            Referer=f"{self.site.origin}/accounts/login/",
        )
        assert reply.status == 302 and "sessionid" in self.cookies, (reply.status, reply.body[:500])


def wait_for(what: str, ready, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{what} exited: {log.read_text()[-3000:]}"
        try:
            if ready():
                return
        except OSError:
            pass  # not listening yet: try again until the deadline
        time.sleep(0.3)
    pytest.fail(f"{what} not ready after {timeout} s: {log.read_text()[-3000:]}")


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as output:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> None:
    process.terminate()  # nginx: fast shutdown, the master stops its worker; gunicorn: stops its worker
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


def nginx_command(nginx: str, folder: Path, ports: dict[str, int]) -> list[str]:
    """Write the site file (this repository's, filled in) and the main file around it; `nginx -t` must accept them."""
    cert, key = self_signed_certificate(folder)
    values = {
        "SERVER_NAME": "127.0.0.1",
        "HTTP_LISTEN": f"127.0.0.1:{ports['http']}",
        "HTTPS_LISTEN": f"127.0.0.1:{ports['https']}",
        "UPSTREAM": f"127.0.0.1:{ports['gunicorn']}",
        "MEDIA_ROOT": str(folder / "media"),
        "TLS_CERTIFICATE": str(cert),
        "TLS_CERTIFICATE_KEY": str(key),
    }
    (folder / "atelier.conf").write_text(site_config(values))
    (folder / "nginx.conf").write_text(main_config(folder, folder / "atelier.conf"))
    command = [nginx, "-p", str(folder), "-e", str(folder / "nginx-error.log"), "-c", str(folder / "nginx.conf")]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    return command


def trusting(certificate: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certificate))
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT  # a self-signed leaf is its own trust anchor
    return context


@pytest.fixture(scope="module")
def site(tmp_path_factory, migrated_sqlite, collected_static):
    nginx, folder = nginx_binary(), tmp_path_factory.mktemp("nginx")
    ports = {"https": free_port(), "http": free_port(), "gunicorn": free_port()}
    env = environment(folder, ports["https"]) | {"STATIC_ROOT": str(collected_static)}  # the run's, read only (tests/once.py)
    copy_database(migrated_sqlite, folder / "db.sqlite3")
    seeded = json.loads(manage(env, "shell", "-c", SEED).strip().splitlines()[-1])
    front_command = nginx_command(nginx, folder, ports)
    result = Site(folder, ports["https"], ports["http"], ports["gunicorn"], trusting(folder / "tls.crt"), seeded)
    # One sync worker: the rate limit's counts stay in its memory whatever cache the environment would name, and
    # one worker is the easiest to hold with slow clients, so nginx has the most to prove.
    gunicorn = [
        sys.executable,
        "-m",
        "gunicorn",
        "atelier.wsgi",
        *("-c", str(ROOT / "deploy" / "gunicorn.conf.py")),  # the shipped settings; the options below override its own
        "--bind",
        f"127.0.0.1:{ports['gunicorn']}",
        "--workers",
        "1",
        "--timeout",
        "60",
    ]
    result.processes.append(start(gunicorn, env, folder / "gunicorn.log"))
    try:
        gunicorn_answers(result, timeout=60)
        result.processes.append(start(front_command, env, folder / "nginx.log"))
        wait_for("nginx", lambda: Visitor(result).get("/tasks/").status == 200, result.processes[1], folder / "nginx-error.log", timeout=20)
        yield result
    finally:
        for process in reversed(result.processes):
            stop(process)
        print((folder / "nginx-error.log").read_text()[-3000:] if (folder / "nginx-error.log").exists() else "")


def gunicorn_answers(site: Site, timeout: float) -> None:
    """Wait until gunicorn, asked directly, serves a page."""
    direct = Visitor(site)

    def ready() -> bool:
        return direct.get("/tasks/", port=site.gunicorn, tls=False, X_Forwarded_Proto="https").status == 200

    wait_for("gunicorn", ready, site.processes[0], site.folder / "gunicorn.log", timeout=timeout)


def test_plain_http_is_redirected_and_an_oversized_upload_stops_at_nginx(site):
    reply = Visitor(site).request("GET", "/tasks/?page=2", port=site.http, tls=False)
    assert reply.status == 301 and reply.headers["Location"] == "https://127.0.0.1/tasks/?page=2"
    limit = int(re.search(r"^\s*client_max_body_size (\d+)m;", SITE.read_text(), re.M).group(1)) * 1024 * 1024
    assert limit == settings.DATA_UPLOAD_MAX_MEMORY_SIZE  # the upload limit plus its form, as Django reads it
    connection = site.connection()
    try:
        connection.putrequest("POST", "/api/v1/submissions")
        connection.putheader("Content-Length", str(limit + 1))
        connection.endheaders()  # no body: nginx answers from the Content-Length alone
        assert connection.getresponse().status == 413
    finally:
        connection.close()


def test_an_over_long_api_address_is_a_json_414_at_every_length(site):
    """Past Django's limit (4,096 bytes) Django answers, past nginx's buffer (8 KiB) nginx does: JSON from both, where
    bare gunicorn's default limit (4,094) answered HTML before Django saw the request."""
    for size, says in ((4_000, None), (6_000, "6,0"), (9_000, "over 8 KiB")):
        path = "/api/v1/boards?pack=" + "x" * (size - len("/api/v1/boards?pack="))
        reply = Visitor(site).get(path)
        if says is None:
            assert reply.status == 404 and json.loads(reply.body)["error"].startswith("no board"), reply.body[:200]
            continue
        assert reply.status == 414 and reply.headers["Content-Type"] == "application/json", (size, reply.status, reply.body[:200])
        assert says in json.loads(reply.body)["error"] and "4,096" in json.loads(reply.body)["error"]


def test_links_the_site_builds_keep_the_scheme_host_and_port_nginx_was_reached_on(site):
    """The site is on a port other than 443 here: absolute links (a submission's status_url and page_url, the API's
    servers and every breakdown image, each built from the request) must name it."""
    visitor = Visitor(site)
    status = visitor.get(f"/api/v1/submissions/{site.seeded['shown']}", Authorization=f"Bearer {site.seeded['token']}")
    assert status.status == 200, status.body[:300]
    links = json.loads(status.body)
    assert site.https != 443 and links["status_url"] == f"{site.origin}/api/v1/submissions/{site.seeded['shown']}"
    assert links["page_url"] == f"{site.origin}/submissions/{site.seeded['shown']}/"
    spec = json.loads(visitor.get("/api/v1/openapi.json").body)
    assert spec["servers"] == [{"url": f"{site.origin}/"}]
    rows = visitor.get(f"/submissions/{site.seeded['shown']}/breakdown.jsonl").body.decode().splitlines()
    urls = {json.loads(row)["image_url"] for row in rows} - {""}
    assert urls and all(url.startswith(f"{site.origin}/media/") for url in urls), sorted(urls)[:3]


def test_media_is_checked_by_django_and_sent_by_nginx(site):
    name = site.seeded["private_image"]
    owner, stranger = Visitor(site), Visitor(site)
    owner.log_in("owner", "pw-owner-123")
    stranger.log_in("stranger", "pw-stranger-123")
    assert Visitor(site).get(f"/media/{name}").status == 404 and stranger.get(f"/media/{name}").status == 404
    sent = owner.get(f"/media/{name}")
    assert sent.status == 200 and sent.body == (site.folder / "media" / name).read_bytes()
    assert sent.headers["Content-Type"] == "image/png" and sent.headers["Cache-Control"] == "private, no-store"
    assert sent.headers["X-Content-Type-Options"] == "nosniff" and "X-Accel-Redirect" not in sent.headers
    # Django only points at the file: asked past nginx, it answers with the header and no bytes.
    pointed = owner.get(f"/media/{name}", port=site.gunicorn, tls=False, X_Forwarded_Proto="https")
    assert pointed.status == 200 and pointed.body == b"" and pointed.headers["X-Accel-Redirect"] == f"/protected-media/{name}"
    assert owner.get(f"/protected-media/{name}").status == 404  # internal: nobody reaches the files around the check
    public = Visitor(site).get(f"/media/{site.seeded['public_image']}")
    assert public.status == 200 and public.body[:4] == b"\x89PNG" and "immutable" in public.headers["Cache-Control"]


class SlowBodies:
    """Clients that send a login POST's headers, then its body a byte every 0.1 s until stopped (never all of it).

    The form carries a CSRF cookie and a trusted Origin, so a Django that gets the request reads the body."""

    def __init__(self, site: Site, *, port: int, tls: bool):
        self.site, self.stop, self.errors, self.sent = site, threading.Event(), [], [0] * SLOW_CLIENTS
        secret = secrets.token_hex(16)
        head = (
            f"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: {site.origin}\r\nX-Forwarded-Proto: https\r\n"
            f"Cookie: csrftoken={secret}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n"
        )
        self.sockets = []
        for _ in range(SLOW_CLIENTS):
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            self.sockets.append(site.tls.wrap_socket(raw, server_hostname="127.0.0.1") if tls else raw)
            self.sockets[-1].sendall(head.encode())
        self.thread = threading.Thread(target=self._trickle, name="slow-bodies")
        self.thread.start()

    def _trickle(self) -> None:
        try:
            while not self.stop.wait(0.1):
                for index, client in enumerate(self.sockets):
                    client.sendall(b"x")
                    self.sent[index] += 1
        except OSError as exc:  # a server that drops a slow client ends the trickle: the test reports it
            self.errors.append(exc)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        for client in self.sockets:
            client.close()


def timed_get(site: Site, *, port: int, tls: bool, timeout: float) -> float:
    """Seconds a GET of the login page takes, or `timeout` when it has not been answered by then."""
    started = time.monotonic()
    connection = site.connection(port=port, tls=tls, timeout=timeout)
    try:
        connection.request("GET", "/accounts/login/", headers={"X-Forwarded-Proto": "https"})
        assert connection.getresponse().status == 200
    except TimeoutError:
        return timeout
    finally:
        connection.close()
    return time.monotonic() - started


def test_slow_body_clients_do_not_delay_a_page_behind_nginx(site):
    quiet = timed_get(site, port=site.https, tls=True, timeout=10)
    slow = SlowBodies(site, port=site.https, tls=True)
    try:
        time.sleep(0.5)  # every slow client is in the middle of its body
        loaded = max(timed_get(site, port=site.https, tls=True, timeout=10) for _ in range(3))
        time.sleep(0.3)
    finally:
        slow.close()
    assert not slow.errors and min(slow.sent) >= 5, (slow.errors, slow.sent)  # they kept sending while measured
    # The same clients straight at gunicorn hold its worker: the page waits for them (the measurement can fail).
    bare = SlowBodies(site, port=site.gunicorn, tls=False)
    try:
        time.sleep(0.5)
        held = timed_get(site, port=site.gunicorn, tls=False, timeout=3)
    finally:
        bare.close()
    print(
        f"login page: {quiet:.3f} s quiet, {loaded:.3f} s behind nginx with {SLOW_CLIENTS} slow-body clients, "
        f"{held:.3f} s{' (gave up)' if held >= 3 else ''} from bare gunicorn with the same clients"
    )
    assert loaded < 1.0 and held > 1.0
    gunicorn_answers(site, timeout=30)  # free again for the next test


def test_forged_forwarded_for_headers_do_not_escape_the_token_lockout(site):
    attacker, bystander = Visitor(site, source="127.0.0.2"), Visitor(site, source="127.0.0.3")
    statuses = []
    for n in range(TOKEN_FAILURE_LIMIT + 1):
        forged = {"X_Forwarded_For": f"203.0.113.{n}", "Authorization": f"Bearer atl_wrong{n}"}
        statuses.append(attacker.get("/api/v1/submissions/1", **forged).status)
    print(f"bad tokens answered 401 before the lockout: {statuses.count(401)}; then {statuses[-1]}")
    assert statuses == [401] * TOKEN_FAILURE_LIMIT + [429]
    locked = attacker.get("/api/v1/submissions/1", X_Forwarded_For="198.51.100.7", Authorization="Bearer atl_wrong")
    assert locked.status == 429 and int(locked.headers["Retry-After"]) > 0
    # Counted by the address nginx saw, not by nginx's own: another client is not locked out.
    assert bystander.get("/api/v1/submissions/1", Authorization="Bearer atl_wrong").status == 401


POLICY = {"default-src": "'self'", "script-src": "'self'", "object-src": "'none'", "base-uri": "'self'", "frame-ancestors": "'none'"}


def test_pages_carry_the_content_security_policy(site):
    for path in ("/", "/tasks/", "/judge/", f"/submissions/{site.seeded['shown']}/", "/accounts/login/"):
        reply = Visitor(site).get(path)
        assert reply.status == 200, path
        policy = dict(d.strip().split(" ", 1) for d in reply.headers["Content-Security-Policy"].split(";"))
        assert POLICY.items() <= policy.items() and "unsafe-eval" not in str(policy), (path, policy)
        assert "max-age=31536000" in reply.headers["Strict-Transport-Security"]


def csp_violations(entries: list[dict]) -> list[str]:
    return [e["message"] for e in entries if "Content Security Policy" in e["message"]]


def visit_chart_pages(browser, site: Site) -> list[str]:
    """The public pages, each until plotly.js has drawn its chart; the CSP violations Chromium logged."""
    from selenium.webdriver.common.by import By

    charts = {
        "/": "#length-scatter .main-svg",
        "/tasks/": "#coverage .main-svg",
        f"/submissions/{site.seeded['shown']}/": "#tag-chart .main-svg",
    }
    violations = []
    for path, chart in [*charts.items(), ("/judge/", None)]:
        browser.driver.get(site.origin + path)
        browser.wait_loaded()
        if chart:
            browser.wait(lambda d, chart=chart: d.find_elements(By.CSS_SELECTOR, chart), timeout=30)
        violations += csp_violations(browser.driver.get_log("browser"))
    return violations


def visit_as_owner(browser, site: Site) -> list[str]:
    """Log in through the form, open the private submission until its images (X-Accel-Redirect) have loaded."""
    browser.driver.get(site.origin + "/accounts/login/")
    browser.find("#id_username").send_keys("owner")
    browser.find("#id_password").send_keys("pw-owner-123")
    browser.click_and_wait("main form button[type=submit]")
    browser.driver.get(f"{site.origin}/submissions/{site.seeded['private']}/")
    browser.wait_loaded()
    browser.wait(lambda d: d.execute_script("return [...document.images].filter(i => i.naturalWidth > 0).length") > 0)
    return csp_violations(browser.driver.get_log("browser"))


def test_pages_and_their_charts_raise_no_csp_violations_in_chromium(site, site_browser):
    browser = site_browser
    driver = browser.driver
    driver.execute_cdp_cmd("Security.setIgnoreCertificateErrors", {"ignore": True})  # the certificate made above
    violations = visit_chart_pages(browser, site) + visit_as_owner(browser, site)
    print(f"CSP violations reported by Chromium on 6 pages (board, tasks, submission, judge, login, private submission): {len(violations)}")
    assert violations == []
    # The board's pickers submit through static/js/autosubmit.js, not an inline handler.
    driver.get(site.origin + "/")
    browser.wait_loaded()
    driver.execute_script("document.querySelector('select[name=judge]').dispatchEvent(new Event('change', {bubbles: true}))")
    browser.wait(lambda d: "judge=" in d.current_url)
    # And the log does report a violation: an inline script is refused.
    driver.execute_script("const s = document.createElement('script'); s.textContent = 'window.inlineRan = true'; document.body.append(s);")
    assert driver.execute_script("return window.inlineRan === undefined") and len(csp_violations(driver.get_log("browser"))) == 1


def test_login_lockout_counts_the_address_nginx_saw(site):
    """django-axes asks the same client_address as the token limiter: five bad passwords from one client lock that
    client out for the username, and the same person logging in from another address is not locked out."""
    attacker, owner = Visitor(site, source="127.0.0.4"), Visitor(site, source="127.0.0.5")

    def attempt(visitor: Visitor, password: str) -> int:
        page = visitor.get("/accounts/login/").body.decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = f"csrfmiddlewaretoken={token}&username=stranger&password={password}".encode()
        return visitor.request(
            "POST",
            "/accounts/login/",
            body=form,
            Content_Type="application/x-www-form-urlencoded",
            Origin=site.origin,
            Referer=f"{site.origin}/accounts/login/",
        ).status

    failed = [attempt(attacker, f"wrong-{n}") for n in range(5)]
    assert attempt(attacker, "pw-stranger-123") == 429, failed  # locked out: even the right password is refused
    assert attempt(owner, "pw-stranger-123") == 302  # another address: the user is not locked out for everyone
