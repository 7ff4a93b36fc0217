"""Notes: long documents (Markdown, plain text, a PDF's text) with a title and tags, written, read,
listed, changed and deleted here for every interface, and embedded passage by passage in the
background like memories (`pending` -> `indexed`). Search over them is memories.search.notes."""

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.reach import Actor, reach_of, user_of
from gnosem.errors import NotFound, ValidationError
from gnosem.labels import label_problem
from memories.encryption.derived import derive_passage_vectors, tag_variants
from memories.graph.linking import notes_link
from memories.indexing import lifecycle as indexing_lifecycle
from memories.indexing import vectors
from memories.indexing.lifecycle import NOTES
from memories.indexing.queue import enqueue_note_indexing
from memories.limits.quotas import quota_check, text_growth, token_estimate
from memories.models import (
    MAX_NOTE_HEADING_CHARS,
    MAX_NOTE_TITLE_CHARS,
    IndexingStatus,
    Note,
    NoteChunk,
    NoteFormat,
)
from memories.notes.chunking import note_passages, passage_for_embedding
from memories.selectors import decode_cursor, encode_cursor
from memories.validation import clean_limit, clean_tags

logger = logging.getLogger(__name__)

# note_get's `start` as JSON Schema, for the interfaces to publish (clean_note_start enforces it).
NOTE_START_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0, "default": 0}
# Passages embedded per call to the model while indexing a note (a long note has a thousand or two):
# memories' batches take their turn on the model between the calls instead of after the whole note.
NOTE_EMBEDDING_BATCH = 256


class NoteNotFound(NotFound):
    """No note with that id in the spaces reached (one in another space is reported the same way)."""


def clean_note_title(title: object) -> str:
    if not isinstance(title, str) or not title.strip():
        raise ValidationError("title", "must be a non-empty line of text, such as the document's name.")
    title = " ".join(title.split())  # line breaks and tabs become spaces: a title is one line
    if problem := label_problem(title):
        raise ValidationError("title", problem)
    if len(title) > MAX_NOTE_TITLE_CHARS:
        raise ValidationError(
            "title", f"is {len(title):,} characters; a title has at most {MAX_NOTE_TITLE_CHARS}: shorten it."
        )
    return title


def clean_note_content(content: object) -> str:
    if not isinstance(content, str) or not content.strip():
        raise ValidationError("content", "must be non-empty text (Markdown or plain text).")
    if "\x00" in content:
        raise ValidationError("content", "must not contain NUL characters.")
    limit = settings.GNOSEM_NOTE_MAX_BYTES
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        raise ValidationError(
            "content", f"is {size:,} bytes; a note holds at most {limit:,} bytes (GNOSEM_NOTE_MAX_BYTES): split it."
        )
    try:
        content.encode()
    except UnicodeEncodeError:
        raise ValidationError("content", "holds characters that are not valid Unicode (lone surrogates).") from None
    return content


def clean_note_format(value: object) -> str:
    if value is None:
        return NoteFormat.MARKDOWN
    if value not in NoteFormat.values:
        raise ValidationError("format", f"one of {', '.join(NoteFormat.values)}.")
    return value


def clean_note_id(value: object) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        raise ValidationError("id", "must be a note id (a UUID, as note_write or note_list return).") from None


def clean_note_start(start: object, *, note: Note) -> int:
    """Where to read `note` from: a character offset from 0 to its length; 0 when not given."""
    if start is None:
        return 0
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValidationError(
            "start", "must be a whole number of characters from 0 on, such as a passage's `start` or a `next_start`."
        )
    if start > len(note.content):
        raise ValidationError("start", f"is past the note's end ({len(note.content):,} characters).")
    return start


def notes_of(owner: Actor) -> QuerySet[Note]:
    """The one entry point for note queries: the notes of every space the caller reaches."""
    return Note.objects.filter(space_id__in=reach_of(owner).space_ids).select_related("space", "author")


def note_get(*, owner: Actor, public_id: uuid.UUID, for_update: bool = False) -> Note:
    """The reached note; one in another space is NoteNotFound, exactly like an unknown one (where
    two reached spaces hold the id, the default write space's comes first). With `for_update`, its
    row stays locked until the transaction ends (one deleted meanwhile is not found), and a note the
    caller may only read is refused (PermissionDenied)."""
    reach = reach_of(owner)
    scope = notes_of(reach).select_for_update(of=("self",)) if for_update else notes_of(reach)
    note = scope.filter(public_id=public_id).order_by(*reach.default_space_first()).first()
    if note is None:
        raise NoteNotFound(f"No note with id {public_id}.")
    if for_update:
        reach.check_write(note.space_id)
    return note


@dataclass(frozen=True)
class NotePage:
    notes: list[Note]
    next_cursor: str | None


def note_list(*, owner: Actor, tags: object = None, limit: object = None, cursor: object = None) -> NotePage:
    """The notes of the spaces the caller reaches, most recently changed first, `limit` at a time (content deferred)."""
    limit = clean_limit(limit)
    reach = reach_of(owner)
    notes = notes_of(reach).defer("content").order_by("-updated_at", "-id")
    for tag in clean_tags(tags) if tags else []:
        notes = notes.filter(tag_digests__overlap=tag_variants(tag, reach.space_ids))
    if cursor is not None:
        updated_at, pk = decode_cursor(cursor, what="note_list")
        notes = notes.filter(Q(updated_at__lt=updated_at) | Q(updated_at=updated_at, id__lt=pk))
    page = list(notes[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return NotePage(page, encode_cursor(page[-1].updated_at, page[-1].pk) if more else None)


@transaction.atomic
def note_write(
    *,
    owner: Actor,
    title: object,
    content: object,
    tags: object = None,
    format: object = None,
    space: object = None,
) -> Note:
    """Store a note in `space` (a reached space's name or id; default: the caller's default write
    space); it is embedded in the background (found by search once `indexed`)."""
    reach = reach_of(owner)
    space_id = reach.write_space(space).id
    title, content = clean_note_title(title), clean_note_content(content)
    tags, format = clean_tags(tags), clean_note_format(format)
    quota_check(owner=reach.user, space_id=space_id, items=1, characters=len(content), tokens=token_estimate(content))
    now = timezone.now()
    note = Note.objects.create(
        space_id=space_id,
        author=reach.user,
        title=title,
        content=content,
        tags=tags,
        format=format,
        created_at=now,
        updated_at=now,
        indexing_queued_at=now,
    )
    enqueue_note_indexing([note.pk])
    note.refresh_from_db(fields=["tokens"])
    return note


@transaction.atomic
def note_update(
    *, owner: Actor, public_id: uuid.UUID, title: object = None, content: object = None, tags: object = None
) -> Note:
    """Change a note's title, text or tags (only those given); a new title or text is embedded
    again (the old passages serve searches until then)."""
    if title is None and content is None and tags is None:
        raise ValidationError("content", "nothing to change: give at least one of title, content or tags.")
    note = note_get(owner=owner, public_id=public_id, for_update=True)
    before = (note.title, note.content)
    if title is not None:
        note.title = clean_note_title(title)
    if content is not None:
        content = clean_note_content(content)
        # The text counts toward its author's quota and its space's (memories.limits.quotas).
        quota_check(
            owner=note.author or user_of(owner),
            space_id=note.space_id,
            **text_growth(added=[content], removed=[note.content]),
        )
        note.content = content
    if tags is not None:
        note.tags = clean_tags(tags)
    note.updated_at = timezone.now()
    if (note.title, note.content) != before:
        indexing_lifecycle.back_to_pending(NOTES, note, note.updated_at)
        enqueue_note_indexing([note.pk])
    note.save()
    if (note.title, note.content) == before and tags is not None:
        notes_link([note.pk])  # its tags name entities
    note.refresh_from_db(fields=["tokens"])
    return note


@transaction.atomic
def note_delete(*, owner: Actor, public_id: uuid.UUID) -> None:
    """Delete a note with its passages. Its row is locked first, as the indexing worker locks it
    to store passages: a worker storing them has committed (they go with the note), or it waits and
    then finds the note gone and stores nothing."""
    note_get(owner=owner, public_id=public_id, for_update=True).delete()


def _digest(title: str, content: str) -> str:
    return hashlib.md5(f"{title}\x00{content}".encode()).hexdigest()


def note_index(note_id: int) -> bool:
    """Embed a pending note's passages with every indexing model and store them, unless its title
    or text changed meanwhile (the change queued its own run). Returns whether it was stored.
    Failures go as the indexing lifecycle says (memories.indexing.lifecycle): an attempt spent,
    or none while the embedding endpoint is unavailable."""
    note = Note.objects.filter(pk=note_id, indexing_status=IndexingStatus.PENDING).first()
    if note is None:
        return False
    return indexing_lifecycle.index_claimed(NOTES, [note], _embed_and_store) == 1


def _embed_and_store(claimed: list[Note]) -> int:
    """Embed and store the one note claimed; returns 1, or 0 when it changed or went meanwhile."""
    [note] = claimed
    passages = note_passages(note.content, markdown=note.format == NoteFormat.MARKDOWN)
    texts = [passage_for_embedding(note.title, passage, note.content) for passage in passages]
    chunks = []
    for embedder in vectors.indexing_embedders():
        embedded: list[Any] = []  # the vectors: rows of the embedder's arrays
        for start in range(0, len(texts), NOTE_EMBEDDING_BATCH):
            embedded.extend(embedder.embed(texts[start : start + NOTE_EMBEDDING_BATCH]))
        chunks += [
            NoteChunk(
                note_id=note.pk,
                space_id=note.space_id,
                position=position,
                start=passage.start,
                end=passage.end,
                heading=passage.heading[:MAX_NOTE_HEADING_CHARS],
                text=text,
                model=embedder.name,
                dimension=embedder.dimension,
                embedding=vector,
            )
            for position, (passage, text, vector) in enumerate(zip(passages, texts, embedded, strict=True))
        ]
    derive_passage_vectors(chunks)
    digest = _digest(note.title, note.content)
    with transaction.atomic():
        # Under the lock note_delete and note_update take first: a note deleted meanwhile is not found.
        current = Note.objects.select_for_update().filter(pk=note.pk, indexing_status=IndexingStatus.PENDING).first()
        if current is None or _digest(current.title, current.content) != digest:
            return 0
        NoteChunk.objects.filter(note_id=note.pk).delete()
        NoteChunk.objects.bulk_create(chunks, batch_size=500)
        Note.objects.filter(pk=note.pk).update(indexing_status=IndexingStatus.INDEXED, indexing_error="")
        notes_link([note.pk])
    return 1
