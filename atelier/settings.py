"""Settings for the AtelierEval leaderboard, read from the environment.

One file, like healthchecks' hc/settings.py: every knob is an environment variable
with a safe default for the demo, and a bad value stops start-up with a message
that names the variable instead of being guessed around.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlparse, urlunparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evaluation.queues import FIXED_QUEUES, render_queue
from evaluator.judge.config import DEMO_JUDGE_MODEL, JudgeConfig, JudgeConfigError, settings_from_environ
from evaluator.judge.official.layout import release_problems
from evaluator.judge.pricing import prices_from_environ

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    value = os.environ.get(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected true/false (1/0, yes/no, on/off)")


def envint(name: str, default: str, minimum: int = 0) -> int:
    value = os.environ.get(name, default)
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected an integer") from None
    if number < minimum:
        raise ImproperlyConfigured(f"{name}={number}: must be at least {minimum}")
    return number


def envfloat(name: str, default: str) -> float:
    value = os.environ.get(name, default)
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number") from None
    if number <= 0:
        raise ImproperlyConfigured(f"{name}={number}: must be positive")
    return number


def envurl(name: str, schemes: tuple[str, ...]) -> str:
    value = os.environ.get(name, "").strip()
    parsed = urlparse(value)
    # sqlite:///path and unix:///socket have no host; every other scheme needs one.
    if value and (parsed.scheme not in schemes or not (parsed.netloc or parsed.scheme in ("sqlite", "unix"))):
        raise ImproperlyConfigured(f"{name}={value!r}: expected a URL starting with {' or '.join(s + '://' for s in schemes)}")
    return value


DEBUG = envbool("DEBUG", "true")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "insecure-demo-key-set-SECRET_KEY-in-production"
# The demo (demo/: its scripted judge, prompter, raters and study, and `manage.py demo`, which makes a demo/demo
# superuser) is an app installed and routed only with DEBUG: a deployment has neither its routes nor its command.
# ATELIER_DEMO=false leaves it out with DEBUG too (the site as deployed, on runserver).
ATELIER_DEMO = envbool("ATELIER_DEMO", str(DEBUG))
if ATELIER_DEMO and not DEBUG:
    raise ImproperlyConfigured("ATELIER_DEMO=true needs DEBUG=true: the demo is never installed in a deployment")
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",  # runserver leaves static files to whitenoise, so `make demo` serves them as deployed
    "django.contrib.staticfiles",
    "django_rq",
    "axes",
    "tasks",  # bottom apps: the task packs, and the teams with their tokens and endpoints
    "teams",
    "evaluation",  # the evaluation layer: owns the pipeline's tables and is their only writer (docs/architecture-notes.md)
    "submissions",  # apps on top: uploads and the API, pages and downloads, expert ratings, human studies
    "leaderboard",
    "ratings",
    "studies",
    "notifications",  # e-mail to a team's members when a submission finishes, fails or is published
    *(["demo"] if ATELIER_DEMO else []),  # the demo, on top of every app; nothing imports it
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    *(["atelier.static_gzip.StaticGZip"] if DEBUG else []),  # DEBUG: static files from the source folders, gzipped
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files, compressed and with hashed names, from the app server
    "atelier.metrics.RequestMetrics",  # request latency for /metrics (atelier/metrics.py)
    "atelier.api_errors.ApiErrors",  # /api/: JSON errors, no CSRF check (bearer tokens only)
    "atelier.unstorable.RefuseUnstorableText",  # NUL or an unpaired surrogate in the address, a parameter or a JSON body: 400
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy on every page (CONTENT_SECURITY_POLICY below); not on static files
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # login lockout (last, as django-axes asks)
]

ROOT_URLCONF = "atelier.urls"
WSGI_APPLICATION = "atelier.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

_database_url = envurl("DATABASE_URL", ("sqlite", "postgres", "postgresql"))
try:
    DATABASES = {"default": dj_database_url.parse(_database_url or f"sqlite:///{BASE_DIR / 'db.sqlite3'}", conn_max_age=60)}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL: {exc}") from None
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Write-ahead log with synchronous=NORMAL: a commit no longer waits for the disk (0.6 ms -> 0.01 ms per write on
    # this machine), and readers never block the writer (the web process beside in-process jobs or workers). The
    # database cannot be corrupted; a power cut may lose the last commits. Production runs on PostgreSQL (docs/deploying.md).
    # The web process's background job thread writes beside its requests: a writer waits up to 20 s for the other,
    # and every transaction takes the write lock when it begins (IMMEDIATE), so two never deadlock upgrading a read.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", timeout=20, transaction_mode="IMMEDIATE"
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Work queues. Without REDIS_URL jobs run in this process (the demo needs only Python): a web process on a background
# thread (evaluation.workqueue.run_in_background), a command before it returns;
# with it, jobs go to RQ and workers on any machine sharing Redis, the database and the media (a bucket or MEDIA_ROOT) run them.
REDIS_URL = envurl("REDIS_URL", ("redis", "rediss", "unix"))

# Rendering backends: a JSON file of backend configs (see config/backends.json). Each enabled backend
# gets its own queue, render-<name>, so a GPU worker keeps exactly one pipeline loaded.
ATELIER_BACKENDS_FILE = Path(os.environ.get("ATELIER_BACKENDS_FILE", BASE_DIR / "config" / "backends.json"))


def _backend_names(path: Path) -> list[str]:
    try:
        backends = json.loads(path.read_text(encoding="utf-8"))["backends"]
        return [b["name"] for b in backends if b.get("enabled", True)]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ImproperlyConfigured(f"ATELIER_BACKENDS_FILE={str(path)!r}: cannot read backend names ({exc!r})") from None


ATELIER_RENDER_QUEUES = tuple(render_queue(name) for name in _backend_names(ATELIER_BACKENDS_FILE))
ATELIER_QUEUES = (*FIXED_QUEUES, *ATELIER_RENDER_QUEUES)  # evaluation/queues.py names them


def _with_timeouts(url: str) -> str:
    """A refused or unreachable Redis must fail an upload in seconds, not hang it (redis-py reads these from the URL)."""
    query = dict(parse_qsl(urlparse(url).query))
    query.setdefault("socket_connect_timeout", "5")
    query.setdefault("health_check_interval", "30")
    return urlunparse(urlparse(url)._replace(query=urlencode(query)))


RQ_QUEUES = {name: {"URL": _with_timeouts(REDIS_URL or "redis://127.0.0.1:6379/0"), "DEFAULT_TIMEOUT": 1800} for name in ATELIER_QUEUES}
RQ_SHOW_ADMIN_LINK = True


def _cache(url: str) -> dict:
    """Django's cache (API token lockout counts, agreement reports): shared by every web process on Redis,
    else per process in memory. One-second timeouts: a dead cache must not hold a request (the URL may override)."""
    if not url or url == "locmem://":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    options = {"socket_connect_timeout": 1, "socket_timeout": 1}
    return {"BACKEND": "atelier.cache.RedisCache", "LOCATION": url, "KEY_PREFIX": "atelier-cache", "OPTIONS": options}


# ATELIER_CACHE_URL: redis://, rediss:// or unix://, or locmem:// for this process's memory; unset: REDIS_URL's Redis
# when it is set, else memory.
_cache_url = os.environ.get("ATELIER_CACHE_URL", "").strip()
if _cache_url != "locmem://":
    _cache_url = envurl("ATELIER_CACHE_URL", ("redis", "rediss", "unix")) or REDIS_URL
# Template fragments ({% cache %}: the board's statistics section) stay in each process's memory: rendered once per
# board change per process, they never wait on Redis.
CACHES = {
    "default": _cache(_cache_url),
    "template_fragments": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "template-fragments"},
}
# Anonymous board pages (leaderboard/cache.py) are kept in that cache under the boards' version (a new board write
# changes the key) for at most ATELIER_BOARD_CACHE_SECONDS (what the version does not cover, e.g. a team's submission
# count, lags by up to that; 0 turns the cache and its headers off), and are sent with ETag, Last-Modified and
# `Cache-Control: public, max-age=ATELIER_BOARD_MAX_AGE`, which a proxy or CDN may keep; signed-in pages: private, no-store.
ATELIER_BOARD_CACHE_SECONDS = envint("ATELIER_BOARD_CACHE_SECONDS", "300")
ATELIER_BOARD_MAX_AGE = envint("ATELIER_BOARD_MAX_AGE", "30")

# Nothing stuck (evaluation/reconcile.py, run every ATELIER_RECONCILE_INTERVAL seconds by `manage.py scheduler`):
# a pending unit queued more than ATELIER_RECONCILE_AFTER seconds ago whose job is gone, failed, or held by a
# worker silent for ATELIER_WORKER_STALE_AFTER seconds is enqueued again. `manage.py work` heartbeats every
# ATELIER_WORKER_HEARTBEAT seconds, also while a job runs.
ATELIER_RECONCILE_INTERVAL = envint("ATELIER_RECONCILE_INTERVAL", "60", minimum=1)
ATELIER_RECONCILE_AFTER = envint("ATELIER_RECONCILE_AFTER", "120", minimum=0)
ATELIER_WORKER_HEARTBEAT = envint("ATELIER_WORKER_HEARTBEAT", "10", minimum=1)
ATELIER_WORKER_STALE_AFTER = envint("ATELIER_WORKER_STALE_AFTER", "60", minimum=2)

# The judge. With OPENAI_BASE_URL set, AtelierJudge calls that OpenAI-compatible endpoint; without it the offline
# embedding judge scores, and every page says so. Every judge setting (OPENAI_BASE_URL, OPENAI_API_KEY, ATELIER_JUDGE_*,
# ATELIER_CLIP_MODEL and _PRETRAINED, ATELIER_OFFICIAL_RELEASE; docs/configuration.md says what each does) is named, read
# and defaulted once, by JudgeConfig (evaluator/judge/config.py), which also checks the whole judge configuration below.
# ATELIER_OFFICIAL_RELEASE, a checkout of the AtelierEval release, makes the judge the release's own (route "official",
# docs/judge-vs-ateliereval.md): a folder that is not one is refused first, by what it lacks.
try:
    _judge_settings = settings_from_environ(os.environ)
except JudgeConfigError as exc:
    raise ImproperlyConfigured(str(exc)) from None
globals().update(_judge_settings)
# The demo site serves a scripted prompter and a scripted judge itself (demo/prompter.py, demo/judge.py; ATELIER_DEMO
# only) at this host:port, the address `make demo` runs the site on.
ATELIER_DEMO_PROMPTER = os.environ.get("ATELIER_DEMO_PROMPTER", "127.0.0.1:8000")
# ATELIER_DEMO_JUDGE=true (what `make demo` and `make serve` set; ATELIER_DEMO only, and only while OPENAI_BASE_URL is unset)
# judges through the production route (OpenAIJudge: rubrics, exemplars, checklists) against the demo's scripted judge,
# labelled "scripted judge (demo)" everywhere. Without it the offline embedding judge stays the default.
ATELIER_DEMO_JUDGE = envbool("ATELIER_DEMO_JUDGE", "false") and ATELIER_DEMO and not OPENAI_BASE_URL  # noqa: F821 - set just above
if ATELIER_DEMO_JUDGE:
    OPENAI_BASE_URL = f"http://{ATELIER_DEMO_PROMPTER}/demo/judge/v1"
    ATELIER_JUDGE_MODEL = DEMO_JUDGE_MODEL
    ATELIER_CLIP_PRETRAINED = ATELIER_CLIP_PRETRAINED or "random"  # noqa: F821 - no CLIP weights here: labelled smoke
    # Random weights mean nothing at any size: the demo's CLIP is the small ViT-S-32 (a third of ViT-B-32's CPU time
    # per image, most of the demo's judging time) unless ATELIER_CLIP_MODEL says otherwise.
    ATELIER_CLIP_MODEL = os.environ.get("ATELIER_CLIP_MODEL") or "ViT-S-32"
if (_release := _judge_settings["ATELIER_OFFICIAL_RELEASE"]) and (_problems := release_problems(_release)):
    raise ImproperlyConfigured(f"ATELIER_OFFICIAL_RELEASE={_release!r} is not a checkout of the release: " + "; ".join(_problems))
# What the judge's requests cost (evaluator/judge/pricing.py): ATELIER_JUDGE_PRICE_INPUT, _CACHED_INPUT and _OUTPUT
# in USD per 1M tokens, ATELIER_JUDGE_BATCH_DISCOUNT (a fraction) and ATELIER_JUDGE_PRICES_SOURCE (where and when the
# prices were read); none set: pages show tokens only and say "no prices configured".
try:
    globals().update(prices_from_environ(os.environ))
except JudgeConfigError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# The judge's batch route (evaluation/batching.py, docs/judging.md): "all" sends every new submission's judge requests
# as batch files, polled by the scheduler; "ask" lets the team choose when it submits (Submission.judge_route); lines
# that fail are sent again in a new batch or synchronously (_RETRY). Only a judge of one model on an endpoint asks the
# endpoint itself; any other judge is refused with "all" or "ask".
ATELIER_JUDGE_BATCH = os.environ.get("ATELIER_JUDGE_BATCH", "off").strip().lower() or "off"
ATELIER_JUDGE_BATCH_RETRY = os.environ.get("ATELIER_JUDGE_BATCH_RETRY", "batch").strip().lower() or "batch"
if ATELIER_JUDGE_BATCH not in ("off", "all", "ask"):
    raise ImproperlyConfigured(f"ATELIER_JUDGE_BATCH={ATELIER_JUDGE_BATCH!r}: expected off, all or ask")
if ATELIER_JUDGE_BATCH_RETRY not in ("batch", "sync"):
    raise ImproperlyConfigured(f"ATELIER_JUDGE_BATCH_RETRY={ATELIER_JUDGE_BATCH_RETRY!r}: expected batch or sync")
if ATELIER_JUDGE_BATCH != "off" and not (OPENAI_BASE_URL and len(_judge_settings["ATELIER_JUDGE_MODELS"]) <= 1 and not _release):  # noqa: F821
    raise ImproperlyConfigured(
        f"ATELIER_JUDGE_BATCH={ATELIER_JUDGE_BATCH} needs a judge of one model on an endpoint (OPENAI_BASE_URL, ATELIER_JUDGE_MODEL), "
        "not an ensemble, the offline judge or the official route"
    )
# A submission whose missing rate on any routed skill is above this finishes `incomplete`: not publishable,
# resumable with `rescore` (failed judgements of the same judge are retried; ok ones are kept).
ATELIER_MAX_MISSING_RATE = envfloat("ATELIER_MAX_MISSING_RATE", "0.05")
ATELIER_MEMORY_K = envint("ATELIER_MEMORY_K", "3")
# The prompt difficulty predictor (evaluator/difficulty, docs/difficulty.md): the artefact folder that
# `manage.py train_difficulty --pqpp PATH` writes and the pages read; absent, the pages say how to train one.
ATELIER_DIFFICULTY_MODEL = Path(os.environ.get("ATELIER_DIFFICULTY_MODEL", "").strip() or BASE_DIR / "models" / "difficulty")
try:
    JudgeConfig.from_settings(globals())  # evaluation.runtime.judge_config() builds the one the site uses
except JudgeConfigError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# Uploads: a prompt file larger than this is refused before it is parsed.
ATELIER_MAX_UPLOAD_BYTES = envint("ATELIER_MAX_UPLOAD_BYTES", str(5 * 1024 * 1024), minimum=1)
ATELIER_MAX_PROMPT_CHARS = envint("ATELIER_MAX_PROMPT_CHARS", "4000", minimum=1)
ATELIER_MAX_SAMPLES = envint("ATELIER_MAX_SAMPLES", "8", minimum=1)


# Against best-of-N gaming: submissions per team per 24 h (failed and cancelled runs do not count; 0 = no cap),
# and how many of a team's entries may be shown on one board at once (the team chooses; staff moderation is not limited).
def _code_version() -> str:
    """The deployed code's version for downloads: ATELIER_CODE_VERSION, else `git describe` of this checkout."""
    import subprocess

    try:
        found = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=BASE_DIR, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else "unknown"


ATELIER_CODE_VERSION = os.environ.get("ATELIER_CODE_VERSION") or _code_version()
# Whole-board releases (leaderboard/releases.py, docs/releases.md) are signed with this Ed25519 private key (PEM,
# made by `manage.py release_key create`; keep it out of the database and of backups anyone else reads). Without the
# file no release is made and the board page says so.
ATELIER_RELEASE_KEY = Path(os.environ.get("ATELIER_RELEASE_KEY", "").strip() or BASE_DIR / "keys" / "release-ed25519.pem")
# The site's origin (e.g. https://atelier.example.org): every link in an e-mail starts with it (notifications/links.py;
# a mail has no request to take a host from), and so do the image links in a release. Required with DEBUG off; with
# DEBUG and unset, mails link to runserver's http://127.0.0.1:8000 and releases keep the site's paths (/media/...).
ATELIER_SITE_URL = os.environ.get("ATELIER_SITE_URL", "").strip().rstrip("/")


def _is_origin(url: str) -> bool:
    parts = urlparse(url)
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https") and bool(parts.hostname) and not (parts.path or parts.query or parts.fragment or parts.username)
    )


if ATELIER_SITE_URL and not _is_origin(ATELIER_SITE_URL):
    raise ImproperlyConfigured(
        f"ATELIER_SITE_URL={ATELIER_SITE_URL!r}: expected the site's origin, http(s)://host[:port] with no path, e.g. https://atelier.example.org"
    )
if not ATELIER_SITE_URL and not DEBUG:
    raise ImproperlyConfigured(
        "ATELIER_SITE_URL must be set when DEBUG is off: the links in e-mails start with it (e.g. https://atelier.example.org)"
    )
# Operators' endpoints (atelier/health.py): /healthz and /readyz are open; /metrics answers a scraper that sends
# "Authorization: Bearer <ATELIER_METRICS_TOKEN>" or comes from an address in ATELIER_METRICS_ALLOW (comma-separated
# IPs or CIDR networks, as the rate limits see the client); with neither set it is a 404 for everyone.
ATELIER_METRICS_TOKEN = os.environ.get("ATELIER_METRICS_TOKEN", "").strip()
try:
    ATELIER_METRICS_ALLOW = tuple(
        ipaddress.ip_network(n.strip(), strict=False) for n in os.environ.get("ATELIER_METRICS_ALLOW", "").split(",") if n.strip()
    )
except ValueError as exc:
    raise ImproperlyConfigured(f"ATELIER_METRICS_ALLOW: {exc}") from None
ATELIER_DAILY_SUBMISSIONS = envint("ATELIER_DAILY_SUBMISSIONS", "10", minimum=0)
ATELIER_BOARD_SELECTION = envint("ATELIER_BOARD_SELECTION", "3", minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = ATELIER_MAX_UPLOAD_BYTES + 1024 * 1024

# Endpoint prompters (evaluation/prompting.py, queue `prompter`). Only public addresses are called unless a host is
# allow-listed here (comma-separated names, IPs or CIDR networks; evaluator/prompters/ssrf.py has the rules).
ATELIER_PROMPTER_ALLOWED_HOSTS = tuple(h.strip() for h in os.environ.get("ATELIER_PROMPTER_ALLOWED_HOSTS", "").split(",") if h.strip())
# With the demo its own host:port (ATELIER_DEMO_PROMPTER, above; not all of loopback) is allowed, so its endpoint answers.
if ATELIER_DEMO:
    ATELIER_PROMPTER_ALLOWED_HOSTS = (*ATELIER_PROMPTER_ALLOWED_HOSTS, ATELIER_DEMO_PROMPTER)
ATELIER_PROMPTER_TIMEOUT = envfloat("ATELIER_PROMPTER_TIMEOUT", "60")
ATELIER_PROMPTER_MAX_RETRIES = envint("ATELIER_PROMPTER_MAX_RETRIES", "3")  # 429 and 5xx, with backoff; Retry-After honoured
ATELIER_PROMPTER_MAX_IN_FLIGHT = envint("ATELIER_PROMPTER_MAX_IN_FLIGHT", "16", minimum=1)  # the most an endpoint may ask for
ATELIER_PROMPTER_MAX_CALLS = envint("ATELIER_PROMPTER_MAX_CALLS", "20000", minimum=1)  # per submission, HTTP requests
ATELIER_PROMPTER_MAX_TOKENS = envint("ATELIER_PROMPTER_MAX_TOKENS", "20000000", minimum=1)  # per submission, prompt + completion
ATELIER_PROMPTER_MAX_ROUNDS = envint("ATELIER_PROMPTER_MAX_ROUNDS", "10", minimum=1)
# Conditions a deployer adds to (or overrides in) evaluator/prompters/conditions.json.
ATELIER_CONDITIONS_FILE = os.environ.get("ATELIER_CONDITIONS_FILE", "") or None
# Secrets at rest (endpoint API keys): comma-separated Fernet keys, the first encrypts, all decrypt. Unset: one key
# derived from SECRET_KEY. The entry `secret-key` stands for that derived key during a rotation (docs/endpoints.md: Rotating keys).
ATELIER_SECRET_KEYS = tuple(k.strip() for k in os.environ.get("ATELIER_SECRET_KEYS", "").split(",") if k.strip())

# Login attempts are limited by django-axes: ATELIER_LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address lock that pair out for ATELIER_LOGIN_COOLOFF_MINUTES (the admin login included). API and /metrics tokens:
# see ATELIER_TOKEN_FAILURE_LIMIT in teams/ratelimit.py's policy.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("ATELIER_LOGIN_FAILURE_LIMIT", "5", minimum=1)
AXES_COOLOFF_TIME = envint("ATELIER_LOGIN_COOLOFF_MINUTES", "15", minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_IPWARE_PROXY_COUNT = envint("ATELIER_PROXY_COUNT", "0")  # reverse proxies in front of the app: whose address to trust
AXES_VERBOSE = False
# Logins are locked out by the same client address the API's token limiter uses (ATELIER_PROXY_COUNT proxies trusted):
# without it axes would see the proxy's address behind nginx and lock the username out for everyone.
AXES_CLIENT_IP_CALLABLE = "teams.ratelimit.client_address"
ATELIER_TOKEN_FAILURE_LIMIT = envint("ATELIER_TOKEN_FAILURE_LIMIT", "20", minimum=1)
ATELIER_TOKEN_FAILURE_WINDOW = envint("ATELIER_TOKEN_FAILURE_WINDOW_SECONDS", "600", minimum=1)
# Password-reset mail to one address: at most this many an hour (atelier/accounts.py), so the form cannot flood an inbox.
ATELIER_PASSWORD_RESET_LIMIT = envint("ATELIER_PASSWORD_RESET_LIMIT", "3", minimum=1)
# "Confirm your e-mail address" mail to one address (sign-up, address change): at most this many an hour, whoever asks.
ATELIER_ADDRESS_CONFIRMATION_LIMIT = envint("ATELIER_ADDRESS_CONFIRMATION_LIMIT", "1", minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "teams"
LOGOUT_REDIRECT_URL = "leaderboard"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"


def _package_dir(name: str, sub: str) -> Path:
    """A data folder inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImproperlyConfigured(f"package {name!r} is not installed: pip install -r requirements.txt")
    return Path(spec.submodule_search_locations[0]) / sub


# plotly.js comes from the installed plotly package and is served as static/vendor/plotly/plotly.min.js.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/plotly", _package_dir("plotly", "package_data"))]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
# Deployed (DEBUG off): `manage.py collectstatic` writes compressed files with content-hashed names, served by
# whitenoise with far-future caching. With DEBUG on, whitenoise serves them straight from the source folders (under
# runserver too: whitenoise.runserver_nostatic), gzipped as they leave (atelier/static_gzip.py).
# Media (renders, targets, references, attempts, exemplar images) live on the local filesystem under MEDIA_ROOT, or, with
# ATELIER_S3_BUCKET set, on S3-compatible object storage (AWS S3, MinIO, Cloudflare R2: docs/deploying.md), so render
# hosts, judge workers and web processes share no disk. Every file goes through Django's storage API either way.
ATELIER_S3_BUCKET = os.environ.get("ATELIER_S3_BUCKET", "").strip()
ATELIER_S3_URL_SECONDS = envint("ATELIER_S3_URL_SECONDS", "300", minimum=10)  # life of a presigned media URL
# "redirect": the media view answers with a presigned URL (the bytes go from the object store to the browser);
# "stream": the web process streams the object. Object storage only; the filesystem is always streamed (or nginx's).
ATELIER_MEDIA_DELIVERY = os.environ.get("ATELIER_MEDIA_DELIVERY", "redirect").strip()
if ATELIER_MEDIA_DELIVERY not in ("redirect", "stream"):
    raise ImproperlyConfigured(f"ATELIER_MEDIA_DELIVERY must be 'redirect' or 'stream', got {ATELIER_MEDIA_DELIVERY!r}")
# Published images (public, immutable) may be sent to a public bucket URL or a CDN in front of it: https://cdn.example/
ATELIER_MEDIA_PUBLIC_URL = envurl("ATELIER_MEDIA_PUBLIC_URL", ("https", "http"))


def _signature_version() -> str:
    version = os.environ.get("ATELIER_S3_SIGNATURE_VERSION", "").strip() or "s3v4"
    if version not in ("s3v4", "s3"):
        raise ImproperlyConfigured(
            f"ATELIER_S3_SIGNATURE_VERSION must be 's3v4' (Signature Version 4) or 's3' (version 2), not {version!r}"
        )
    return version


def _media_storage() -> dict:
    if not ATELIER_S3_BUCKET:
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    options = {
        "bucket_name": ATELIER_S3_BUCKET,
        "endpoint_url": envurl("ATELIER_S3_ENDPOINT_URL", ("https", "http")) or None,  # empty: AWS S3 itself
        "region_name": os.environ.get("ATELIER_S3_REGION", "").strip() or None,
        # Presigned URLs in Signature Version 4 (AWS buckets since 2020, Cloudflare R2 and MinIO accept only it); "s3"
        # (version 2) only for an old store that needs it.
        "signature_version": _signature_version(),
        "location": os.environ.get("ATELIER_S3_PREFIX", "").strip().strip("/"),
        "addressing_style": os.environ.get("ATELIER_S3_ADDRESSING_STYLE", "").strip() or None,  # "path" for MinIO
        "querystring_expire": ATELIER_S3_URL_SECONDS,
        "default_acl": None,  # the bucket's own policy; objects are private unless the deployer makes them public
        "file_overwrite": False,  # like the filesystem: a new file never replaces another under the same name
    }
    # Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or boto3's other sources: profile, instance role).
    return {"BACKEND": "atelier.storage.MediaStorage", "OPTIONS": options}


def _origin(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}"


def _media_origins() -> list[str]:
    """Where browsers fetch media from besides the site (the pages' Content-Security-Policy allows these images):
    the bucket's host, by its endpoint and addressing style, the public/CDN base, and ATELIER_MEDIA_ORIGINS."""
    extra = [o.strip() for o in os.environ.get("ATELIER_MEDIA_ORIGINS", "").split(",") if o.strip()]
    cdn = [_origin(ATELIER_MEDIA_PUBLIC_URL)] if ATELIER_MEDIA_PUBLIC_URL else []
    if not ATELIER_S3_BUCKET:
        return cdn + extra
    options = STORAGES["default"]["OPTIONS"]
    if endpoint := options.get("endpoint_url"):
        parsed = urlparse(endpoint)
        hosts = [parsed.netloc] if options.get("addressing_style") == "path" else [parsed.netloc, f"{ATELIER_S3_BUCKET}.{parsed.netloc}"]
        return [f"{parsed.scheme}://{host}" for host in hosts] + cdn + extra
    region = options.get("region_name")
    aws = ["s3.amazonaws.com", *([f"s3.{region}.amazonaws.com"] if region else [])]
    return [f"https://{host}" for host in aws] + [f"https://{ATELIER_S3_BUCKET}.{host}" for host in aws] + cdn + extra


STORAGES = {
    "default": _media_storage(),
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
MEDIA_URL = "media/"
ATELIER_MEDIA_ORIGINS = _media_origins()
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "media"))
# Media (renders, targets) are served through a view that checks who may see them. With a front web server,
# ATELIER_MEDIA_ACCEL_REDIRECT=/protected-media/ makes that view answer with X-Accel-Redirect (nginx serves the file).
ATELIER_MEDIA_ACCEL_REDIRECT = os.environ.get("ATELIER_MEDIA_ACCEL_REDIRECT", "")
if ATELIER_MEDIA_ACCEL_REDIRECT and ATELIER_S3_BUCKET:
    raise ImproperlyConfigured("ATELIER_MEDIA_ACCEL_REDIRECT serves files from a local folder; with ATELIER_S3_BUCKET leave it empty")

# HTTPS. Deployed (DEBUG off) the defaults are the safe ones and `manage.py check --deploy` is clean; each can be
# set from the environment (e.g. SECURE_SSL_REDIRECT=false when the proxy redirects already).
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", str(not DEBUG))
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", str(not DEBUG))
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", str(not DEBUG))
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "0" if DEBUG else str(365 * 24 * 3600))
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", str(not DEBUG))
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", str(not DEBUG))
if envbool("ATELIER_BEHIND_TLS_PROXY", "false"):  # the proxy terminates TLS and says so in X-Forwarded-Proto
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Links the site builds (API replies, downloads) take host and port from the Host header, which the shipped nginx
# config passes as the client sent it ($http_host). A proxy that rewrites Host and says the original in
# X-Forwarded-Host / X-Forwarded-Port instead: ATELIER_USE_X_FORWARDED_HOST=true (only behind a proxy that sets them).
USE_X_FORWARDED_HOST = USE_X_FORWARDED_PORT = envbool("ATELIER_USE_X_FORWARDED_HOST", "false")
SILENCED_SYSTEM_CHECKS = [c.strip() for c in os.environ.get("ATELIER_SILENCED_CHECKS", "").split(",") if c.strip()]

# Content-Security-Policy (django-csp). Scripts only from this site's static files: no inline script, no inline event
# handler, no eval (select boxes submit through static/js/autosubmit.js). Styles may also be inline, because plotly.js
# writes <style> elements and style attributes as it draws (plotly/plotly.js#7543); its heatmaps are data: images.
# django-rq's staff pages carry inline scripts of their own and are left out. tests/test_nginx.py loads the pages,
# charts included, in Chromium and counts the violations it reports.
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/django-rq/"],
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", *ATELIER_MEDIA_ORIGINS],  # media redirected to the bucket or a CDN
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# E-mail (notifications/: a team's members are told when a submission finishes, fails or is published; each may opt out).
# EMAIL_BACKEND: a dotted path or console, smtp, file, locmem, dummy; unset: the console (messages printed to the
# sending process's output) with DEBUG, SMTP without it. The links in a message start with ATELIER_SITE_URL.
_EMAIL_BACKENDS = {name: f"django.core.mail.backends.{name}.EmailBackend" for name in ("console", "smtp", "file", "locmem", "dummy")}
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "").strip() or ("console" if DEBUG else "smtp")
EMAIL_BACKEND = _EMAIL_BACKENDS.get(EMAIL_BACKEND, EMAIL_BACKEND)
if "." not in EMAIL_BACKEND:
    raise ImproperlyConfigured(f"EMAIL_BACKEND={EMAIL_BACKEND!r}: expected a dotted path or one of {', '.join(_EMAIL_BACKENDS)}")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost").strip()
EMAIL_PORT = envint("EMAIL_PORT", "25", minimum=1)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "false")  # STARTTLS, usually on port 587
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", "false")  # TLS from the first byte, usually on port 465
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", "10", minimum=1)  # seconds: a dead mail server holds the sending job no longer
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "").strip() or "AtelierEval <noreply@localhost>"
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH", "").strip() or None  # the file backend's folder

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # Third-party libraries (open_clip, diffusers) chat at INFO; only our own packages log at LOG_LEVEL.
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        name: {"level": os.environ.get("LOG_LEVEL", "INFO")}
        for name in (
            "evaluator",
            "evaluation",
            "submissions",
            "tasks",
            "leaderboard",
            "ratings",
            "studies",
            "teams",
            "notifications",
            "atelier",
            "demo",
        )
    },
}
