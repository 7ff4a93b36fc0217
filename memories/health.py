"""State of the indexing queue and of the embedding model, for /healthz and operators."""

from django.db.models import Count, Min, Q
from django.utils import timezone
from huey.contrib.djhuey import HUEY

from memories.embedding import configured_model_name
from memories.models import IndexingStatus, Memory
from memories.vectors import serving_model_name


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
    `manage.py reembedmemories` has to run (model names stay out: they may be local paths)."""
    return {"reembedding_needed": serving_model_name() != configured_model_name()}
