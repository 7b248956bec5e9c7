"""Wattledger settings, read from the environment (see README, "Configuration").

Defaults give the embedded set-up (SQLite under ``var/``, a Celery broker on
the filesystem); production sets ``DATABASE_URL``, ``CELERY_BROKER_URL`` and
``SECRET_KEY``. Bad values stop start-up with a message naming the variable.
"""

from __future__ import annotations

import importlib.util
import secrets
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int, env_list, env_rate, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("WATTLEDGER_VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        if len(key) < 50 or len(set(key)) < 5:
            raise ImproperlyConfigured("SECRET_KEY must be at least 50 characters with at least 5 distinct ones")
        return key
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    # Development only: a key generated once and kept under var/, so logins survive restarts.
    key_file = VAR_DIR / "dev-secret-key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(64))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as our own static files
    "axes",  # password-login protection: lockouts after repeated failures
    "fleets",
    "common",
    "governance",
    "grid",
    "telemetry",
    "accounting",
    "reports",
    "scope2",
    "advice",
    "scenarios",
    "dashboards",
]
# The demo app (the demo organization, `manage.py seed_demo`, the backfill notice on every page) is
# installed only where the demo runs: `make demo` and the tests (DEBUG, or DEMO_ENABLED=1), and the
# compose file's demo. No other app imports it, so a production install without it loses nothing.
DEMO_ENABLED = env_bool("DEMO_ENABLED", DEBUG)
if DEMO_ENABLED:
    INSTALLED_APPS.append("demo")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # One thread of each web process is kept for /healthz; a busy process answers 503, never a hang.
    "config.middleware.HealthReserved",
    # A database or broker that is down answers 503 with Retry-After, not 500.
    "config.middleware.ServiceUnavailable",
    # Serves collected static files (plotly.js, CSS, API docs assets) from gunicorn: no CDN, no extra server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: answers a locked-out login attempt with 429.
    "axes.middleware.AxesMiddleware",
]

# Request threads per web process (gunicorn's gthread workers, config/gunicorn.conf.py); one is kept for /healthz.
WEB_THREADS = env_int("WEB_THREADS", 8, minimum=2)
# Seconds a request waits for a free thread before it is answered 503 with Retry-After (0: at once; a wait
# holds a thread of its own, so keep it short).
WEB_BUSY_WAIT_S = env_int("WEB_BUSY_WAIT_S", 0, minimum=0)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
                # "backfilling: n of 14 days" while `make demo` still fills the demo's history.
                *(["demo.context_processors.demo_backfill"] if DEMO_ENABLED else []),
            ],
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL") or "sqlite:///wattledger.sqlite3", var_dir=VAR_DIR)}
# SQLite: how long a write waits for another one to finish before "database is locked" (answered 503 with
# Retry-After). bin/run-demo gives its web server less than the collectors' request timeout (10 s), so that a
# live batch queued behind the backfill's writes is told to come back rather than timed out.
SQLITE_BUSY_TIMEOUT_S = env_int("SQLITE_BUSY_TIMEOUT_S", 30, minimum=1)
if "sqlite" in str(DATABASES["default"]["ENGINE"]):
    sqlite_options: dict[str, object] = {**DATABASES["default"]["OPTIONS"], "timeout": SQLITE_BUSY_TIMEOUT_S}  # type: ignore[dict-item]
    DATABASES["default"]["OPTIONS"] = sqlite_options
# Fail fast on PostgreSQL: the server cancels a statement past the timeout (0: none), and TCP
# keepalives find a server or network that vanished without closing the connection (~60 s).
DATABASE_STATEMENT_TIMEOUT_S = env_int("DATABASE_STATEMENT_TIMEOUT_S", 30, minimum=0)
# Memory a sort or hash of one query step may take before it spills to disk (PostgreSQL's work_mem; 0: the
# server's own, 4 MB by default). The reports group 100k+ endpoint-hours and ledger lines: at 4 MB the
# comparison by load sorts them on disk (bench/README.md).
DATABASE_WORK_MEM_MB = env_int("DATABASE_WORK_MEM_MB", 32, minimum=0)
# PostgreSQL's JIT compilation of a query's expressions (off: the server's own setting is left as it is only
# when this is on). The reports' queries of 100 ms-1 s over 100k+ lines pass its cost threshold and spent
# ~250 ms compiling each, more than it saved (bench/README.md).
DATABASE_JIT = env_bool("DATABASE_JIT", False)
if "postgresql" in str(DATABASES["default"]["ENGINE"]):
    work_mem = f" -c work_mem={DATABASE_WORK_MEM_MB}MB" if DATABASE_WORK_MEM_MB else ""
    jit = "" if DATABASE_JIT else " -c jit=off"
    DATABASES["default"]["OPTIONS"] = {
        "options": f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT_S * 1000}{work_mem}{jit}",
        **{"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3},
        **DATABASES["default"]["OPTIONS"],  # type: ignore[dict-item]
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes checks every password login (the sign-in page and the admin's) first.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # plotly.js as shipped inside the plotly package: the dashboards load it from here, never a CDN.
    ("plotly", Path(importlib.util.find_spec("plotly").origin).parent / "package_data"),  # type: ignore[union-attr,arg-type]
]

# --- Security: production defaults, relaxed only by explicit variables ---------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
# The preload flag only takes effect once the domain is submitted to the browsers' list.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    # Only behind a proxy that sets X-Forwarded-Proto itself and strips the client's.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# /healthz is probed over plain HTTP by load balancers and orchestrators.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- Celery --------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "filesystem://"
if not CELERY_BROKER_URL.startswith(("filesystem://", "redis://", "rediss://", "amqp://")):
    raise ImproperlyConfigured(
        f"CELERY_BROKER_URL={CELERY_BROKER_URL!r} is not supported; use redis://host:port/db, amqp://, or filesystem://"
    )
CELERY_BROKER_FOLDER = VAR_DIR / "celery" / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport: one folder is both in- and out-box, so the
    # web server, worker and beat of one machine exchange messages with no server.
    CELERY_BROKER_FOLDER.mkdir(parents=True, exist_ok=True)
    for folder in ("processed", "control", "results"):
        (VAR_DIR / "celery" / folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_FOLDER),
        "data_folder_out": str(CELERY_BROKER_FOLDER),
        "processed_folder": str(VAR_DIR / "celery" / "processed"),
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
    }
    _default_result_backend = f"file://{VAR_DIR / 'celery' / 'results'}"
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    _default_result_backend = CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "rpc://"
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or _default_result_backend
CELERY_RESULT_EXPIRES = timedelta(days=1)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
# Our tasks recompute and replace (never increment), so running one twice is
# harmless: acknowledge after the work, and re-deliver if a worker dies mid-task.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 540, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Periodic work; each task calls one service.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "raw-partitions": {"task": "telemetry.partitions_maintain_task", "schedule": timedelta(hours=1)},
    "hourly-rollup": {"task": "telemetry.rollup_pending_task", "schedule": timedelta(minutes=1)},
    "grid-intensity-fetch": {"task": "accounting.grid_fetch_task", "schedule": timedelta(hours=1)},
    "ledger-recompute": {"task": "accounting.ledger_pending_task", "schedule": timedelta(minutes=1)},
    "ledger-held-hours": {"task": "accounting.ledger_held_hours_task", "schedule": timedelta(hours=1)},
    "advice-refresh": {"task": "accounting.advice_refresh_task", "schedule": timedelta(hours=1)},
    "otlp-push": {"task": "reports.otlp_push_task", "schedule": timedelta(minutes=1)},
    "prometheus-import": {"task": "telemetry.prometheus_import_task", "schedule": timedelta(minutes=1)},
}

# --- Long tasks' leases (common.leases) -------------------------------------------
# Seconds a running upload, scenario run or advice refresh may go without a progress write before it
# counts as dead (its worker died): it is then failed with the reason and may be run again at once. Each
# renews it far more often (every second, every 20,000 rows). Read when a lease is granted or judged; the
# fault harness sets a few seconds so that a killed worker's run lapses within its short run.
TASK_LEASE_S = env_int("TASK_LEASE_S", 120, minimum=1)
# Seconds a queued one may wait for a worker before it counts as lost (the broker lost it, or no worker runs).
TASK_QUEUE_WAIT_S = env_int("TASK_QUEUE_WAIT_S", 900, minimum=1)

# --- Placement advice ------------------------------------------------------------
# Seconds a webhook telling an organization its advice changed may take before it is parked.
ADVICE_WEBHOOK_TIMEOUT_S = env_int("ADVICE_WEBHOOK_TIMEOUT_S", 5, minimum=1)

# --- OTLP push of the /metrics families (reports.otlp, docs/metrics.md) -------------
# The operator's OTLP/HTTP endpoint and the one organization whose series go there, each minute; unset: no push.
WATTLEDGER_OTLP_ENDPOINT = env_str("WATTLEDGER_OTLP_ENDPOINT", "") or ""
WATTLEDGER_OTLP_ORGANIZATION = env_str("WATTLEDGER_OTLP_ORGANIZATION", "") or ""
if WATTLEDGER_OTLP_ENDPOINT and not WATTLEDGER_OTLP_ORGANIZATION:
    raise ImproperlyConfigured(
        "WATTLEDGER_OTLP_ENDPOINT needs WATTLEDGER_OTLP_ORGANIZATION: the one organization pushed"
    )
# Comma-separated NAME=VALUE headers sent with each push (Authorization=Bearer ...).
WATTLEDGER_OTLP_HEADERS = env_list("WATTLEDGER_OTLP_HEADERS", [])
WATTLEDGER_OTLP_TIMEOUT_S = env_int("WATTLEDGER_OTLP_TIMEOUT_S", 10, minimum=1)

# --- Outbound requests to addresses users name (common.outbound) ---------------------
# Only public addresses, unless named here: host, host:port, [v6]:port or a network (10.20.0.0/16).
OUTBOUND_ALLOWED_HOSTS = env_list("OUTBOUND_ALLOWED_HOSTS", [])
# 0: nothing is sent and no user-named host is resolved (the schema check runs so).
OUTBOUND_DELIVERY = env_bool("OUTBOUND_DELIVERY", True)
# The most of a target's answer that is read (it is never stored).
OUTBOUND_MAX_RESPONSE_BYTES = env_int("OUTBOUND_MAX_RESPONSE_BYTES", 65_536, minimum=0)
# An organization without ledger settings of its own models its hosts' power where a node has no meter
# (accounting.node_hour_lines): node-boundary energy, labelled ``modelled``. 0: the GPU boards' energy alone.
LEDGER_MODEL_HOST_POWER_DEFAULT = env_bool("LEDGER_MODEL_HOST_POWER_DEFAULT", True)

# --- Telemetry -----------------------------------------------------------------
TELEMETRY_RETENTION_DAYS = env_int("TELEMETRY_RETENTION_DAYS", 30, minimum=1)
# Longest gap between two samples still bridged (seconds); longer ones show as missing coverage.
# The defaults are telemetry.energy's (config imports no app; tests/telemetry/test_rollup.py
# checks that the two agree).
TELEMETRY_GPU_MAX_GAP_S = env_int("TELEMETRY_GPU_MAX_GAP_S", 30, minimum=1)
TELEMETRY_SERVING_MAX_GAP_S = env_int("TELEMETRY_SERVING_MAX_GAP_S", 60, minimum=1)
# Longest gap a cumulative counter that carries on across it (same epoch, not decreased) bridges:
# its increase is counted in full and labelled bridged. Longer gaps are missing coverage.
TELEMETRY_MAX_BRIDGE_S = env_int("TELEMETRY_MAX_BRIDGE_S", 86_400, minimum=1)
# A GPU its node goes on reporting without for this long is ended (removed) at its last sample;
# a GPU replaced by another is ended at once.
TELEMETRY_GPU_GONE_AFTER_S = env_int("TELEMETRY_GPU_GONE_AFTER_S", 900, minimum=1)
TELEMETRY_PARTITIONS_AHEAD_DAYS = env_int("TELEMETRY_PARTITIONS_AHEAD_DAYS", 3, minimum=1)
# On a Citus coordinator, raw-sample day partitions older than this many days move to columnar storage
# (telemetry.columnar); elsewhere nothing happens.
TELEMETRY_COLUMNAR_AFTER_DAYS = env_int("TELEMETRY_COLUMNAR_AFTER_DAYS", 3, minimum=1)
# zstd level of those columnar partitions (1-19): 15 takes a raw sample from 10.8 to 9.7 bytes of data for a
# quarter more conversion time; reading is as fast at any level (bench/README.md, "Citus").
TELEMETRY_COLUMNAR_COMPRESSION_LEVEL = env_int("TELEMETRY_COLUMNAR_COMPRESSION_LEVEL", 15, minimum=1, maximum=19)
# A sample more than this far ahead of the server's clock is refused (a broken clock).
TELEMETRY_MAX_FUTURE_S = env_int("TELEMETRY_MAX_FUTURE_S", 300, minimum=0)
# Organizations' Prometheus sources (telemetry.prometheus_sync), read every minute: each run imports at most
# PROMETHEUS_IMPORT_MAX_WINDOW_S from where the last one stopped (a new source starts
# PROMETHEUS_IMPORT_FIRST_LOOKBACK_S back); a request waits at most PROMETHEUS_IMPORT_TIMEOUT_S. A source
# that fails is retried after PROMETHEUS_IMPORT_BACKOFF_S, doubling after each failure in a row up to
# PROMETHEUS_IMPORT_BACKOFF_MAX_S.
PROMETHEUS_IMPORT_MAX_WINDOW_S = env_int("PROMETHEUS_IMPORT_MAX_WINDOW_S", 6 * 3600, minimum=60)
PROMETHEUS_IMPORT_FIRST_LOOKBACK_S = env_int("PROMETHEUS_IMPORT_FIRST_LOOKBACK_S", 3600, minimum=0)
PROMETHEUS_IMPORT_TIMEOUT_S = env_int("PROMETHEUS_IMPORT_TIMEOUT_S", 20, minimum=1)
PROMETHEUS_IMPORT_BACKOFF_S = env_int("PROMETHEUS_IMPORT_BACKOFF_S", 60, minimum=1)
PROMETHEUS_IMPORT_BACKOFF_MAX_S = env_int("PROMETHEUS_IMPORT_BACKOFF_MAX_S", 3600, minimum=1)

# --- Login protection (django-axes) ----------------------------------------------
# After LOGIN_FAILURE_LIMIT wrong passwords for one user name from one address, that
# user name is refused from that address; after as many from one address (for any user
# names), that address is refused for every user. Both with 429, until
# LOGIN_COOLOFF_MINUTES have passed since the last attempt (an attempt during the
# lockout starts the wait again). Keyed by the pair, not the user name alone, so that
# nobody can lock a known account out from elsewhere by failing its password. A
# success before the limit clears the count. Attempts are stored in the database (the
# admin's "Axes" section) and each failure and lockout is logged (logger "axes").
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS: list[str | list[str]] = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
# Log the user name and address tried (never the password), so an operator can act on them.
AXES_SENSITIVE_PARAMETERS: list[str] = []

# --- Cache ---------------------------------------------------------------------
_cache_url = env_str("CACHE_URL")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
        if _cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# --- REST framework ------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Personal tokens (Bearer wlp_...) for report clients; a node token here is refused (403).
        "fleets.authentication.PersonalTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "config.api_schema.AutoSchema",  # the constraints DRF enforces, stated
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # DRF's, but ?format= sent empty is a 400 like every empty query parameter (common/query.py).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "common.query.ContentNegotiation",
    # JSON of a bounded depth (a deeply nested body is a 400, not a 500); forms and uploads as DRF parses them.
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Per user, counted in the cache (set CACHE_URL so that every web process shares the count).
    "DEFAULT_THROTTLE_RATES": {
        "personal_token_create": env_rate("THROTTLE_TOKEN_CREATE_RATE", "20/hour"),
        "reports": env_rate("THROTTLE_REPORTS_RATE", "120/minute"),
        # A scenario run replays a whole period in a worker: a few a minute per user is plenty.
        "scenario_runs": env_rate("THROTTLE_SCENARIO_RUNS_RATE", "60/hour"),
    },
    # 401 with WWW-Authenticate for missing or refused credentials on every endpoint (config/api_errors.py).
    "EXCEPTION_HANDLER": "config.api_errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Wattledger API",
    "DESCRIPTION": "Cost and carbon ledger for GPU fleets serving LLM inference.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Every currency field lists the same ISO 4217 codes: one enum, one name.
    "ENUM_NAME_OVERRIDES": {
        "CurrencyCodeEnum": "common.currencies.CURRENCY_CODES",
        "FactorBasisEnum": "scope2.basis.BASES",  # location_basis, operational_location_basis
        "TokenScopeEnum": "fleets.models.TokenScope",
    },
    # The schema is for signed-in users and report clients, not for node tokens.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": [
        "rest_framework.authentication.SessionAuthentication",
        "fleets.authentication.PersonalTokenAuthentication",
    ],
    # /api/docs/ loads Swagger UI from the app's own static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation's 401/403 and the bodies of its errors (config/api_errors.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api_errors.responses_documented",
        "config.api_schema.form_bodies_documented",
    ],
}

# --- Logging -------------------------------------------------------------------
LOG_LEVEL = (env_str("LOG_LEVEL") or "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL={LOG_LEVEL!r} is not a logging level")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # A 503 that config.middleware answers (a database busy or down, every thread busy) is logged there,
    # one line without a traceback; Django's own "Service Unavailable" record of it would be a second.
    "filters": {"answered_unavailable": {"()": "config.middleware.AnsweredUnavailable"}},
    # django-axes logs each failure and lockout as a warning; its INFO lines are bookkeeping.
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
        "django.request": {"filters": ["answered_unavailable"]},
    },
}
