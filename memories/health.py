"""What /healthz reports: the database, the queue, the worker's heartbeat and the embedding model.

Anyone may ask whether the server is up (`status` only); the details (install-wide counts, what is
degraded and why) are for staff, or for everyone when GNOSEM_HEALTHZ_DETAILS is on (monitoring).
"""

import time

from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connection
from django.db.models import Count, Min, Q
from django.http import HttpRequest
from django.utils import timezone
from huey.contrib.djhuey import HUEY

from memories.embedding import configured_model_name
from memories.models import IndexingStatus, Memory
from memories.remote_embedding import WAITING_FOR_ENDPOINT
from memories.vectors import serving_model_name

# Consumers beat every minute (memories.tasks.worker_heartbeat_task) and when they start; three
# missed beats mean no consumer is taking tasks from this queue.
HEARTBEAT_STALE_SECONDS = 180


def queue_state() -> dict:
    """Backend, tasks waiting in it, and memories pending/failed with the oldest pending age."""
    try:
        waiting = HUEY.pending_count()
        backend = type(HUEY).__name__
    except Exception as exc:  # the queue being down must not hide the rest of the report
        waiting, backend = None, f"error: {type(exc).__name__}"
    counts = Memory.objects.aggregate(
        pending=Count("id", filter=Q(indexing_status=IndexingStatus.PENDING)),
        failed=Count("id", filter=Q(indexing_status=IndexingStatus.FAILED)),
        oldest_pending=Min("indexing_queued_at", filter=Q(indexing_status=IndexingStatus.PENDING)),
    )
    oldest = counts.pop("oldest_pending")
    return {
        "backend": backend,
        "tasks_waiting": waiting,
        "memories_pending": counts["pending"],
        "memories_failed": counts["failed"],
        "oldest_pending_seconds": round((timezone.now() - oldest).total_seconds(), 1) if oldest else None,
    }


def embedding_state() -> dict:
    """Whether GNOSEM_EMBEDDING_MODEL differs from the model search still uses: then
    `manage.py reembedmemories` has to run (model names stay out: they may be local paths); and
    how many memories wait because the embedding endpoint did not answer when last asked."""
    waiting = Memory.objects.filter(
        indexing_status=IndexingStatus.PENDING, indexing_error__startswith=WAITING_FOR_ENDPOINT
    ).count()
    return {"reembedding_needed": serving_model_name() != configured_model_name(), "waiting_for_endpoint": waiting}


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
    queue = queue_state()
    worker = worker_state()
    problems = []
    if queue["backend"].startswith("error"):
        problems.append(f"queue: {queue['backend']}")
    if worker["status"] != "ok":
        problems.append(f"worker: {worker['status']}")
    embedding = embedding_state()
    if embedding["waiting_for_endpoint"]:
        problems.append(f"embedding: {embedding['waiting_for_endpoint']} memories wait for the embedding endpoint")
    return {
        "status": "degraded" if problems else "ok",
        "problems": problems,
        "database": "ok",
        "queue": queue,
        "worker": worker,
        "embedding": embedding,
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
