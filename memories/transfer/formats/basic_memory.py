"""basic-memory's knowledge base: a folder of Markdown files (uploaded as a zip, or one `.md`
file), each with YAML front matter (`title`, `type`, `permalink`, `tags`), observations
(`- [category] text #tag (context)`), typed relations (`- relation_type [[Other note]]`) and
`[[wiki links]]` in its text.

Read: each file becomes a note (its title, its text, its front matter's tags, its folder as a
tag `folder:coffee/beans`, its type other than `note` as `type:guide`, an entity tag of its own
title and of each note it links to, so that the graph links them); each observation becomes a
memory "<title>: <text>" tagged with the note's entity, its category and its #tags; each typed
relation becomes a memory "<title> <relation> <other>." tagged with both notes and
`relation:<relation>`, as for the MCP memory server (memories.transfer.formats.mcp_memory). A
link to a note the folder does not hold is kept: basic-memory links to notes not written yet.
A file whose front matter says `type: memory` (what `knowledge_base` writes for a memory) is
that memory again, with its dates and client. Files are dated by their times in the zip (UTC).

Written (`knowledge_base`): a zip of such a folder, `memories/<yyyy-mm>/…md` one per memory
(its text exactly as the body) and `notes/…md` one per note.
"""

import io
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

import yaml

from gnosem.errors import ValidationError
from memories.transfer.formats.mcp_memory import entity_tag, relation_tag
from memories.transfer.formats.reading import (
    ForeignFile,
    ForeignMemory,
    ForeignNote,
    tags_from,
    text_of,
    time_from,
)

NAME = "basic-memory"
ZIP_MAGIC = b"PK\x03\x04"
MEMORY_TYPE = "memory"
# Bounds on a zip: files in it, bytes once inflated in all, and how much one file may inflate.
MAX_FILES = 20_000
MAX_INFLATED_BYTES = 512 * 2**20
MAX_RATIO = 200
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_OBSERVATION = re.compile(r"^\s*[-*] \[([^\[\]\n]+)\][ \t]+(\S[^\n]*)$", re.MULTILINE)
_RELATION = re.compile(r"^\s*[-*] ([A-Za-z0-9_-]+)[ \t]+\[\[([^\[\]\n]+)\]\][ \t]*(?:\([^\n]*\))?[ \t]*$", re.MULTILINE)
_LINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_HASHTAG = re.compile(r"(?<![\w#])#([\w][\w/-]*)")


@dataclass(frozen=True)
class _File:
    path: PurePosixPath
    text: str
    modified: datetime | None


def read(data: bytes) -> ForeignFile:
    """The notes and memories of a basic-memory folder (a zip) or one note (a `.md` file);
    ValidationError naming the file of anything unreadable, nothing being imported then."""
    files = _zip_files(data) if data.startswith(ZIP_MAGIC) else [_File(PurePosixPath("note.md"), text_of(data), None)]
    memories: list[ForeignMemory] = []
    notes: list[ForeignNote] = []
    skipped: list[str] = []
    markdown = 0
    for file in files:
        if file.path.suffix.lower() != ".md":
            skipped.append(f"{file.path}: not a Markdown note.")
            continue
        markdown += 1
        front, body = _front_matter(file)
        if str(front.get("type", "")).casefold() == MEMORY_TYPE:
            memories.append(_memory(file, front, body))
        else:
            note, facts = _note(file, front, body)
            notes.append(note)
            memories += facts
    if not markdown:
        raise ValidationError("file", "holds no Markdown (.md) note.")
    return ForeignFile(format=NAME, records=markdown, memories=memories, notes=notes, skipped=skipped)


def _zip_files(data: bytes) -> list[_File]:
    """The files of a zip, refusing one that would inflate beyond the bounds or names a path
    outside its folder."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = [entry for entry in archive.infolist() if not entry.is_dir()]
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise ValidationError("file", f"is not a readable zip ({error}).") from None
    if len(entries) > MAX_FILES:
        raise ValidationError("file", f"holds {len(entries):,} files; a folder of at most {MAX_FILES:,} imports.")
    files, inflated = [], 0
    for entry in entries:
        path = PurePosixPath(entry.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or entry.filename.startswith(("/", "\\")) or ":" in path.parts[0]:
            raise ValidationError("file", f"entry {entry.filename[:200]!r}: a path outside the folder.")
        if entry.flag_bits & 0x1:
            raise ValidationError("file", f"entry {entry.filename[:200]!r}: encrypted.")
        if entry.file_size > max(MAX_RATIO * entry.compress_size, 2**20):
            ratio = f"{MAX_RATIO} times"
            raise ValidationError("file", f"entry {entry.filename[:200]!r}: inflates {ratio} or more (a zip bomb?).")
        inflated += entry.file_size
        if inflated > MAX_INFLATED_BYTES:
            raise ValidationError("file", f"inflates to more than {MAX_INFLATED_BYTES // 2**20} MiB.")
        if path.suffix.lower() != ".md" or path.name.startswith("."):
            files.append(_File(path, "", None))
            continue
        try:
            with archive.open(entry) as handle:
                raw = handle.read(entry.file_size + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as error:
            raise ValidationError("file", f"entry {entry.filename[:200]!r}: cannot be read ({error}).") from None
        if len(raw) > entry.file_size:
            raise ValidationError("file", f"entry {entry.filename[:200]!r}: larger than its size in the zip.")
        files.append(_File(path, text_of(raw, str(path)), _zip_time(entry.date_time)))
    return files


def _zip_time(stamp: tuple[int, int, int, int, int, int]) -> datetime | None:
    try:
        return datetime(*stamp, tzinfo=UTC)
    except ValueError:
        return None


def _front_matter(file: _File) -> tuple[dict, str]:
    """The file's front matter (a mapping, {} when it has none) and its text after it."""
    match = _FRONT_MATTER.match(file.text)
    if match is None:
        return {}, file.text
    try:
        front = yaml.safe_load(match[1])
    except yaml.YAMLError as error:
        raise ValidationError("file", f"{file.path}: its front matter is not YAML ({str(error)[:200]}).") from None
    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise ValidationError("file", f"{file.path}: its front matter is not a mapping of keys to values.")
    return front, file.text[match.end() :]


def _labels(value: object) -> list[object]:
    """Front matter tags: a list, or one text of comma-separated tags."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")]
    return value if isinstance(value, list) else []


def _title(file: _File, front: dict) -> str:
    title = front.get("title")
    return str(title).strip() if isinstance(title, str | int | float) and str(title).strip() else file.path.stem


def _memory(file: _File, front: dict, body: str) -> ForeignMemory:
    where = str(file.path)
    created = time_from(front.get("created"), where) or file.modified
    writer = front.get("written_by")
    return ForeignMemory(
        content=body.strip("\n"),
        source=where,
        tags=tags_from(*_labels(front.get("tags"))),
        written_by=writer if isinstance(writer, str) else "",
        created_at=created,
        updated_at=time_from(front.get("modified"), where) or created,
    )


def _note(file: _File, front: dict, body: str) -> tuple[ForeignNote, list[ForeignMemory]]:
    """A file as a note, and the memories its observations and relations become."""
    where = str(file.path)
    title = _title(file, front)
    own = entity_tag(title, "topic")
    folder = str(file.path.parent)
    kind = front.get("type")
    linked = [entity_tag(target.strip(), "topic") for target in _LINK.findall(body)]
    note = ForeignNote(
        title=title,
        content=body.strip("\n") or title,
        source=where,
        tags=tags_from(
            *_labels(front.get("tags")),
            f"folder:{folder}" if folder != "." else None,
            f"type:{kind}" if isinstance(kind, str) and kind.casefold() not in ("note", "") else None,
            own,
            *linked,
        ),
        created_at=file.modified,
        updated_at=file.modified,
    )
    memories = []
    for category, text in _OBSERVATION.findall(body):
        if category.strip().casefold() in ("", "x"):  # a task list's box, not a category
            continue
        memories.append(
            ForeignMemory(
                content=f"{title}: {text.strip()}",
                source=where,
                tags=tags_from(own, category, *_HASHTAG.findall(text)),
                created_at=file.modified,
            )
        )
    for relation, target in _RELATION.findall(body):
        target = target.strip()
        memories.append(
            ForeignMemory(
                content=f"{title} {relation.replace('_', ' ')} {target}.",
                source=where,
                tags=tags_from(own, entity_tag(target, "topic"), relation_tag(relation)),
                created_at=file.modified,
            )
        )
    return note, memories


@dataclass(frozen=True)
class Written:
    """What the writer needs of a memory or a note."""

    title: str
    text: str
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    written_by: str = ""
    public_id: str = ""


def knowledge_base(memories: Iterable[Written], notes: Iterable[Written]) -> bytes:
    """A zip of a basic-memory folder holding these memories and notes."""
    buffer = io.BytesIO()
    taken: set[str] = set()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for memory in memories:
            folder = f"memories/{memory.created_at:%Y-%m}"
            name = _file_name(folder, f"{memory.title} {memory.public_id[:8]}", taken)
            front: dict[str, object] = {
                "title": name.rsplit("/", 1)[1][:-3],
                "type": MEMORY_TYPE,
                "permalink": _permalink(name),
                "tags": memory.tags,
                "created": memory.created_at.isoformat(),
                "modified": memory.updated_at.isoformat(),
                "written_by": memory.written_by,
            }
            _write(archive, name, front, memory.text, memory.updated_at)
        for note in notes:
            name = _file_name("notes", note.title, taken)
            front = {"title": note.title, "type": "note", "permalink": _permalink(name), "tags": note.tags}
            _write(archive, name, front, note.text, note.updated_at)
    return buffer.getvalue()


def _file_name(folder: str, title: str, taken: set[str]) -> str:
    """A file name for a title, unique in the zip: characters a file name cannot hold become "-"."""
    stem = re.sub(r"[^\w .,()'-]+", "-", title).strip(" .-")[:100] or "untitled"
    name, number = f"{folder}/{stem}.md", 1
    while name.casefold() in taken:
        number += 1
        name = f"{folder}/{stem} ({number}).md"
    taken.add(name.casefold())
    return name


def _permalink(name: str) -> str:
    return re.sub(r"[^a-z0-9/]+", "-", name[:-3].casefold()).strip("-")


def _write(archive: zipfile.ZipFile, name: str, front: dict[str, object], text: str, modified: datetime) -> None:
    header = yaml.safe_dump(front, allow_unicode=True, sort_keys=False, default_flow_style=False)
    entry = zipfile.ZipInfo(name, date_time=modified.astimezone(UTC).timetuple()[:6])
    entry.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(entry, f"---\n{header}---\n\n{text}\n")


def title_of(text: str) -> str:
    """A memory's title: its first line, cut at a word within 80 characters."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 80 else line[:80].rsplit(" ", 1)[0] + "…"
