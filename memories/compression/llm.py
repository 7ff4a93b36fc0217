"""The chat model behind compression: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM,
llama.cpp's server, a gateway), named by the GNOSEM_LLM_* settings. Off when none is configured.

Retries are not done here (the client's own are turned off): a caller in a worker thread must not
sleep through back-offs, so failures come back at once as `LLMError`, marked transient when
trying again later may help.
"""

from dataclasses import dataclass

import openai
from django.conf import settings
from openai.types.chat import ChatCompletion

from gnosem.openai_endpoints import clip_reason, error_message, openai_client, retry_after_seconds, transient_status


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


def chat_complete(*, system: str, user: str, max_tokens: int) -> ChatAnswer:
    """One deterministic (temperature 0) chat completion from the configured model."""
    model = settings.GNOSEM_LLM_MODEL
    if not model:  # callers ask llm_configured() first
        raise LLMError("no model is configured (GNOSEM_LLM_MODEL)", transient=False)
    timeout = settings.GNOSEM_LLM_TIMEOUT_SECONDS
    client = openai_client(settings.GNOSEM_LLM_BASE_URL, settings.GNOSEM_LLM_API_KEY, timeout)
    try:
        response = client.chat.completions.create(
            model=model,
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
