"""Compression of long memories into one line of `KEY=value` facts (docs/design.md §4).

A chat model rewrites the text under a strict prompt; the guard keeps its answer only if it is one
well-formed line strictly shorter than the text. Fail-open: whatever the model does (or fails to
do), the memory stays stored and readable as written, and its status says why.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.reach import Actor, reach_of
from memories.compression import llm
from memories.graph.linking import entities_link
from memories.models import COMPRESSION_MIN_CHARS, CompressionStatus, Memory
from memories.vocabulary import FACT_KEYS

SYSTEM_PROMPT = f"""\
You rewrite a note as one line of facts for an assistant to read later.
Output format: KEY=value pairs separated by |, all on one line. An example of the format only (never copy its content):
TOPIC=team offsite|DATE=2025-05-14|PLACE=Porto|PERSON=Kofi (organiser)|DECISION=travel by train|CONSTRAINT=300 EUR each
Keys (upper case; repeat a key as often as needed): {", ".join(FACT_KEYS)}.
Rules:
- Keep every distinct fact. Copy names, numbers, dates, versions, identifiers, paths, URLs and error codes exactly.
- Add nothing the note does not say.
- Terse values: drop filler words; no full sentences.
- No | and no line break inside a value.
- Output only the line: no preamble, no explanation, no quotes, no markdown."""

# The design's prompt says `KEY: value` where its example shows `KEY=value`: accept both.
_PAIR = re.compile(r"([A-Z][A-Z0-9_]*)\s*[=:]\s*(\S.*)")
_MAX_RETRY_DELAY_SECONDS = 3600.0
_EXCERPT_CHARS = 80


@dataclass(frozen=True)
class Outcome:
    """A compression status, the kept line when there is one, and the reason when there is not."""

    status: str
    optimized: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class CompressionRun:
    """What one attempt recorded; `retry_in` (seconds) when a transient error leaves attempts."""

    status: str
    reason: str = ""
    retry_in: float | None = None


def compression_status_for(content: str) -> str:
    """The status a memory with this content starts with."""
    if len(content) <= COMPRESSION_MIN_CHARS:
        return CompressionStatus.SKIPPED_SHORT
    return CompressionStatus.PENDING if llm.llm_configured() else CompressionStatus.DISABLED


def reset_compression(memory: Memory, now: datetime) -> None:
    """Forget any compressed form of the memory (its text is new): it waits for compression when
    it is long and a model is configured, due now."""
    memory.content_optimized = None
    memory.compression_status = compression_status_for(memory.content)
    memory.compression_error = ""
    memory.compression_due_at = now if memory.compression_status == CompressionStatus.PENDING else None


def awaiting_compression(memories: Iterable[Memory]) -> list[int]:
    """The ids of these (saved) memories that wait for compression: the ones to queue."""
    return [memory.pk for memory in memories if memory.compression_status == CompressionStatus.PENDING]


def guard(content: str, answer: str) -> Outcome:
    """Keep the model's answer only if it is one line of `KEY=value` pairs separated by `|`, with
    upper-case keys, strictly shorter than `content` in UTF-8 bytes. `KEY: value` is stored as
    `KEY=value`."""
    line = answer.strip()
    if not line:
        return Outcome(CompressionStatus.MALFORMED, reason="the model answered nothing")
    lines = line.splitlines()
    if len(lines) > 1:
        return Outcome(CompressionStatus.MALFORMED, reason=f"the answer has {len(lines)} lines, not one")
    pairs = []
    for part in line.split("|"):
        match = _PAIR.fullmatch(part.strip())
        if match is None:
            excerpt = part.strip()[:_EXCERPT_CHARS]
            return Outcome(CompressionStatus.MALFORMED, reason=f"{excerpt!r} is not a KEY=value pair")
        pairs.append(f"{match[1]}={match[2].rstrip()}")
    optimized = "|".join(pairs)
    size, raw_size = len(optimized.encode()), len(content.encode())
    if size >= raw_size:
        return Outcome(CompressionStatus.NOT_SHORTER, reason=f"{size} bytes compressed against {raw_size} as written")
    return Outcome(CompressionStatus.COMPRESSED, optimized=optimized)


def token_cap(content: str) -> int:
    """The most tokens the model may answer with.

    A kept line is shorter than the text in bytes, and a token rarely stands for fewer than two
    bytes: an answer past half the text's bytes would be discarded anyway.
    """
    return max(16, min(settings.GNOSEM_LLM_MAX_TOKENS, len(content.encode()) // 2))


def compress_text(content: str) -> Outcome:
    """Ask the configured model for the one-line form of `content` and judge it.

    Raises llm.LLMError when no answer came (timeout, refused connection, HTTP error, garbage).
    """
    cap = token_cap(content)
    answer = llm.chat_complete(system=SYSTEM_PROMPT, user=content, max_tokens=cap)
    if answer.truncated:
        return Outcome(CompressionStatus.MALFORMED, reason=f"the answer was cut off at the {cap}-token cap")
    return guard(content, answer.text)


def retry_delay(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait after failed attempt number `attempt`: the base delay, doubled for each
    earlier failure, or longer if the server asked for it; at most an hour."""
    delay = settings.GNOSEM_LLM_RETRY_DELAY_SECONDS * 2 ** (attempt - 1)
    return min(max(delay, retry_after or 0.0), _MAX_RETRY_DELAY_SECONDS)


def memory_compress(*, memory_id: int, attempt: int = 1, only_pending: bool = True) -> CompressionRun | None:
    """Compress one memory and record the outcome on it.

    The model is called outside any transaction; the result is stored only if the memory's text
    is still the one that was sent (and, with `only_pending`, it still waits for compression).
    Returns None when there was nothing to do or nothing was stored: the memory is gone, does
    not wait for compression, or was edited meanwhile (the edit queued its own run).
    """
    memory = (
        Memory.objects.filter(pk=memory_id).only("id", "space_id", "public_id", "content", "compression_status").first()
    )
    if memory is None or (only_pending and memory.compression_status != CompressionStatus.PENDING):
        return None
    if len(memory.content) <= COMPRESSION_MIN_CHARS or not llm.llm_configured():
        outcome = Outcome(compression_status_for(memory.content))
    else:
        try:
            outcome = compress_text(memory.content)
        except llm.LLMError as exc:
            max_attempts = settings.GNOSEM_LLM_MAX_ATTEMPTS
            if exc.transient and attempt < max_attempts:
                delay = retry_delay(attempt, exc.retry_after)
                reason = f"attempt {attempt} of {max_attempts} failed ({exc}); next in {delay:g} s"
                pending = Outcome(CompressionStatus.PENDING, reason=reason)
                stored = _record(memory, pending, only_pending, retry_in=delay)
                return CompressionRun(CompressionStatus.PENDING, reason, retry_in=delay) if stored else None
            tries = f" ({attempt} attempts)" if attempt > 1 else ""
            outcome = Outcome(CompressionStatus.LLM_ERROR, reason=f"{exc}{tries}")
    return CompressionRun(outcome.status, outcome.reason) if _record(memory, outcome, only_pending) else None


def postpone(memory_id: int, seconds: float) -> None:
    """A pending compression's task was put off: it is due later (the sweep must not re-queue it)."""
    Memory.objects.filter(pk=memory_id, compression_status=CompressionStatus.PENDING).update(
        compression_due_at=timezone.now() + timedelta(seconds=seconds)
    )


def _record(memory: Memory, outcome: Outcome, only_pending: bool, retry_in: float = 0.0) -> bool:
    """Record the outcome on the memory, locked: nothing is written if its text changed since it
    was read (or, `only_pending`, its compression is no longer pending)."""
    changes: dict = {"compression_status": outcome.status, "compression_error": outcome.reason}
    if outcome.status == CompressionStatus.PENDING:  # a retry keeps whatever form reads return now
        changes["compression_due_at"] = timezone.now() + timedelta(seconds=retry_in)
    else:
        changes["content_optimized"] = outcome.optimized
        changes["compression_due_at"] = None
    with transaction.atomic():
        current = Memory.objects.select_for_update().filter(pk=memory.pk).first()
        if (
            current is None
            or current.content != memory.content
            or (only_pending and current.compression_status != CompressionStatus.PENDING)
        ):
            return False
        for field, value in changes.items():
            setattr(current, field, value)
        current.save(update_fields=list(changes))
        if outcome.optimized:
            entities_link([memory.pk])  # its facts name entities
    return True


def memories_to_compress(*, statuses: Sequence[str] | None, owner: Actor | None = None) -> QuerySet[Memory]:
    """Memories long enough to compress (of the spaces `owner` reaches, or all), with one of
    `statuses` (any, when None), oldest first."""
    memories = Memory.objects.filter(content_chars__gt=COMPRESSION_MIN_CHARS)
    if statuses is not None:
        memories = memories.filter(compression_status__in=statuses)
    if owner is not None:
        memories = memories.filter(space_id__in=reach_of(owner).space_ids)
    return memories.order_by("id")
