"""Export: every memory and note of one space as one JSON document (`memories.transfer.document`),
streamed a batch at a time. Every user exports their personal space whole; a team space is
exported whole by its owners and admins, and by its other members as far as they wrote it: each
person can take what they wrote wherever it is, and nobody takes a team's memory whole without
the role to manage it."""

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone

from accounts.activity import activity_record
from accounts.models import ActivityAction, ApiToken, Role
from accounts.reach import Actor, Reach, reach_of
from gnosem.errors import ValidationError
from gnosem.types import Owner
from memories.encryption.fields import unreadable_fields
from memories.models import Entity, EntityMention, Memory, MemoryRevision, Note
from memories.notes.services import notes_of
from memories.presenters import revision_to_dict
from memories.selectors import memories_of
from memories.transfer.document import FORMAT, VERSION, note_batch
from memories.transfer.formats import GNOSEM, basic_memory, mcp_memory
from memories.transfer.formats.mcp_memory import GraphMemory, graph_lines

# Memories whose strongest entity one query reads.
MENTION_BATCH = 10_000

logger = logging.getLogger(__name__)


def exported_space(owner: Actor, space: object = None) -> Reach:
    """The reach of one export: the space named (a reached space's name or id), or the caller's
    default write space (`export_author` says whether only the caller's own part of it)."""
    reach = reach_of(owner)
    return reach.narrowed(space) if space is not None else reach.within(reach.default_space().id)


def export_author(exported: Reach) -> Owner | None:
    """Whose memories and notes an export of `exported` (one space) holds: everyone's (None) in a
    personal space and for a team space's owners and admins; else only the caller's."""
    (only,) = exported.spaces
    return None if only.is_personal or only.role in (Role.OWNER, Role.ADMIN) else exported.user


def _exported_memories(exported: Reach) -> QuerySet[Memory]:
    author = export_author(exported)
    memories = memories_of(exported)
    return memories if author is None else memories.filter(author=author)


@dataclass(frozen=True)
class ExportFormat:
    """A file an export can be: what it is called, its media type and file name (`{stamp}`: the
    time, UTC), and what writes it from a space (`exported_space`)."""

    label: str
    content_type: str
    file_name: str
    write: Callable[[Reach], Iterable[str | bytes]]


def clean_export_format(value: object) -> str:
    """An export format's name (default: Gnosem's own)."""
    if value is None or value == "":
        return GNOSEM
    if value not in EXPORT_FORMATS:
        raise ValidationError("format", f"must be one of {', '.join(EXPORT_FORMATS)}; got {str(value)[:40]!r}.")
    return str(value)


def export_response(
    owner: Actor,
    space: object = None,
    *,
    format: object = None,
    request: HttpRequest | None = None,
    token: ApiToken | None = None,
) -> StreamingHttpResponse:
    """The export of one space (`exported_space`) in `format` (EXPORT_FORMATS; default Gnosem's
    own) as a file download, streamed, its name stamped with the time (UTC): what the web page
    (`request`) and the API (`token`) answer with. The export is written to the user's activity
    log, naming the space."""
    chosen = clean_export_format(format)
    exported = exported_space(owner, space)
    (only,) = exported.spaces
    written = EXPORT_FORMATS[chosen]
    response = StreamingHttpResponse(written.write(exported), content_type=written.content_type)
    file_name = written.file_name.format(stamp=f"{timezone.now():%Y%m%d-%H%M%S}")
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    detail = {"space": only.name, "space_id": str(only.public_id), "format": chosen}
    activity_record(
        owner=exported.user,
        action=ActivityAction.EXPORTED,
        detail=detail if export_author(exported) is None else {**detail, "part": "own"},
        request=request,
        token=token,
    )
    return response


def memory_to_export(memory: Memory) -> dict[str, Any]:
    """One memory as an export entry: everything import needs to recreate it."""
    return {
        "id": str(memory.public_id),
        "content": memory.content,
        # A compressed form that does not open is left out: import compresses the text again.
        "content_optimized": None if "content_optimized" in unreadable_fields(memory) else memory.content_optimized,
        "compression_status": memory.compression_status,
        "tags": list(memory.tags),
        "written_by": memory.written_by,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "pinned": memory.pinned,
        "superseded_by": str(memory.superseded_by.public_id) if memory.superseded_by is not None else None,
        "duplicate_of": str(memory.duplicate_of.public_id) if memory.duplicate_of is not None else None,
        "also_written_by": list(memory.also_written_by),
        "shared_from": memory.shared_from or None,
        "shared_by": memory.shared_by.get_username() if memory.shared_by is not None else None,
        "revisions": [
            revision_to_dict(revision) for revision in memory.revisions.all() if not unreadable_fields(revision)
        ],
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


def _opens(row: Memory | Note, *fields: str) -> bool:
    """Whether these sealed fields of the row open; one that does not is logged, its row left out."""
    failed = set(unreadable_fields(row)) & set(fields)
    if failed:
        logger.error("%s %s left out of an export: its %s does not open", row._meta.label, row.pk, ", ".join(failed))
    return not failed


def export_count(space: Reach) -> int:
    """How many memories an export of this space (`exported_space`) holds."""
    return _exported_memories(space).count()


def export_chunks(space: Reach, *, progress: Callable[[int], object] | None = None) -> Iterator[str]:
    """The export document of a space (`exported_space`) in pieces (one memory or note per line), memories then notes,
    each oldest first, read from the database a batch at a time so that any number of them streams
    in bounded memory. `progress(n)` is called after each memory written out. A memory or note
    whose text does not open (memories.encryption.audit) is left out, and logged: an export never
    carries the notice that stands in for it."""
    header = json.dumps({"format": FORMAT, "version": VERSION, "exported_at": timezone.now().isoformat()})
    yield header[:-1] + ', "memories": ['
    revisions = Prefetch("revisions", queryset=MemoryRevision.objects.order_by("-replaced_at", "-id"))
    queryset = _exported_memories(space).prefetch_related(revisions).order_by("created_at", "id")
    separator = "\n"
    for memory in queryset.iterator(chunk_size=1000):
        if _opens(memory, "content"):
            yield separator + json.dumps(memory_to_export(memory), ensure_ascii=False)
            separator = ",\n"
        if progress:
            progress(1)
    yield '\n], "notes": ['
    author = export_author(space)
    notes = (notes_of(space) if author is None else notes_of(space).filter(author=author)).order_by("created_at", "id")
    separator = "\n"
    for note in notes.iterator(chunk_size=note_batch()):
        if _opens(note, "title", "content"):
            yield separator + json.dumps(note_to_export(note), ensure_ascii=False)
            separator = ",\n"
    yield "\n]}\n"


def mcp_memory_lines(space: Reach) -> Iterator[str]:
    """The current memories of a space (`exported_space`) as the lines of the MCP reference memory
    server's `memory.jsonl` (memories.transfer.formats.mcp_memory), each memory an observation of
    the entity it is most about. Superseded memories and notes are left out: that file has
    nothing to hold them."""
    current = _exported_memories(space).filter(superseded_by__isnull=True).order_by("created_at", "id")
    memories = [memory for memory in current.iterator(chunk_size=1000) if _opens(memory, "content")]
    strongest = _strongest_entities([memory.pk for memory in memories])
    graph = [GraphMemory(memory.content, list(memory.tags), strongest.get(memory.pk)) for memory in memories]
    return graph_lines(graph)


def basic_memory_zip(space: Reach) -> Iterator[bytes]:
    """The current memories and the notes of a space (`exported_space`) as a zip of a
    basic-memory folder (memories.transfer.formats.basic_memory): one Markdown file each."""
    current = _exported_memories(space).filter(superseded_by__isnull=True).order_by("created_at", "id")
    memories = [
        basic_memory.Written(
            title=basic_memory.title_of(memory.content),
            text=memory.content,
            tags=list(memory.tags),
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            written_by=memory.written_by,
            public_id=str(memory.public_id),
        )
        for memory in current.iterator(chunk_size=1000)
        if _opens(memory, "content")
    ]
    author = export_author(space)
    notes = (notes_of(space) if author is None else notes_of(space).filter(author=author)).order_by("created_at", "id")
    written_notes = [
        basic_memory.Written(note.title, note.content, list(note.tags), note.created_at, note.updated_at)
        for note in notes.iterator(chunk_size=note_batch())
        if _opens(note, "title", "content")
    ]
    yield basic_memory.knowledge_base(memories, written_notes)


def _strongest_entities(memory_ids: list[int]) -> dict[int, tuple[str, str]]:
    """The entity each of these memories mentions with the most weight (memories.graph.linking),
    as (name, kind), for those that mention one whose name opens."""
    strongest: dict[int, int] = {}
    for start in range(0, len(memory_ids), MENTION_BATCH):
        mentions = (
            EntityMention.objects.filter(memory_id__in=memory_ids[start : start + MENTION_BATCH])
            .order_by("memory_id", "-weight", "entity_id")
            .distinct("memory_id")
            .values_list("memory_id", "entity_id")
        )
        strongest.update(mentions)
    entities = Entity.objects.in_bulk(set(strongest.values()))
    return {
        memory_id: (entities[entity_id].name, entities[entity_id].kind)
        for memory_id, entity_id in strongest.items()
        if entity_id in entities and not unreadable_fields(entities[entity_id])
    }


EXPORT_FORMATS = {
    GNOSEM: ExportFormat("Gnosem export (.json)", "application/json", "gnosem-export-{stamp}.json", export_chunks),
    mcp_memory.NAME: ExportFormat(
        "MCP memory server (memory.jsonl)", "application/x-ndjson", "memory.jsonl", mcp_memory_lines
    ),
    basic_memory.NAME: ExportFormat(
        "basic-memory folder (.zip)", "application/zip", "gnosem-basic-memory-{stamp}.zip", basic_memory_zip
    ),
}
