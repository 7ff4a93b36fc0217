"""Import of an export document into the memories and notes of one space.

Import validates the whole document before writing anything, then writes everything in one
transaction (all or nothing). It keeps timestamps and, where the space has no memory with it yet,
the id (ids are unique per space: nothing in an import's outcome depends on other spaces' data); it
skips exact duplicates (same content and creation time as a memory the space already has, or as an
earlier entry of the file; for a note, the same title too). A compressed form is kept only if it
passes the guard a model's answer must pass (assistants read it in place of the text); otherwise it
is dropped and the memory's compression decided afresh. Imported memories and notes are embedded
again in the background.
"""

import hashlib
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import MAX_SPACE_NAME_CHARS, Space
from accounts.reach import Actor, Reach, reach_of
from gnosem.errors import ValidationError
from gnosem.labels import label_problem
from gnosem.types import Owner
from memories.compression.services import awaiting_compression, guard, reset_compression
from memories.encryption.derived import derive_note_tag_digests, derive_stored_forms, text_digest
from memories.encryption.keys import readable_keys
from memories.indexing.queue import enqueue_compression, enqueue_indexing, enqueue_note_indexing
from memories.limits.quotas import quota_check, text_growth
from memories.models import (
    MAX_ALSO_WRITTEN_BY,
    MAX_CONTENT_CHARS,
    MAX_REVISIONS_PER_MEMORY,
    CompressionStatus,
    IndexingStatus,
    Memory,
    MemoryRevision,
    Note,
)
from memories.notes.services import clean_note_content, clean_note_format, clean_note_title, notes_of
from memories.selectors import memories_of
from memories.services import memories_reread_after_import
from memories.transfer.document import (
    FORMAT,
    LINK_FIELDS,
    MEMORY_FIELDS,
    NOTE_FIELDS,
    NOTES_SINCE,
    READABLE_VERSIONS,
    REVISION_FIELDS,
    note_batch,
    refuse_file,
)
from memories.transfer.formats import GNOSEM, ImportFile
from memories.validation import clean_content, clean_datetime, clean_tags, clean_written_by

INSERT_BATCH = 500
ID_LOOKUP_BATCH = 10_000


@dataclass(frozen=True)
class ImportReport:
    """What an import did: `imported` new memories, `duplicates` skipped, how many of the imported
    ones got a new id because the space already had theirs, and how many compressed forms were
    dropped for failing the guard; then the same for notes; and, of the file, its format, how
    many records it held and those left out and why (memories.transfer.formats)."""

    imported: int
    duplicates: int
    new_ids: int
    compressed_dropped: int = 0
    notes_imported: int = 0
    notes_duplicates: int = 0
    notes_new_ids: int = 0
    format: str = GNOSEM
    records: int = 0
    skipped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The shape the REST API documents (ImportReportOut)."""
        return asdict(self) | {"skipped": list(self.skipped)}

    def __str__(self) -> str:
        return (
            f"{self.imported} memor{'y' if self.imported == 1 else 'ies'} imported, "
            f"{self.duplicates} duplicate{'' if self.duplicates == 1 else 's'} skipped"
            + (f", {self.new_ids} given new ids" if self.new_ids else "")
            + (
                f", {self.compressed_dropped} compressed form{'' if self.compressed_dropped == 1 else 's'} "
                "dropped (not one line of KEY=value facts shorter than the text)"
                if self.compressed_dropped
                else ""
            )
            + self._notes_summary()
            + (f"; {len(self.skipped)} record{'' if len(self.skipped) == 1 else 's'} left out" if self.skipped else "")
            + "."
        )

    def _notes_summary(self) -> str:
        if not self.notes_imported and not self.notes_duplicates:
            return ""
        return (
            f"; {self.notes_imported} note{'' if self.notes_imported == 1 else 's'} imported, "
            f"{self.notes_duplicates} duplicate{'' if self.notes_duplicates == 1 else 's'} skipped"
            + (f", {self.notes_new_ids} given new ids" if self.notes_new_ids else "")
        )


@dataclass(frozen=True)
class _Entry:
    public_id: uuid.UUID | None
    content: str
    content_optimized: str | None  # None also when the file's form failed the guard
    compression_status: str
    tags: list[str]
    written_by: str
    created_at: datetime
    updated_at: datetime
    compressed_dropped: bool = False
    pinned: bool = False
    superseded_by: uuid.UUID | None = None
    duplicate_of: uuid.UUID | None = None
    also_written_by: tuple[str, ...] = ()
    revisions: tuple[MemoryRevision, ...] = ()
    shared_from: str = ""

    @property
    def key(self) -> tuple[str, datetime]:
        return _memory_key(self.content, self.created_at)


def _memory_key(content: str, created_at: datetime) -> tuple[str, datetime]:
    """What an imported memory is recognised by: its exact text's digest and its creation time."""
    return hashlib.md5(content.encode()).hexdigest(), created_at


@dataclass(frozen=True)
class _NoteEntry:
    public_id: uuid.UUID | None
    title: str
    content: str
    format: str
    tags: list[str]
    created_at: datetime
    updated_at: datetime

    @property
    def key(self) -> tuple[str, str, datetime]:
        return _note_key(self.title, self.content, self.created_at)


def _note_key(title: str, content: str, created_at: datetime) -> tuple[str, str, datetime]:
    """What an imported note is recognised by: its title, its exact text's digest and its creation time."""
    return title, hashlib.md5(content.encode()).hexdigest(), created_at


def _check_storable_text(item: dict[str, Any], fields: tuple[str, ...] = MEMORY_FIELDS) -> None:
    """PostgreSQL stores no NUL character and no lone surrogate (JSON can spell both, as a
    backslash-u 0000 or d800 escape): name the field that holds one instead of failing at the insert."""
    for field in fields:
        value = item.get(field)
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            if "\x00" in text:
                raise ValidationError(field, "must not contain NUL characters (\\u0000).")
            try:
                text.encode()
            except UnicodeEncodeError:
                raise ValidationError(
                    field, "contains a lone UTF-16 surrogate (like \\ud800), which is not text; fix the file."
                ) from None


def _clean_id(field: str, value: object, what: str = "memory") -> uuid.UUID | None:
    if value is None:
        return None
    # Only a string: anything else would be shown back whole (a list nested hundreds deep, say).
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a {what} id string (a UUID) or null.")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ValidationError(field, f"{value[:100]!r} is not a {what} id (a UUID).") from None


def _clean_revisions(value: object) -> tuple[MemoryRevision, ...]:
    """Unsaved earlier versions (their memory is set once it is saved)."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_REVISIONS_PER_MEMORY:
        raise ValidationError("revisions", f"must be a list of at most {MAX_REVISIONS_PER_MEMORY} earlier versions.")
    revisions = []
    for item in value:
        if not isinstance(item, dict) or set(item) != set(REVISION_FIELDS):
            raise ValidationError("revisions", f"each earlier version has exactly {', '.join(REVISION_FIELDS)}.")
        _check_storable_text(item, REVISION_FIELDS)
        revisions.append(
            MemoryRevision(
                content=clean_content(item["content"]),
                tags=clean_tags(item["tags"]),
                written_by=clean_written_by(item["written_by"]),
                valid_from=_required_datetime("valid_from", item["valid_from"]),
                replaced_at=_required_datetime("replaced_at", item["replaced_at"]),
            )
        )
    return tuple(revisions)


def _required_datetime(field: str, value: object) -> datetime:
    """clean_datetime for a time every exported entry has: null is refused, not stored as nothing."""
    cleaned = clean_datetime(field, value)
    if cleaned is None:
        raise ValidationError(field, "must be an ISO 8601 date or date-time string, not null.")
    return cleaned


def _clean_writers(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_ALSO_WRITTEN_BY:
        raise ValidationError("also_written_by", f"must be a list of at most {MAX_ALSO_WRITTEN_BY} client names.")
    return tuple(dict.fromkeys(clean_written_by(name) for name in value if clean_written_by(name)))


def _check_entry_shape(item: object, what: str, fields: tuple[str, ...], required: str) -> dict[str, Any]:
    """An entry is an object of known `fields` with its creation time (`required` names what it
    must hold at least, for the message); returns it."""
    if not isinstance(item, dict):
        raise ValidationError(what, f"must be an object with at least {required}.")
    unknown = set(item) - set(fields)
    if unknown:
        raise ValidationError(what, f"unknown field(s) {', '.join(sorted(unknown))}.")
    if "created_at" not in item:
        raise ValidationError("created_at", f"is missing; every exported {what} has its creation time.")
    return item


def _clean_entry(item: object) -> _Entry:
    item = _check_entry_shape(item, "memory", MEMORY_FIELDS, "`content` and `created_at`")
    _check_storable_text(item)
    public_id = _clean_id("id", item.get("id"))
    pinned = item.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValidationError("pinned", "must be true or false.")
    optimized = item.get("content_optimized")
    if optimized is not None and (not isinstance(optimized, str) or not optimized.strip()):
        raise ValidationError("content_optimized", "must be null or non-empty text.")
    if optimized is not None and len(optimized) > MAX_CONTENT_CHARS:
        raise ValidationError("content_optimized", f"is longer than {MAX_CONTENT_CHARS:,} characters.")
    status = item.get("compression_status", CompressionStatus.DISABLED)
    if not isinstance(status, str) or status not in CompressionStatus.values:
        raise ValidationError("compression_status", f"must be one of {', '.join(CompressionStatus.values)}.")
    created_at = _required_datetime("created_at", item["created_at"])
    updated_at = clean_datetime("updated_at", item.get("updated_at")) or created_at
    content = clean_content(item.get("content"))
    dropped = False
    if optimized is not None:
        # Assistants read the compressed form in place of the text: it must be what a model's
        # answer must be (one line of KEY=value facts, shorter than the text), or it goes.
        outcome = guard(content, optimized)
        dropped = outcome.status != CompressionStatus.COMPRESSED
        optimized = outcome.optimized
        status = CompressionStatus.COMPRESSED if optimized is not None else status
    return _Entry(
        public_id=public_id,
        content=content,
        content_optimized=optimized,
        compression_status=status,
        tags=clean_tags(item.get("tags")),
        written_by=clean_written_by(item.get("written_by")),
        created_at=created_at,
        updated_at=updated_at,
        compressed_dropped=dropped,
        pinned=pinned,
        superseded_by=_clean_id("superseded_by", item.get("superseded_by")),
        duplicate_of=_clean_id("duplicate_of", item.get("duplicate_of")),
        also_written_by=_clean_writers(item.get("also_written_by")),
        revisions=_clean_revisions(item.get("revisions")),
        shared_from=_clean_shared_from(item.get("shared_from")),
    )


def _clean_shared_from(value: object) -> str:
    """The name of the space a memory was shared from ("" for none). Who shared it is not kept:
    accounts do not travel with a file."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_SPACE_NAME_CHARS:
        raise ValidationError("shared_from", f"must be null or a space's name of 1-{MAX_SPACE_NAME_CHARS} characters.")
    if problem := label_problem(value):
        raise ValidationError("shared_from", problem)
    return value.strip()


def _clean_note_entry(item: object) -> _NoteEntry:
    """A note checked as note_write checks one, with its id and times."""
    item = _check_entry_shape(item, "note", NOTE_FIELDS, "`title`, `content` and `created_at`")
    _check_storable_text(item, NOTE_FIELDS)
    created_at = _required_datetime("created_at", item["created_at"])
    return _NoteEntry(
        public_id=_clean_id("id", item.get("id"), what="note"),
        title=clean_note_title(item.get("title")),
        content=clean_note_content(item.get("content")),
        format=clean_note_format(item.get("format")),
        tags=clean_tags(item.get("tags")),
        created_at=created_at,
        updated_at=clean_datetime("updated_at", item.get("updated_at")) or created_at,
    )


def _clean_document(document: object) -> tuple[list[_Entry], list[_NoteEntry]]:
    """Every entry checked (memories, then notes); ValidationError listing the problems if any."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValidationError("file", f'is not a Gnosem export: expected an object with "format": "{FORMAT}".')
    version = document.get("version")
    *earlier, last = READABLE_VERSIONS
    readable = f"{', '.join(map(str, earlier))} and {last}"
    if type(version) is not int:  # not `true` (== 1 in Python), not 1.0
        raise ValidationError("file", f'"version" must be a whole number; this server reads versions {readable}.')
    if version not in READABLE_VERSIONS:
        raise ValidationError("file", f"is export format version {version}; this server reads versions {readable}.")
    items = document.get("memories")
    if not isinstance(items, list):
        raise ValidationError("file", '"memories" must be a list.')
    if "notes" in document and version < NOTES_SINCE:
        raise ValidationError(
            "file",
            f'has "notes", which need export format version {NOTES_SINCE}; this file says version {version}. '
            "Export again from the server it came from, or leave the notes out.",
        )
    note_items = document.get("notes", [])
    if not isinstance(note_items, list):
        raise ValidationError("file", '"notes" must be a list.')
    entries, first_with_id, problems = _cleaned_entries(items, _clean_entry, "memory")
    problems += _link_problems(entries, first_with_id)
    note_entries, _, note_problems = _cleaned_entries(note_items, _clean_note_entry, "note")
    problems += note_problems
    if problems:
        refuse_file(problems)
    return entries, note_entries


def _cleaned_entries(
    items: list, clean: Callable[[object], Any], what: str
) -> tuple[list, dict[uuid.UUID, int], list[str]]:
    """Each item through `clean`: the entries, the position of the first entry with each id, and
    the problems ("<what> #<position>: ..."), a repeated id among them."""
    entries, problems = [], []
    first_with_id: dict[uuid.UUID, int] = {}
    for position, item in enumerate(items, start=1):
        try:
            entry = clean(item)
        except ValidationError as error:
            problems.append(f"{what} #{position}: {error}")
            continue
        entries.append(entry)
        if entry.public_id is not None:
            first = first_with_id.setdefault(entry.public_id, position)
            if first != position:
                problems.append(f"{what} #{position}: id {entry.public_id} appears twice (also #{first})")
    return entries, first_with_id, problems


def _link_problems(entries: list[_Entry], position_of: dict[uuid.UUID, int]) -> list[str]:
    """A link (`superseded_by`, `duplicate_of`) must name another entry of the file, and following
    links of one kind must never come back to the entry."""
    problems = []
    looping: dict[str, set[uuid.UUID]] = {}
    for field in LINK_FIELDS:
        links = {entry.public_id: getattr(entry, field) for entry in entries if entry.public_id}
        looping[field] = {member for loop in _loops(links) for member in loop}
    for index, entry in enumerate(entries):
        for field in LINK_FIELDS:
            target = getattr(entry, field)
            if target is not None and (target not in position_of or target == entry.public_id):
                problems.append(f"memory #{index + 1}: {field} {target} names no other memory of the file")
            elif entry.public_id in looping[field]:
                problems.append(f"memory #{index + 1}: its {field} links form a cycle")
    return problems


_Place = TypeVar("_Place", bound=Hashable)


def _loops(links: Mapping[_Place, _Place | None]) -> list[list[_Place]]:
    """The loops of links where each place links to at most one other, in one pass: a walk stops
    at a place an earlier walk passed."""
    found: list[list[_Place]] = []
    done: set[_Place] = set()
    for start in links:
        path: dict[_Place, None] = {}  # the places of this walk, in order
        current: _Place | None = start
        while current is not None and current not in done and current not in path:
            path[current] = None
            current = links.get(current)
        if current in path:
            places = list(path)
            found.append(places[places.index(current) :])
        done.update(path)
    return found


@dataclass(frozen=True)
class ImportPreview:
    """What importing a document would do, nothing written: memories and notes it would create and
    those it would skip as duplicates; and, of the file, as in ImportReport."""

    memories: int
    duplicates: int
    notes: int = 0
    notes_duplicates: int = 0
    format: str = GNOSEM
    records: int = 0
    skipped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The shape the REST API documents (ImportPreviewOut)."""
        return asdict(self) | {"skipped": list(self.skipped)}

    def __str__(self) -> str:
        return (
            f"{self.records} record{'' if self.records == 1 else 's'} read: "
            f"{self.memories} memor{'y' if self.memories == 1 else 'ies'} to create, "
            f"{self.duplicates} duplicate{'' if self.duplicates == 1 else 's'} to skip"
            + (f", {self.notes} note{'' if self.notes == 1 else 's'} to create" if self.notes else "")
            + (f", {self.notes_duplicates} duplicate notes to skip" if self.notes_duplicates else "")
            + (f", {len(self.skipped)} record{'' if len(self.skipped) == 1 else 's'} left out" if self.skipped else "")
            + "."
        )


def import_file_preview(*, owner: Actor, file: ImportFile, space: object = None) -> ImportPreview:
    """What importing the file (memories.transfer.formats.read_import_file) into `space` would do,
    nothing written; ValidationError for a file it would refuse."""
    preview = import_preview(owner=owner, document=file.document, space=space, same_text=file.same_text)
    return replace(preview, format=file.format, records=file.records, skipped=tuple(file.skipped))


def import_file(
    *, owner: Actor, file: ImportFile, space: object = None, progress: Callable[[int], object] | None = None
) -> ImportReport:
    """Import the file (memories.transfer.formats.read_import_file) into `space`, all or nothing
    (`import_memories`)."""
    report = import_memories(
        owner=owner, document=file.document, progress=progress, space=space, same_text=file.same_text
    )
    return replace(report, format=file.format, records=file.records, skipped=tuple(file.skipped))


def import_preview(*, owner: Actor, document: object, space: object = None, same_text: bool = False) -> ImportPreview:
    """What `import_memories` would do with the document, nothing written; ValidationError for a
    document it would refuse, QuotaExceeded for one past the quota."""
    reach = reach_of(owner)
    target = reach.within(reach.write_space(space).id)
    entries, note_entries = _clean_document(document)
    fresh, fresh_notes = _fresh(target, entries, note_entries, same_text)
    with transaction.atomic():  # the quota rows are read locked
        _quota_check(target, fresh, fresh_notes)
    return ImportPreview(
        memories=len(fresh),
        duplicates=len(entries) - len(fresh),
        notes=len(fresh_notes),
        notes_duplicates=len(note_entries) - len(fresh_notes),
    )


def _fresh(
    target: Reach, entries: list[_Entry], note_entries: list[_NoteEntry], same_text: bool
) -> tuple[list[_Entry], list[_NoteEntry]]:
    """The entries that are not duplicates of the target space's memories and notes nor of an
    earlier entry: the same text written at the same time or, with `same_text`, the same text
    (case and spacing aside) whenever written (files of tools that keep no dates, or other dates)."""
    memory_key: Callable[[_Entry], Hashable] = _text_key_of if same_text else _dated_key_of
    existing = _existing_texts(target, entries) if same_text else _existing_keys(target, entries)
    fresh: list[_Entry] = []
    for entry in entries:
        if (key := memory_key(entry)) not in existing:
            existing.add(key)
            fresh.append(entry)
    note_key: Callable[[_NoteEntry], Hashable] = _note_text_key_of if same_text else _dated_note_key_of
    existing_notes = _existing_note_keys(target, note_entries, note_key, everywhen=same_text)
    fresh_notes: list[_NoteEntry] = []
    for note_entry in note_entries:
        if (key := note_key(note_entry)) not in existing_notes:
            existing_notes.add(key)
            fresh_notes.append(note_entry)
    return fresh, fresh_notes


def import_memories(
    *,
    owner: Actor,
    document: object,
    progress: Callable[[int], object] | None = None,
    space: object = None,
    same_text: bool = False,
) -> ImportReport:
    """Import a parsed export document into the memories and notes of `space` (a reached space's
    name or id the caller may write; default: the default write space), all or nothing. With
    `same_text`, a memory or note whose text the space already holds is a duplicate whenever it
    was written (`_fresh`). `progress(n)` is called as memory entries are written (or skipped)."""
    reach = reach_of(owner)
    space_id = reach.write_space(space).id
    target = reach.within(space_id)
    user = reach.user
    entries, note_entries = _clean_document(document)
    with transaction.atomic():
        # One import into a space at a time: two at once could both find an id or a duplicate
        # free and then collide at the insert.
        Space.objects.select_for_update().filter(pk=space_id).first()
        fresh, fresh_notes = _fresh(target, entries, note_entries, same_text)
        _quota_check(target, fresh, fresh_notes)
        if progress and len(entries) > len(fresh):
            progress(len(entries) - len(fresh))
        taken = _taken_ids(target, [entry.public_id for entry in fresh if entry.public_id])
        new_ids = 0
        memories = []
        for entry in fresh:
            kept_id = entry.public_id if entry.public_id not in taken else None
            new_ids += entry.public_id is not None and kept_id is None
            memories.append(_memory_from(user, space_id, entry, kept_id or uuid.uuid4()))
        created_ids: list[int] = []
        for start in range(0, len(memories), INSERT_BATCH):
            batch = memories[start : start + INSERT_BATCH]
            derive_stored_forms(batch)
            Memory.objects.bulk_create(batch)
            created_ids.extend(memory.pk for memory in batch)
            if progress:
                progress(len(batch))
        _restore_links(target, entries, fresh, memories)
        MemoryRevision.objects.bulk_create(
            [
                MemoryRevision(
                    memory=memory,
                    space_id=memory.space_id,
                    **{field: getattr(revision, field) for field in REVISION_FIELDS},
                )
                for entry, memory in zip(fresh, memories, strict=True)
                for revision in entry.revisions
            ],
            batch_size=INSERT_BATCH,
        )
        enqueue_indexing(created_ids)
        memories_reread_after_import(
            space_id=space_id, memories=memories
        )  # embedded ones that read an imported one now
        # Those arriving without a compressed form, when a model is on.
        enqueue_compression(awaiting_compression(memories))
        notes_new_ids = _create_notes(target, space_id, fresh_notes)
    return ImportReport(
        records=len(entries) + len(note_entries),
        imported=len(memories),
        duplicates=len(entries) - len(fresh),
        new_ids=new_ids,
        compressed_dropped=sum(entry.compressed_dropped for entry in fresh),
        notes_imported=len(fresh_notes),
        notes_duplicates=len(note_entries) - len(fresh_notes),
        notes_new_ids=notes_new_ids,
    )


def _quota_check(target: Reach, fresh: list[_Entry], fresh_notes: list[_NoteEntry]) -> None:
    """Refuse (QuotaExceeded) an import past the user's or the space's quota: everything it would
    store counts, texts, compressed forms, earlier versions and notes. Inside the writing transaction."""
    texts = [text for entry in fresh for text in _stored_texts(entry)]
    texts += [note_entry.content for note_entry in fresh_notes]
    (space_id,) = target.space_ids
    items = len(fresh) + len(fresh_notes)
    quota_check(owner=target.user, space_id=space_id, items=items, **text_growth(added=texts))


def _stored_texts(entry: _Entry) -> list[str | None]:
    """The texts importing a memory entry stores: its content, compressed form and earlier versions."""
    return [entry.content, entry.content_optimized, *(revision.content for revision in entry.revisions)]


def _create_notes(target: Reach, space_id: int, entries: list[_NoteEntry]) -> int:
    """Save the notes into the target space, `pending` and queued for embedding (on commit);
    returns how many got a new id because the space already had theirs."""
    taken = _taken_ids(target, [entry.public_id for entry in entries if entry.public_id], notes_of)
    now = timezone.now()
    notes, new_ids = [], 0
    for entry in entries:
        kept_id = entry.public_id if entry.public_id not in taken else None
        new_ids += entry.public_id is not None and kept_id is None
        notes.append(
            Note(
                public_id=kept_id or uuid.uuid4(),
                space_id=space_id,
                author=target.user,
                title=entry.title,
                content=entry.content,
                format=entry.format,
                tags=entry.tags,
                created_at=entry.created_at,
                updated_at=entry.updated_at,
                indexing_status=IndexingStatus.PENDING,
                indexing_queued_at=now,
            )
        )
    derive_note_tag_digests(notes)
    batch = note_batch()
    for start in range(0, len(notes), batch):
        for note in Note.objects.bulk_create(notes[start : start + batch]):
            enqueue_note_indexing([note.pk])
    return new_ids


def _restore_links(space: Reach, entries: list[_Entry], fresh: list[_Entry], memories: list[Memory]) -> None:
    """Point each imported memory (`memories`, saved from `fresh`) the file links to another entry
    (LINK_FIELDS) to the memory imported for that entry or, when that one was skipped as a
    duplicate, to the space's memory it duplicates."""
    imported = {entry.public_id: memory for entry, memory in zip(fresh, memories, strict=True) if entry.public_id}
    by_file_id = {entry.public_id: entry for entry in entries if entry.public_id}
    targets = {getattr(entry, field) for entry in fresh for field in LINK_FIELDS} - {None}
    existing = _memories_with_keys(space, {by_file_id[target].key for target in targets - set(imported)})
    links: dict[str, dict[int, Memory]] = {field: {} for field in LINK_FIELDS}
    for entry, memory in zip(fresh, memories, strict=True):
        for field in LINK_FIELDS:
            if (target := getattr(entry, field)) is None:
                continue
            other = imported.get(target) or existing.get(by_file_id[target].key)
            if other is not None and other.pk != memory.pk:  # the same text twice in the file: no link
                links[field][memory.pk] = other
    # Two entries stored as one memory (the same text at the same time: the second is skipped) can
    # turn a chain of links into a loop; the space's other memories link to none imported, so a
    # loop lies among these links. It is broken where the data migration breaks stored ones: a loop
    # of corrections at its newest memory, which stays current; a loop of near-duplicates at its
    # oldest, which stays the original.
    by_pk = {memory.pk: memory for memory in memories}
    for field, pick in (("superseded_by", max), ("duplicate_of", min)):
        for loop in _loops({memory_pk: other.pk for memory_pk, other in links[field].items()}):
            del links[field][pick(loop, key=lambda memory_pk: (by_pk[memory_pk].created_at, memory_pk))]
    linked: dict[int, Memory] = {}
    for field, field_links in links.items():
        for memory_pk, other in field_links.items():
            setattr(by_pk[memory_pk], field, other)
            linked[memory_pk] = by_pk[memory_pk]
    Memory.objects.bulk_update(list(linked.values()), LINK_FIELDS, batch_size=INSERT_BATCH)


def _memories_with_keys(space: Reach, keys: set[tuple[str, datetime]]) -> dict[tuple[str, datetime], Memory]:
    """The target space's memories by (content digest, creation time), for these keys."""
    found: dict[tuple[str, datetime], Memory] = {}
    for created_at in {created_at for _, created_at in keys}:
        for memory in memories_of(space).filter(created_at=created_at):
            if (key := _memory_key(memory.content, created_at)) in keys:
                found[key] = memory
    return found


def _existing_keys(space: Reach, entries: list[_Entry]) -> set[Hashable]:
    """(content digest, creation time) of the target space's memories in the file's time span: the
    duplicate check. A range, not a list of times: a query holds at most 65,535 parameters. The
    texts are sealed, so each is opened and digested here."""
    if not entries:
        return set()
    in_span = memories_of(space).filter(
        created_at__gte=min(entry.created_at for entry in entries),
        created_at__lte=max(entry.created_at for entry in entries),
    )
    return {_memory_key(memory.content, memory.created_at) for memory in in_span.iterator(chunk_size=2000)}


def _existing_texts(space: Reach, entries: list[_Entry]) -> set[Hashable]:
    """The entries' texts (`_text_key_of`) the target space's memories hold, found by their keyed
    digests (memories.encryption.derived.text_digest) under each of the space's keys, a batch at
    a time."""
    (space_id,) = space.space_ids
    keys = readable_keys([space_id])[space_id]
    by_digest = {text_digest(key, entry.content): _text_key_of(entry) for entry in entries for key in keys}
    digests = list(by_digest)
    found: set[Hashable] = set()
    for start in range(0, len(digests), ID_LOOKUP_BATCH):
        batch = digests[start : start + ID_LOOKUP_BATCH]
        stored = memories_of(space).filter(content_digest__in=batch).values_list("content_digest", flat=True)
        found.update(by_digest[digest] for digest in stored)
    return found


def _dated_key_of(entry: _Entry) -> Hashable:
    return entry.key


def _dated_note_key_of(entry: _NoteEntry) -> Hashable:
    return entry.key


def _text_key_of(entry: _Entry) -> str:
    """A memory's text, case and spacing aside, as a digest: the same text whenever written."""
    return hashlib.md5(" ".join(entry.content.split()).lower().encode()).hexdigest()


def _note_text_key_of(entry: _NoteEntry) -> tuple[str, str]:
    """A note's title and text, as a digest: the same note whenever written."""
    return entry.title, hashlib.md5(entry.content.encode()).hexdigest()


def _existing_note_keys(
    space: Reach, entries: list[_NoteEntry], key: Callable[[_NoteEntry], Hashable], *, everywhen: bool = False
) -> set[Hashable]:
    """`key` of the target space's notes in the file's time span (with `everywhen`, all its
    notes): the duplicate check, as for memories (each note opened and digested here, a batch at
    a time)."""
    if not entries:
        return set()
    stored = notes_of(space)
    if not everywhen:
        stored = stored.filter(
            created_at__gte=min(entry.created_at for entry in entries),
            created_at__lte=max(entry.created_at for entry in entries),
        )
    return {
        key(_NoteEntry(None, note.title, note.content, note.format, [], note.created_at, note.updated_at))
        for note in stored.iterator(chunk_size=note_batch())
    }


def _taken_ids(
    space: Reach, public_ids: list[uuid.UUID], scope: Callable[[Actor], QuerySet[Any]] = memories_of
) -> set[uuid.UUID]:
    """Which of these ids the target space's memories (or, with `scope=notes_of`, notes) already
    have (other spaces' never matter: ids are unique per space), asked a batch at a time."""
    taken: set[uuid.UUID] = set()
    for start in range(0, len(public_ids), ID_LOOKUP_BATCH):
        batch = public_ids[start : start + ID_LOOKUP_BATCH]
        taken.update(scope(space).filter(public_id__in=batch).values_list("public_id", flat=True))
    return taken


# Without a compressed form, statuses that say "not compressed yet" rather than an outcome, and
# "compressed" (with nothing to show for it): this server decides afresh.
_UNDECIDED = {CompressionStatus.PENDING, CompressionStatus.DISABLED, CompressionStatus.COMPRESSED}


def _memory_from(author: Owner, space_id: int, entry: _Entry, public_id: uuid.UUID) -> Memory:
    now = timezone.now()
    memory = Memory(
        pinned=entry.pinned,
        also_written_by=list(entry.also_written_by),
        shared_from=entry.shared_from,
        public_id=public_id,
        space_id=space_id,
        author=author,
        content=entry.content,
        content_optimized=entry.content_optimized,
        compression_status=entry.compression_status,
        tags=entry.tags,
        written_by=entry.written_by,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
        indexing_status=IndexingStatus.PENDING,
        indexing_queued_at=now,
    )
    if entry.content_optimized is None and (entry.compressed_dropped or entry.compression_status in _UNDECIDED):
        reset_compression(memory, now)
    return memory
