"""What a reader of another tool's file gives the import: the memories and notes it read, each
with the place in the file it came from, and the records it left out and why (`ForeignFile`); and
the pieces every reader shares (lines of text, tags made from another tool's labels, times).

A file is refused whole (ValidationError naming the line or entry) when any record cannot be read
or would not be stored; a record that is readable but has nothing to become here (a relation to
an entity the file does not hold) is left out and listed in `skipped`.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from django.utils import timezone

from gnosem.errors import ValidationError
from memories.models import MAX_TAG_CHARS, MAX_TAGS, NoteFormat
from memories.notes.services import clean_note_content, clean_note_title
from memories.transfer.document import FORMAT, VERSION, refuse_file
from memories.validation import clean_content, clean_datetime, clean_tags, clean_written_by

# A line longer than this is no record of any format read here (a memory holds 50,000 characters).
MAX_LINE_BYTES = 1_000_000
_NOT_IN_TAG = re.compile(r"[^a-z0-9._:/-]+")


@dataclass(frozen=True)
class ForeignMemory:
    """A memory read from another tool's file; `source` names where ("line 12", "entry 3")."""

    content: str
    source: str
    tags: list[str] = field(default_factory=list)
    written_by: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class ForeignNote:
    """A note read from another tool's file; `source` names where (its path in the folder)."""

    title: str
    content: str
    source: str
    tags: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class ForeignFile:
    """What one file holds: `records` read (in the tool's own terms: lines, entries, files), the
    memories and notes they become, and what was left out and why."""

    format: str
    records: int
    memories: list[ForeignMemory]
    notes: list[ForeignNote] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def document(self, now: datetime | None = None) -> dict[str, Any]:
        """The file as a Gnosem export document (memories.transfer.document), checked: what the
        import takes. Undated records are dated `now`. ValidationError naming each record that
        would not be stored."""
        now = now or timezone.now()
        problems: list[str] = []
        memories, notes = [], []
        for memory in self.memories:
            try:
                memories.append(_memory_entry(memory, now))
            except ValidationError as error:
                problems.append(f"{memory.source}: {error}")
        for note in self.notes:
            try:
                notes.append(_note_entry(note, now))
            except ValidationError as error:
                problems.append(f"{note.source}: {error}")
        if problems:
            refuse_file(problems)
        return {"format": FORMAT, "version": VERSION, "memories": memories, "notes": notes}


def _memory_entry(memory: ForeignMemory, now: datetime) -> dict[str, Any]:
    created = memory.created_at or now
    return {
        "content": clean_content(memory.content),
        "tags": clean_tags(memory.tags),
        "written_by": clean_written_by(memory.written_by),
        "created_at": created.isoformat(),
        "updated_at": max(created, memory.updated_at or created).isoformat(),
    }


def _note_entry(note: ForeignNote, now: datetime) -> dict[str, Any]:
    created = note.created_at or now
    return {
        "title": clean_note_title(note.title),
        "content": clean_note_content(note.content),
        "format": NoteFormat.MARKDOWN,
        "tags": clean_tags(note.tags),
        "created_at": created.isoformat(),
        "updated_at": max(created, note.updated_at or created).isoformat(),
    }


def text_of(data: bytes, what: str = "the file") -> str:
    """`data` as UTF-8 text (a byte order mark allowed), or ValidationError naming the line of the
    first byte that is not."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValidationError("file", f"{what}, line {line}: not UTF-8 text (byte {error.start}).") from None
    if "\x00" in text:
        raise ValidationError("file", f"{what}, line {text[: text.index(chr(0))].count(chr(10)) + 1}: a NUL character.")
    return text


def text_lines(data: bytes) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a text file with their numbers (from 1)."""
    text = text_of(data)
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > MAX_LINE_BYTES:
            raise ValidationError("file", f"line {number}: longer than {MAX_LINE_BYTES:,} characters.")
        if line.strip():
            yield number, line


def tag_from(label: object) -> str | None:
    """Another tool's tag or label as a tag here ("Python Tips" → "python-tips"); None when
    nothing of it fits a tag."""
    if not isinstance(label, str | int | float) or isinstance(label, bool):
        return None
    tag = _NOT_IN_TAG.sub("-", str(label).casefold()).strip("-._:/")
    return tag[:MAX_TAG_CHARS].rstrip("-._:/") or None


def tags_from(*labels: object) -> list[str]:
    """Labels as tags, distinct, in order, at most MAX_TAGS."""
    tags = [tag for label in labels if (tag := tag_from(label))]
    return list(dict.fromkeys(tags))[:MAX_TAGS]


def time_from(value: object, where: str) -> datetime | None:
    """A time as another tool stores it: ISO 8601 text (a naive one read as UTC), seconds since
    1970 (a number, or text of one), or a date or time YAML read; None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValidationError("file", f"{where}: {value!r} is not a time.") from None
    if isinstance(value, str):
        try:
            return time_from(float(value), where)
        except ValueError:
            pass
        try:
            parsed = clean_datetime("time", value.replace("Z", "+00:00"))
        except ValidationError:
            raise ValidationError("file", f"{where}: {value[:40]!r} is not a time.") from None
        return parsed.replace(tzinfo=UTC) if parsed is not None and parsed.tzinfo is None else parsed
    raise ValidationError("file", f"{where}: {str(value)[:40]!r} is not a time.")
