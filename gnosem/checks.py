"""Configuration rules as system checks: settings each well-formed on their own (gnosem.env parses
and bounds each variable at import) that are wrong, alone or together.

`manage.py check`, `serve`, `run_huey`, `migrate` and `runserver` run them before they start and
stop on an Error; gunicorn runs none of its own, so gnosem.wsgi calls `refuse_to_serve_on_errors`.
"""

import io
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import Error, Warning, register
from django.core.management import call_command

# A secret set in the environment is at least this long (the generated ones have 64 characters).
MIN_SECRET_CHARS = 32


@register()
def check_compression_settings(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    """Compression needs both a server and a model; one without the other is a typo, not "off"."""
    if bool(settings.GNOSEM_LLM_BASE_URL) == bool(settings.GNOSEM_LLM_MODEL):
        return []
    given, missing = (
        ("GNOSEM_LLM_BASE_URL", "GNOSEM_LLM_MODEL")
        if settings.GNOSEM_LLM_BASE_URL
        else ("GNOSEM_LLM_MODEL", "GNOSEM_LLM_BASE_URL")
    )
    return [
        Error(
            f"GNOSEM_LLM_BASE_URL and GNOSEM_LLM_MODEL go together: {given} is set, {missing} is not.",
            hint="Set both to turn compression on (e.g. http://127.0.0.1:11434/v1 and llama3.1:8b for Ollama), "
            "or neither to leave it off.",
            id="gnosem.E001",
        )
    ]


@register()
def check_secret_lengths(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    """A secret given in the environment must be long enough; the generated ones always are."""
    return [
        Error(
            f"{name} is {len(getattr(settings, name))} characters long; it must be at least {MIN_SECRET_CHARS}.",
            hint=f"Set a longer {name} (or {name}_FILE), e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(48))'`, or unset it: Gnosem then "
            "generates one and keeps it under GNOSEM_DATA_DIR/secrets.",
            id="gnosem.E002",
        )
        for name in ("SECRET_KEY", "GNOSEM_TOKEN_SECRET")
        if len(getattr(settings, name)) < MIN_SECRET_CHARS
    ]


@register()
def check_mail_encryption(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    """Django refuses to send any mail (password resets, address confirmations) with both on."""
    if not (settings.EMAIL_USE_TLS and settings.EMAIL_USE_SSL):
        return []
    return [
        Error(
            "EMAIL_USE_TLS and EMAIL_USE_SSL are both on; mail can use only one of them.",
            hint="EMAIL_USE_TLS is on by default (STARTTLS, usually port 587): for implicit TLS (usually port "
            "465) set EMAIL_USE_SSL=true together with EMAIL_USE_TLS=false.",
            id="gnosem.E003",
        )
    ]


@register()
def check_public_url(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    """GNOSEM_PUBLIC_URL is an origin: OAuth names the issuer after it and the resource after it
    plus /mcp, so a path (or query) in it would name URLs that Gnosem does not serve."""
    if not settings.GNOSEM_PUBLIC_URL:
        return []
    parts = urlsplit(settings.GNOSEM_PUBLIC_URL)
    if parts.hostname and not (parts.path or parts.query or parts.fragment or parts.username or parts.password):
        return []
    return [
        Error(
            f"GNOSEM_PUBLIC_URL={settings.GNOSEM_PUBLIC_URL!r} is not an origin (scheme and host, with an "
            "optional port, and nothing else).",
            hint="Set it to the address people reach Gnosem at, like https://memory.example.com; Gnosem must "
            "be served at the root of that host.",
            id="gnosem.E004",
        )
    ]


@register()
def check_remote_embedding_settings(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Error]:
    """A remote embedding endpoint needs the name of the model it serves: "default" names the
    shipped local model, which would never ask the endpoint."""
    if not settings.GNOSEM_EMBEDDING_BASE_URL or settings.GNOSEM_EMBEDDING_MODEL not in ("default", ""):
        return []
    return [
        Error(
            "GNOSEM_EMBEDDING_BASE_URL is set but GNOSEM_EMBEDDING_MODEL names no model of that endpoint.",
            hint="Set GNOSEM_EMBEDDING_MODEL to the model name the endpoint knows (for Ollama, e.g. "
            "nomic-embed-text), or unset GNOSEM_EMBEDDING_BASE_URL to embed with the shipped model.",
            id="gnosem.E005",
        )
    ]


# Search settings of earlier versions, and why none replaces them.
RETIRED_VARIABLES = {
    "GNOSEM_KEYWORD_FULL_COVERAGE": "the learned fusion weighs a memory's share of the query's words itself",
    "GNOSEM_VECTOR_CONFIDENCE_BOOST": "the learned fusion weighs how clearly one memory stands out by meaning itself",
    "GNOSEM_CONTEXT_WEIGHT": "the learned fusion weighs the scores of a memory's sequence neighbours itself",
}


@register()
def check_retired_variables(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[Warning]:
    """A variable Gnosem no longer reads is set: the operator expects an effect it no longer has."""
    return [
        Warning(
            f"{name} is set but no longer read: {reason}.",
            hint="Unset it. GNOSEM_WEIGHT_VECTOR and GNOSEM_WEIGHT_KEYWORD scale each signal's part of the "
            "fusion (docs/search.md).",
            id="gnosem.W001",
        )
        for name, reason in RETIRED_VARIABLES.items()
        if name in os.environ
    ]


def refuse_to_serve_on_errors() -> None:
    """Run the system checks as manage.py commands do before they start, for a server that runs
    none itself: an Error raises SystemCheckError listing them; warnings go to stderr."""
    call_command("check", stdout=io.StringIO())  # silent when nothing is found
