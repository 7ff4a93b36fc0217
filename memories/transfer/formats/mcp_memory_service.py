"""mcp-memory-service's memories: its JSON export (`{"export_metadata": {...}, "memories": [...]}`,
each memory with `content`, `content_hash`, `tags` (a list), `memory_type`, `metadata`, `store`,
`created_at` and `updated_at` in seconds since 1970) or its SQLite store (the `memories` table,
tags one comma-separated text, deleted rows marked by `deleted_at`).

Each memory becomes a memory dated as there, written by "mcp-memory-service", keeping its tags
(but the tool's "untagged", which stands for none), its type (`type:decision`), a store other
than the default (`store:work`) and its metadata's plain values (`key:value`) as tags. A deleted
row of the store is left out and listed.
"""

import sqlite3
import tempfile
from pathlib import Path

from gnosem.errors import ValidationError
from gnosem.json_input import JsonInputError, load_json
from memories.transfer.formats.reading import ForeignFile, ForeignMemory, tags_from, time_from

NAME = "mcp-memory-service"
WRITTEN_BY = "mcp-memory-service"
SQLITE_MAGIC = b"SQLite format 3\x00"
# The tag the tool stores for a memory without tags.
NO_TAGS = "untagged"
DEFAULT_STORE = "default"
_COLUMNS = ("content", "tags", "memory_type", "metadata", "created_at", "updated_at", "deleted_at", "store")


def is_export(document: object) -> bool:
    """Whether a JSON document is the tool's export."""
    return isinstance(document, dict) and "export_metadata" in document and isinstance(document.get("memories"), list)


def read(data: bytes) -> ForeignFile:
    """The memories of the tool's export or SQLite store; ValidationError naming the entry or row
    of anything unreadable."""
    if data.startswith(SQLITE_MAGIC):
        return _read_store(data)
    try:
        document = load_json(data)
    except JsonInputError as error:
        raise ValidationError("file", f"{error.problem}; expected mcp-memory-service's export (.json).") from None
    if not is_export(document):
        raise ValidationError("file", 'is not an mcp-memory-service export: expected "export_metadata" and "memories".')
    memories = []
    for number, item in enumerate(document["memories"], start=1):
        if not isinstance(item, dict):
            raise ValidationError("file", f"entry {number}: not an object.")
        memories.append(_memory(item, f"entry {number}"))
    return ForeignFile(format=NAME, records=len(memories), memories=memories)


def _read_store(data: bytes) -> ForeignFile:
    """The live memories of the tool's SQLite store, read from a private copy, opened read-only
    with the schema's functions not trusted (the file is not ours)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memories.db"
        path.write_bytes(data)
        try:
            connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        except sqlite3.Error as error:
            raise ValidationError("file", f"is not a readable SQLite database ({error}).") from None
        try:
            connection.execute("PRAGMA trusted_schema = OFF")
            kind = connection.execute("SELECT type FROM sqlite_master WHERE name = 'memories'").fetchone()
            if kind != ("table",):
                raise ValidationError("file", "is a SQLite database without mcp-memory-service's memories table.")
            present = {row[1] for row in connection.execute("PRAGMA table_info(memories)")}
            if "content" not in present:
                raise ValidationError("file", "is a SQLite database whose memories table has no content column.")
            columns = ", ".join(column if column in present else "NULL" for column in _COLUMNS)
            rows = connection.execute(f"SELECT rowid, {columns} FROM memories ORDER BY rowid").fetchall()
        except sqlite3.Error as error:
            raise ValidationError("file", f"cannot be read as mcp-memory-service's store ({error}).") from None
        finally:
            connection.close()
    memories, skipped = [], []
    for rowid, *values in rows:
        row = dict(zip(_COLUMNS, values, strict=True))
        where = f"row {rowid}"
        if row["deleted_at"] is not None:
            skipped.append(f"{where}: deleted in mcp-memory-service.")
            continue
        row["tags"] = [tag for tag in (row["tags"] or "").split(",") if tag.strip()]
        try:
            row["metadata"] = load_json(row["metadata"]) if row["metadata"] else {}
        except JsonInputError:
            raise ValidationError("file", f"{where}: its metadata is not JSON.") from None
        memories.append(_memory(row, where))
    return ForeignFile(format=NAME, records=len(rows), memories=memories, skipped=skipped)


def _memory(item: dict, where: str) -> ForeignMemory:
    content, tags, metadata = item.get("content"), item.get("tags") or [], item.get("metadata") or {}
    if not isinstance(content, str):
        raise ValidationError("file", f'{where}: "content" must be text.')
    if not isinstance(tags, list) or not isinstance(metadata, dict):
        raise ValidationError("file", f'{where}: "tags" must be a list and "metadata" an object.')
    kind, store = item.get("memory_type"), item.get("store")
    plain = [f"{key}:{value}" for key, value in metadata.items() if isinstance(value, str | int | float)]
    return ForeignMemory(
        content=content,
        source=where,
        tags=tags_from(
            *(tag for tag in tags if tag != NO_TAGS),
            f"type:{kind}" if isinstance(kind, str) and kind else None,
            f"store:{store}" if isinstance(store, str) and store and store != DEFAULT_STORE else None,
            *plain,
        ),
        written_by=WRITTEN_BY,
        created_at=time_from(item.get("created_at"), where),
        updated_at=time_from(item.get("updated_at"), where),
    )
