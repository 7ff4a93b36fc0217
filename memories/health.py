"""What /healthz reports: the database, the queue, the worker's heartbeat and the embedding model.

Anyone may ask whether the server is up (`status` only); the details (install-wide counts, what is
degraded and why) are for staff, or for everyone when GNOSEM_HEALTHZ_DETAILS is on (monitoring).
"""

import time

from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connection
from django.http import HttpRequest
from django.utils import timezone
from huey.contrib.djhuey import HUEY

from memories.encryption.audit import SealedAudit
from memories.indexing.embedding import configured_model_name
from memories.indexing.lifecycle import MEMORIES, NOTES, IndexingCounts, indexing_counts
from memories.indexing.vectors import serving_model_name

# Consumers beat every minute (memories.tasks.worker_heartbeat_task) and when they start; three
# missed beats mean no consumer is taking tasks from this queue.
HEARTBEAT_STALE_SECONDS = 180


def queue_state(memories: IndexingCounts, notes: IndexingCounts) -> dict:
    """Backend, tasks waiting in it, and memories and notes pending/failed with the oldest pending
    age (of either)."""
    try:
        waiting = HUEY.pending_count()
        backend = type(HUEY).__name__
    except Exception as exc:  # the queue being down must not hide the rest of the report
        waiting, backend = None, f"error: {type(exc).__name__}"
    oldest = min((counts.oldest_pending for counts in (memories, notes) if counts.oldest_pending), default=None)
    return {
        "backend": backend,
        "tasks_waiting": waiting,
        "memories_pending": memories.pending,
        "memories_failed": memories.failed,
        "notes_pending": notes.pending,
        "notes_failed": notes.failed,
        "oldest_pending_seconds": round((timezone.now() - oldest).total_seconds(), 1) if oldest else None,
    }


def embedding_state(memories: IndexingCounts, notes: IndexingCounts) -> dict:
    """Whether GNOSEM_EMBEDDING_MODEL differs from the model search still uses: then
    `manage.py reembedmemories` has to run (model names stay out: they may be local paths); and
    how many memories and notes wait because the embedding endpoint did not answer when last asked."""
    return {
        "reembedding_needed": serving_model_name() != configured_model_name(),
        "waiting_for_endpoint": memories.waiting_for_endpoint,
        "notes_waiting_for_endpoint": notes.waiting_for_endpoint,
    }


def _heartbeat_key() -> str:
    return f"gnosem:worker-heartbeat:{HUEY.name}"


def worker_heartbeat_record() -> None:
    """A consumer of this queue is alive and running tasks (kept in the cache every web process
    shares: Redis, or the database's cache table)."""
    cache.set(_heartbeat_key(), time.time(), timeout=None)


def worker_state() -> dict:
    """When a consumer last beat, and whether that is recent enough."""
    if HUEY.immediate:
        return {"status": "ok", "last_heartbeat_seconds": None}  # tasks run in the web process itself
    try:
        beat = cache.get(_heartbeat_key())
    except Exception as exc:
        return {"status": f"error: {type(exc).__name__}", "last_heartbeat_seconds": None}
    if beat is None:
        return {
            "status": "no heartbeat yet: is a consumer (manage.py run_huey) running?",
            "last_heartbeat_seconds": None,
        }
    age = max(0.0, time.time() - beat)
    status = "ok" if age <= HEARTBEAT_STALE_SECONDS else f"no heartbeat for {age:.0f} s"
    return {"status": status, "last_heartbeat_seconds": round(age, 1)}


_SEALED_AUDIT_KEY = "gnosem:sealed-audit"


def sealed_audit_record(audit: SealedAudit) -> None:
    """Keep the last check of the sealed values (memories.encryption.audit) for /healthz."""
    cache.set(
        _SEALED_AUDIT_KEY,
        {"unreadable": len(audit.unreadable), "checked": audit.checked, "checked_at": audit.finished_at},
        timeout=None,
    )


def encryption_state() -> dict:
    """The last check of the sealed values: how many rows it opened, how many values did not
    open, and when (None before the first check)."""
    try:
        last = cache.get(_SEALED_AUDIT_KEY)
    except Exception as exc:
        return {"unreadable": None, "checked": None, "checked_at": None, "error": type(exc).__name__}
    if last is None:
        return {"unreadable": None, "checked": None, "checked_at": None}
    return {**last, "checked_at": last["checked_at"].isoformat() if last["checked_at"] else None}


def health_report() -> dict:
    """`status` is ok, degraded (the queue, the worker or the embedding endpoint has a problem:
    writes are kept, indexing waits) or unavailable (the database cannot be reached); `problems`
    says what is degraded.

    A kept connection whose server died a moment ago can pass Django's health check and then
    fail a query: the report is then made once more on a new connection, which starts a stopped
    embedded server again."""
    try:
        return _report()
    except OperationalError as exc:
        if connection.in_atomic_block:  # a connection cannot be replaced inside a transaction
            return _unavailable(exc)
        connection.close()
        try:
            return _report()
        except Exception as exc:
            return _unavailable(exc)
    except Exception as exc:  # connection refused, embedded server failing to start, ...
        return _unavailable(exc)


def _unavailable(exc: Exception) -> dict:
    return {"status": "unavailable", "problems": [f"database: error: {type(exc).__name__}"]}


def _report() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    memories, notes = indexing_counts(MEMORIES), indexing_counts(NOTES)
    queue = queue_state(memories, notes)
    worker = worker_state()
    problems = []
    if queue["backend"].startswith("error"):
        problems.append(f"queue: {queue['backend']}")
    if worker["status"] != "ok":
        problems.append(f"worker: {worker['status']}")
    embedding = embedding_state(memories, notes)
    if embedding["waiting_for_endpoint"]:
        problems.append(f"embedding: {embedding['waiting_for_endpoint']} memories wait for the embedding endpoint")
    if embedding["notes_waiting_for_endpoint"]:
        problems.append(f"embedding: {embedding['notes_waiting_for_endpoint']} notes wait for the embedding endpoint")
    encryption = encryption_state()
    if encryption["unreadable"]:
        problems.append(
            f"encryption: {encryption['unreadable']} sealed values do not open (`manage.py checksealed` names them)"
        )
    return {
        "status": "degraded" if problems else "ok",
        "problems": problems,
        "database": "ok",
        "queue": queue,
        "worker": worker,
        "embedding": embedding,
        "encryption": encryption,
    }


def details_visible_to(request: HttpRequest, report: dict) -> bool:
    """Staff signed in, or everyone with GNOSEM_HEALTHZ_DETAILS (who is signed in is only known
    while the database answers)."""
    if settings.GNOSEM_HEALTHZ_DETAILS:
        return True
    if report["status"] == "unavailable":
        return False
    try:
        return bool(request.user.is_authenticated and request.user.is_staff)
    except Exception:
        return False
