"""Export: every memory and note of one owner as one JSON document (`memories.transfer.document`),
streamed a batch at a time."""

import json
from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import Prefetch
from django.http import StreamingHttpResponse
from django.utils import timezone

from gnosem.types import Owner
from memories.models import Memory, MemoryRevision, Note
from memories.notes.services import notes_of
from memories.presenters import revision_to_dict
from memories.selectors import memories_of
from memories.transfer.document import FORMAT, VERSION, note_batch


def export_response(owner: Owner) -> StreamingHttpResponse:
    """The owner's export as a file download, streamed, its name stamped with the time (UTC): what
    the web page and the API answer with."""
    response = StreamingHttpResponse(export_chunks(owner), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="gnosem-export-{timezone.now():%Y%m%d-%H%M%S}.json"'
    return response


def memory_to_export(memory: Memory) -> dict[str, Any]:
    """One memory as an export entry: everything import needs to recreate it."""
    return {
        "id": str(memory.public_id),
        "content": memory.content,
        "content_optimized": memory.content_optimized,
        "compression_status": memory.compression_status,
        "tags": list(memory.tags),
        "written_by": memory.written_by,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "pinned": memory.pinned,
        "superseded_by": str(memory.superseded_by.public_id) if memory.superseded_by is not None else None,
        "duplicate_of": str(memory.duplicate_of.public_id) if memory.duplicate_of is not None else None,
        "also_written_by": list(memory.also_written_by),
        "revisions": [revision_to_dict(revision) for revision in memory.revisions.all()],
    }


def note_to_export(note: Note) -> dict[str, Any]:
    """One note as an export entry (its passages and vectors are derived: import embeds it again)."""
    return {
        "id": str(note.public_id),
        "title": note.title,
        "content": note.content,
        "format": note.format,
        "tags": list(note.tags),
        "created_at": note.created_at.isoformat(),
        "updated_at": note.updated_at.isoformat(),
    }


def export_count(owner: Owner) -> int:
    """How many memories an export of this owner holds."""
    return memories_of(owner).count()


def export_chunks(owner: Owner, *, progress: Callable[[int], object] | None = None) -> Iterator[str]:
    """The owner's export document in pieces (one memory or note per line), memories then notes,
    each oldest first, read from the database a batch at a time so that any number of them streams
    in bounded memory. `progress(n)` is called after each memory written out."""
    header = json.dumps({"format": FORMAT, "version": VERSION, "exported_at": timezone.now().isoformat()})
    yield header[:-1] + ', "memories": ['
    revisions = Prefetch("revisions", queryset=MemoryRevision.objects.order_by("-replaced_at", "-id"))
    queryset = memories_of(owner).prefetch_related(revisions).order_by("created_at", "id")
    for index, memory in enumerate(queryset.iterator(chunk_size=1000)):
        yield ("\n" if index == 0 else ",\n") + json.dumps(memory_to_export(memory), ensure_ascii=False)
        if progress:
            progress(1)
    yield '\n], "notes": ['
    notes = notes_of(owner).order_by("created_at", "id")
    for index, note in enumerate(notes.iterator(chunk_size=note_batch())):
        yield ("\n" if index == 0 else ",\n") + json.dumps(note_to_export(note), ensure_ascii=False)
    yield "\n]}\n"
