"""Talking to an OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp's server, a gateway):
the client, with its own retries off, and reading its failures: what the endpoint said, whether
asking again may help, how long to wait, a reason short enough to store and show."""

import email.utils
import functools
import time

import openai

# HTTP statuses worth trying again later (as the openai client itself treats them).
_TRANSIENT_STATUSES = {408, 409, 429}
_MAX_REASON_CHARS = 300


@functools.lru_cache(maxsize=4)
def openai_client(base_url: str, api_key: str | None, timeout: float) -> openai.OpenAI:
    """An OpenAI client for an OpenAI-compatible endpoint, shared per endpoint, with its own retries off."""
    # Local servers (Ollama, llama.cpp, vLLM) need no key, but the client insists on one; it is
    # sent as a bearer token they ignore.
    return openai.OpenAI(base_url=base_url, api_key=api_key or "no-key", timeout=timeout, max_retries=0)


def error_message(exc: openai.APIStatusError) -> str:
    """What the endpoint said was wrong, in the shapes OpenAI-compatible servers say it."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():  # Ollama's {"error": "model 'x' not found"}
        return body.strip()
    return exc.response.text.strip() or exc.response.reason_phrase


def transient_status(status: int) -> bool:
    """Whether an endpoint's HTTP error may pass if asked again (timeout, conflict, rate limit, 5xx)."""
    return status in _TRANSIENT_STATUSES or status >= 500


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a Retry-After header (a number of seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def clip_reason(reason: str) -> str:
    """A reason short enough to store and show."""
    return reason if len(reason) <= _MAX_REASON_CHARS else reason[: _MAX_REASON_CHARS - 1] + "…"
