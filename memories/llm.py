"""The chat model behind compression: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM,
llama.cpp's server, a gateway), named by the GNOSEM_LLM_* settings. Off when none is configured.

Retries are not done here (the client's own are turned off): a caller in a worker thread must not
sleep through back-offs, so failures come back at once as `LLMError`, marked transient when
trying again later may help.
"""

import email.utils
import functools
import time
from dataclasses import dataclass

import openai
from django.conf import settings
from openai.types.chat import ChatCompletion

# HTTP statuses worth trying again later (as the openai client itself treats them).
_TRANSIENT_STATUSES = {408, 409, 429}
_MAX_REASON_CHARS = 300


@dataclass(frozen=True)
class ChatAnswer:
    text: str
    truncated: bool  # the model stopped at the token cap, mid-answer


class LLMError(Exception):
    """The model gave no usable answer. `transient` errors (timeout, refused connection, 429,
    5xx) may succeed later; `retry_after` is the server's own hint in seconds, if it gave one."""

    def __init__(self, reason: str, *, transient: bool, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.transient = transient
        self.retry_after = retry_after


def llm_configured() -> bool:
    return bool(settings.GNOSEM_LLM_BASE_URL and settings.GNOSEM_LLM_MODEL)


@functools.lru_cache(maxsize=4)
def openai_client(base_url: str, api_key: str | None, timeout: float) -> openai.OpenAI:
    """An OpenAI client for an OpenAI-compatible endpoint, shared per endpoint, with its own retries off."""
    # Local servers (Ollama, llama.cpp, vLLM) need no key, but the client insists on one; it is
    # sent as a bearer token they ignore.
    return openai.OpenAI(base_url=base_url, api_key=api_key or "no-key", timeout=timeout, max_retries=0)


def chat_complete(*, system: str, user: str, max_tokens: int) -> ChatAnswer:
    """One deterministic (temperature 0) chat completion from the configured model."""
    timeout = settings.GNOSEM_LLM_TIMEOUT_SECONDS
    client = openai_client(settings.GNOSEM_LLM_BASE_URL, settings.GNOSEM_LLM_API_KEY, timeout)
    try:
        response = client.chat.completions.create(
            model=settings.GNOSEM_LLM_MODEL,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=0,
            max_tokens=max_tokens,
        )
    except openai.APITimeoutError:
        raise LLMError(f"no answer within {timeout:g} s", transient=True) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise LLMError(clip_reason(f"cannot reach {settings.GNOSEM_LLM_BASE_URL}: {cause}"), transient=True) from None
    except openai.APIStatusError as exc:
        status = exc.status_code
        raise LLMError(
            clip_reason(f"HTTP {status}: {error_message(exc)}"),
            transient=transient_status(status),
            retry_after=retry_after_seconds(exc.response.headers.get("retry-after")),
        ) from None
    except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
        raise LLMError(clip_reason(f"the answer is not a chat completion: {exc}"), transient=False) from None
    # The client hands back a non-JSON body as text and builds JSON of any shape without checking it.
    if not isinstance(response, ChatCompletion) or not isinstance(response.choices, list):
        raise LLMError(clip_reason(f"the answer is not a chat completion: {str(response)!r}"), transient=False)
    if not response.choices:
        return ChatAnswer(text="", truncated=False)
    choice = response.choices[0]
    text = getattr(getattr(choice, "message", None), "content", None)
    if not isinstance(text, str | None):
        raise LLMError(clip_reason(f"the answer's message is not text: {text!r}"), transient=False)
    return ChatAnswer(text=text or "", truncated=getattr(choice, "finish_reason", None) == "length")


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
