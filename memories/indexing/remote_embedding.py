"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (Ollama, llama.cpp's server,
vLLM, Hugging Face TEI, OpenAI), named by GNOSEM_EMBEDDING_BASE_URL and GNOSEM_EMBEDDING_MODEL.

A remote model stands in for a local one everywhere (indexing, queries, re-embedding): the same
`embed`, `embed_query`, `warm_up` and `dimension`. Texts go in batches of
GNOSEM_EMBEDDING_BATCH_SIZE; each request waits GNOSEM_EMBEDDING_TIMEOUT_SECONDS at most and is
tried again twice, briefly, when the failure may pass (a search query is asked once, within 5 s).
A failure that may pass (timeout, refused connection, 429, 5xx) is `EmbeddingUnavailable`: the
indexer leaves the memories pending for later instead of counting an attempt against them. An
answer that is not one finite vector per text, all of one dimension, is `EmbeddingError`.
"""

import logging
import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import openai
from django.conf import settings

from gnosem.openai_endpoints import clip_reason, error_message, openai_client, retry_after_seconds, transient_status

logger = logging.getLogger(__name__)

# Tries per batch, and the longest wait between two (a Retry-After longer than this is not waited
# for: the memories stay pending and the task runs again later).
ATTEMPTS = 3
MAX_RETRY_WAIT_SECONDS = 5.0
# The longest a search waits for its query's vector.
QUERY_TIMEOUT_SECONDS = 5.0
# How the indexing error of a memory left pending for the endpoint begins (/healthz counts them).
WAITING_FOR_ENDPOINT = "waiting for the embedding endpoint: "
# pgvector's half-precision vectors hold at most this many dimensions.
MAX_DIMENSION = 16_000
# Queries wait on the network, not the CPU: several may be in flight at once.
_query_threads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="remote-embedding")


class EmbeddingError(Exception):
    """The endpoint's answer cannot be used (it would not get better by asking again); the reason
    is clipped to a length that can be stored and shown."""

    def __init__(self, reason: str) -> None:
        super().__init__(clip_reason(reason))


class EmbeddingUnavailable(EmbeddingError):
    """The endpoint did not answer usefully for now (timeout, refused connection, 429, 5xx);
    `retry_after` is its own hint in seconds, if it gave one."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def remote_embeddings_configured() -> bool:
    return bool(settings.GNOSEM_EMBEDDING_BASE_URL)


@dataclass
class RemoteEmbedder:
    """The model `name` as the configured endpoint serves it."""

    name: str
    _dimension: int | None = field(default=None, repr=False)

    @property
    def dimension(self) -> int:
        """The model's dimension, learnt from its first answer (asked for now if none came yet)."""
        if self._dimension is None:  # embedding learns it
            return int(self.embed(["How many dimensions do your vectors have?"]).shape[1])
        return self._dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        """One normalised float32 vector per text."""
        if not texts:
            return np.empty((0, self._dimension or 0), dtype=np.float32)
        size, timeout = settings.GNOSEM_EMBEDDING_BATCH_SIZE, settings.GNOSEM_EMBEDDING_TIMEOUT_SECONDS
        batches = (texts[start : start + size] for start in range(0, len(texts), size))
        return np.vstack([self._embed_batch(batch, timeout, ATTEMPTS) for batch in batches])

    def embed_query(self, text: str) -> Future:
        """A future of one normalised vector for a search query (the caller runs its keyword query
        meanwhile). Asked once, within QUERY_TIMEOUT_SECONDS at most: a search whose endpoint does
        not answer at once answers by keyword rather than wait."""
        timeout = min(settings.GNOSEM_EMBEDDING_TIMEOUT_SECONDS, QUERY_TIMEOUT_SECONDS)
        return _query_threads.submit(lambda: self._embed_batch([text], timeout, 1)[0])

    def warm_up(self) -> bool:
        """Ask once, so that the worker's log says at start whether the endpoint answers and with
        how many dimensions. An endpoint that is down is logged, not fatal: indexing waits for it."""
        if self._dimension is not None:
            return False
        try:
            self.embed(["warm up"])
        except EmbeddingError as exc:
            logger.warning("the embedding endpoint does not answer yet for %s: %s", self.name, exc)
            return False
        return True

    def warm_up_queries(self) -> None:
        """Before the first search: whether the endpoint answers yet (search answers by keyword
        while it does not)."""
        self.warm_up()

    def _embed_batch(self, texts: list[str], timeout: float, attempts: int) -> np.ndarray:
        for attempt in range(1, attempts + 1):
            try:
                return self._checked(self._request(texts, timeout), len(texts))
            except EmbeddingUnavailable as exc:
                wait = exc.retry_after if exc.retry_after is not None else 0.5 * 2 ** (attempt - 1)
                if attempt == attempts or wait > MAX_RETRY_WAIT_SECONDS:
                    raise
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _request(self, texts: list[str], timeout: float) -> object:
        base_url = settings.GNOSEM_EMBEDDING_BASE_URL
        client = openai_client(base_url, settings.GNOSEM_EMBEDDING_API_KEY, timeout)
        try:
            return client.embeddings.create(model=self.name, input=texts, encoding_format="float")
        except openai.APITimeoutError:
            raise EmbeddingUnavailable(f"no answer from {base_url} within {timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise EmbeddingUnavailable(f"cannot reach {base_url}: {exc.__cause__ or exc}") from None
        except openai.APIStatusError as exc:
            reason = f"{base_url} answered HTTP {exc.status_code}: {error_message(exc)}"
            if transient_status(exc.status_code):
                raise EmbeddingUnavailable(
                    reason, retry_after_seconds(exc.response.headers.get("retry-after"))
                ) from None
            raise EmbeddingError(reason) from None
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise EmbeddingError(f"the answer from {base_url} is not a list of embeddings: {exc}") from None

    def _checked(self, response: object, count: int) -> np.ndarray:
        """The response's vectors in input order, normalised; EmbeddingError unless it holds one
        vector of finite numbers per text, all of the model's one dimension."""
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != count:
            found = len(data) if isinstance(data, list) else "no list of"
            raise EmbeddingError(f"asked {self.name} for {count} embeddings, got {found}")
        rows: list[Any] = [getattr(item, "embedding", None) for item in sorted(data, key=_position)]
        if not all(isinstance(row, list) and row and all(_finite(value) for value in row) for row in rows):
            raise EmbeddingError(f"{self.name} answered something that is not a list of finite numbers")
        dimensions = sorted({len(row) for row in rows})
        if len(dimensions) > 1 or dimensions[0] > MAX_DIMENSION:
            raise EmbeddingError(
                f"{self.name} answered vectors of {', '.join(map(str, dimensions))} dimensions: one dimension "
                f"of at most {MAX_DIMENSION} is needed"
            )
        dimension = dimensions[0]
        if self._dimension is not None and dimension != self._dimension:
            raise EmbeddingError(
                f"{self.name} answered {dimension} dimensions where it gave {self._dimension} before: a model "
                "change under the same name; give the new model its own name and run `manage.py reembedmemories`"
            )
        vectors = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise EmbeddingError(f"{self.name} answered a zero vector, which has no direction")
        self._dimension = dimension
        return vectors / norms


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _position(item: object) -> int:
    index = getattr(item, "index", 0)
    return index if isinstance(index, int) else 0
