"""Imports run in the background (`ImportJob`): a file is read, checked and previewed when it is
uploaded (`import_job_create`), then imported once its user starts it (`import_job_start`), a
batch at a time, each batch written in one transaction with the job's progress (`import_job_run`),
so that an import killed part-way carries on from the last batch written: the worker's sweep
(`import_jobs_continue`) or `manage.py importmemories --resume` picks it up. A refused file is
never a job; a job that fails part-way (its space gone, a quota reached by other writes meanwhile)
stops where it is, saying how far it got.
"""

import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

from accounts.activity import activity_record, activity_via
from accounts.models import ActivityAction, ApiToken
from accounts.reach import Actor, reach_of
from gnosem.errors import NotFound, PermissionDenied, QuotaExceeded, ValidationError
from memories.encryption.fields import UnreadableText
from memories.indexing.queue import enqueue_import
from memories.models import ImportJob, ImportStatus
from memories.transfer.document import LINK_FIELDS, NOTE_BATCH_BYTES
from memories.transfer.formats import read_import_file
from memories.transfer.importing import import_file_preview, import_memories

# Memories imported per transaction.
BATCH = 500
# A process importing a job holds it this long past its last batch.
LEASE = timedelta(minutes=5)
# A previewed import nobody started is forgotten after this long; an ended one is kept this long.
PREVIEW_KEPT = timedelta(days=1)
ENDED_KEPT = timedelta(days=30)
# The report's counts, summed over the batches.
COUNTS = (
    "imported",
    "duplicates",
    "new_ids",
    "compressed_dropped",
    "notes_imported",
    "notes_duplicates",
    "notes_new_ids",
)


def import_job_create(
    *,
    owner: Actor,
    data: bytes,
    format: object = None,
    space: object = None,
    file_name: str = "",
    request: HttpRequest | None = None,
    token: ApiToken | None = None,
) -> ImportJob:
    """Read, check and preview a file for import into `space` (default: the default write space):
    a job waiting to be started, which remembers the door it came through (`request`, `token`)
    for the activity log. ValidationError for a file that would be refused, QuotaExceeded for one
    past the quota; nothing is kept of either."""
    reach = reach_of(owner)
    target = reach.write_space(space)
    file = read_import_file(data, format)
    preview = import_file_preview(owner=reach, file=file, space=str(target.public_id))
    memories, notes = file.document.get("memories") or [], file.document.get("notes") or []
    return ImportJob.objects.create(
        space_id=target.id,
        user=reach.user,
        via=activity_via(request, token),
        token=token,
        file_name=(file_name.strip() or "upload")[:200],
        format=file.format,
        document=json.dumps(file.document, ensure_ascii=False),
        same_text=file.same_text,
        total=len(memories) + len(notes),
        preview={key: value for key, value in preview.as_dict().items() if key not in ("format", "skipped")},
        skipped=list(file.skipped),
    )


def import_job_get(*, owner: Actor, public_id: object) -> ImportJob:
    """One of the caller's own imports into a space they reach (NotFound for any other), without
    its document."""
    reach = reach_of(owner)
    try:
        jobs = ImportJob.objects.defer("document").filter(user=reach.user, space_id__in=reach.space_ids)
        return jobs.get(public_id=uuid.UUID(str(public_id)))
    except (ImportJob.DoesNotExist, ValueError):
        raise NotFound("No such import.") from None


def import_jobs_of(owner: Actor, limit: int = 10) -> list[ImportJob]:
    """The caller's newest imports into the spaces they reach, without their documents."""
    reach = reach_of(owner)
    jobs = ImportJob.objects.defer("document").filter(user=reach.user, space_id__in=reach.space_ids)
    return list(jobs.order_by("-created_at", "-id")[:limit])


def import_job_start(*, owner: Actor, public_id: object, in_background: bool = True) -> ImportJob:
    """Start a previewed import, in the background (or, not, for the caller to run it with
    `import_job_run`); one already started is returned as it is. The caller must still be allowed
    to write into its space."""
    job = import_job_get(owner=owner, public_id=public_id)
    reach_of(owner).write_space(str(job.space.public_id))
    with transaction.atomic():
        started = ImportJob.objects.filter(pk=job.pk, status=ImportStatus.PREVIEWED).update(
            status=ImportStatus.QUEUED, updated_at=timezone.now()
        )
        if started and in_background:
            enqueue_import(job.pk)
    return import_job_get(owner=owner, public_id=public_id)


def import_job_run(job_id: int, *, progress: Callable[[ImportJob], object] | None = None) -> ImportJob | None:
    """Import a started job's file, from where it stands to its end, a batch per transaction;
    `progress(job)` after each. None when another process holds it (its lease runs)."""
    now = timezone.now()
    claimed = (
        ImportJob.objects.filter(pk=job_id, status__in=(ImportStatus.QUEUED, ImportStatus.RUNNING))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(status=ImportStatus.RUNNING, lease_until=now + LEASE)
    )
    if not claimed:
        return None
    stored = ImportJob.objects.only("id", "space_id", "public_id", "document").get(pk=job_id).document
    if isinstance(stored, UnreadableText):
        with transaction.atomic():
            job = ImportJob.objects.select_for_update().defer("document").get(pk=job_id)
            _end(job, ImportStatus.FAILED, error="its file, sealed in the database, does not open.")
        return job
    document = json.loads(stored)
    while True:
        with transaction.atomic():
            job = ImportJob.objects.select_for_update().defer("document").get(pk=job_id)
            if job.status != ImportStatus.RUNNING:
                return job
            _import_batch(job, document)
        if progress:
            progress(job)


def _import_batch(job: ImportJob, document: dict[str, Any]) -> None:
    """Import the job's next batch and record it, in the caller's transaction; a batch refused
    ends the job as failed, nothing of that batch written."""
    batch, size = _next_batch(document, job.done)
    try:
        with transaction.atomic():
            space = str(job.space.public_id)
            report = import_memories(owner=job.user, document=batch, space=space, same_text=job.same_text)
    except (ValidationError, QuotaExceeded, NotFound, PermissionDenied) as error:
        message = error.message if isinstance(error, ValidationError) else str(error)
        _end(job, ImportStatus.FAILED, error=f"stopped after {job.done:,} of {job.total:,} entries: {message}")
        return
    counts = report.as_dict()
    job.report = {key: job.report.get(key, 0) + counts[key] for key in COUNTS}
    job.done += size
    job.lease_until = timezone.now() + LEASE
    if job.done >= job.total:
        _end(job, ImportStatus.DONE)
    else:
        job.save(update_fields=["report", "done", "lease_until", "updated_at"])


def _next_batch(document: dict[str, Any], done: int) -> tuple[dict[str, Any], int]:
    """The document's next batch after `done` entries (memories, then notes), and its size. Memories
    linked to others (corrections, near-duplicates) are imported all at once: a link is restored
    only within one import."""
    header = {key: value for key, value in document.items() if key not in ("memories", "notes")}
    memories, notes = document.get("memories") or [], document.get("notes") or []
    if done < len(memories):
        linked = any(entry.get(field) for entry in memories for field in LINK_FIELDS)
        part = memories[done:] if linked else memories[done : done + BATCH]
        return header | {"memories": part}, len(part)
    start = done - len(memories)
    part = notes[start : start + _notes_in_batch(notes[start : start + BATCH])]
    return header | {"memories": [], "notes": part}, len(part)


def _notes_in_batch(notes: list[Any]) -> int:
    """How many of these notes (at least one) hold NOTE_BATCH_BYTES of text in all."""
    held = 0
    for count, note in enumerate(notes, start=1):
        content = note.get("content") if isinstance(note, dict) else None
        held += len(content.encode("utf-8", "surrogatepass")) if isinstance(content, str) else 0
        if held >= NOTE_BATCH_BYTES:
            return count
    return max(len(notes), 1)


def _end(job: ImportJob, status: str, *, error: str = "") -> None:
    """End the job (its document dropped) and write it to its user's activity log."""
    job.status, job.error, job.document, job.lease_until = status, error, "", None
    job.save(update_fields=["status", "error", "document", "lease_until", "report", "done", "updated_at"])
    detail = {"via": job.via, "file": job.file_name, "format": job.format, **job.report}
    detail |= {"error": error} if error else {}
    activity_record(owner=job.user, action=ActivityAction.IMPORTED, token=job.token, detail=detail)


def import_jobs_continue() -> int:
    """Carry on every started import no process holds (a worker killed part-way, a queue that lost
    its task), and forget previewed imports nobody started and long-ended ones; how many were
    carried on."""
    now = timezone.now()
    ImportJob.objects.filter(status=ImportStatus.PREVIEWED, created_at__lt=now - PREVIEW_KEPT).delete()
    ended = (ImportStatus.DONE, ImportStatus.FAILED)
    ImportJob.objects.filter(status__in=ended, updated_at__lt=now - ENDED_KEPT).delete()
    waiting = ImportJob.objects.filter(status__in=(ImportStatus.QUEUED, ImportStatus.RUNNING)).filter(
        Q(lease_until__isnull=True, updated_at__lt=now - timedelta(minutes=1)) | Q(lease_until__lt=now)
    )
    return sum(import_job_run(job_id) is not None for job_id in list(waiting.values_list("id", flat=True)))


def import_job_to_dict(job: ImportJob) -> dict[str, Any]:
    """An import as the REST API and the page show it."""
    return {
        "id": str(job.public_id),
        "file_name": job.file_name,
        "format": job.format,
        "status": job.status,
        "total": job.total,
        "done": job.done,
        "preview": job.preview,
        "report": job.report,
        "skipped": list(job.skipped),
        "error": job.error or None,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
    }
