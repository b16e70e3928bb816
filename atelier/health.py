"""For load balancers, orchestrators and operators: /healthz (the process answers), /readyz (what a request needs is
there: JSON naming each check, 503 when a required one fails) and /metrics (Prometheus text; a token or an address list).

Required is what the site cannot serve without: the database; the work queues (uploads, runs and study attempts are
refused while they are down); media storage; the judge's settings; the release key when one is configured. An
optional check only adds to some pages (the difficulty predictor, its scores): failing, it marks the site degraded and
/readyz still answers 200, so a load balancer keeps every web node for a feature the pages can do without. The cache
is reported and never fails (it fails open). A check's detail is in our words (an exception's class, never its text:
/readyz may be public); the predictor's check names the problem the staff pages show in full.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Callable

import redis
from django.conf import settings
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe

from evaluation import runtime
from tasks import difficulty
from teams.ratelimit import bearer, client_address, credential_refused

from . import metrics


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is up and answers; nothing else is asked (a load balancer's liveness probe)."""
    return JsonResponse({"status": "ok"})


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.vendor


def _queues() -> str:
    if not settings.REDIS_URL:
        return "in-process (no REDIS_URL): jobs run on the web process"
    import django_rq

    for name in settings.RQ_QUEUES:
        django_rq.get_connection(name).ping()
    return f"{len(settings.RQ_QUEUES)} queues on Redis"


def _storage() -> str:
    default_storage.exists("readyz-probe")  # a read: the filesystem's folder or the bucket answers
    return settings.STORAGES["default"]["BACKEND"].rsplit(".", 1)[1]


def _judge() -> str:
    judge = runtime.judge_config()  # the settings were checked at start-up; this builds what the workers build
    if judge.base_url and not (judge.model or judge.models):
        raise ValueError("an endpoint without a judge model")
    return "OpenAI-compatible endpoint" if judge.base_url else "offline embedding judge"


def _predictor() -> str:
    manifest, problem = difficulty.state()
    if problem:
        raise ValueError(problem)
    if not manifest:
        return "none installed"
    return f"{manifest['version']} ({manifest['label']})" if manifest.get("label") else manifest["version"]  # the demo's says so


def _release_key() -> str:
    from leaderboard.releases import key_state

    fingerprint = key_state()
    return f"Ed25519 {fingerprint[:16]}…" if fingerprint else "none: board downloads are unsigned (manage.py release_key create)"


def _cache() -> str:
    """Not a failure when down (the cache fails open): reported so the operator sees it first."""
    probe = getattr(cache, "probe", None)  # atelier.cache.RedisCache's: its reads fail open, a ping does not
    try:
        probe() if probe else cache.get("readyz-probe")
    except redis.RedisError as exc:
        return f"unreachable ({type(exc).__name__}): pages are served uncached"
    return settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[1]


CHECKS: dict[str, Callable[[], str]] = {
    "database": _database,
    "queues": _queues,
    "media_storage": _storage,
    "judge": _judge,
    "predictor": _predictor,
    "release_key": _release_key,
}
OPTIONAL = frozenset({"predictor"})  # failing, these degrade the site (200), never make it unready (module docstring)


def _checked(name: str, check: Callable[[], str]) -> dict:
    started = time.monotonic()
    try:
        answer = {"ok": True, "detail": check()}
    except Exception as exc:  # noqa: BLE001 - every failure is the check's answer, named below
        # the predictor's and the release key's reasons are ours, without a path; anything else: its class
        detail = (
            str(exc).split(": ", 1)[-1] if name == "predictor" else str(exc) if name == "release_key" else f"failed ({type(exc).__name__})"
        )
        answer = {"ok": False, "detail": detail} | ({"degraded": True} if name in OPTIONAL else {})
    return answer | {"seconds": round(time.monotonic() - started, 4)}


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {name: _checked(name, check) for name, check in CHECKS.items()}
    failed = {name for name, answer in checks.items() if not answer["ok"]}
    checks["cache"] = {"ok": True, "detail": _cache()}
    status = "unready" if failed - OPTIONAL else "degraded" if failed else "ready"
    response = JsonResponse({"status": status, "checks": checks}, status=503 if status == "unready" else 200)
    response["Cache-Control"] = "no-store"
    return response


def _allowed(request: HttpRequest) -> bool:
    token, given = settings.ATELIER_METRICS_TOKEN, bearer(request)
    if token and given and hmac.compare_digest(given.encode(), token.encode()):
        return True
    if settings.ATELIER_METRICS_ALLOW:
        try:
            address = ipaddress.ip_address(client_address(request))
        except ValueError:
            return False
        return any(address in network for network in settings.ATELIER_METRICS_ALLOW)
    return False


@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus text for a scraper that shows ATELIER_METRICS_TOKEN or comes from ATELIER_METRICS_ALLOW; a 404 to
    anyone else (and to everyone while neither is set), and a 429 to a wrong token from an address that has sent too
    many (counted like the API's, in a namespace of its own: teams/ratelimit.py)."""
    if not _allowed(request):
        if bearer(request) and credential_refused(request, "metrics-token-failures"):
            window = settings.ATELIER_TOKEN_FAILURE_WINDOW
            refusal = "an invalid token, after too many from this address\n"
            return HttpResponse(refusal, content_type="text/plain", status=429, headers={"Retry-After": str(window)})
        raise Http404("No such page")
    body, content_type = metrics.exposition()
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
