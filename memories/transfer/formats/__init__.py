"""Files of other memory tools, and Gnosem's own export: which tool wrote a file (`recognise`), and
a file read into what the import takes (`read_import_file`). Each tool's reader is a module here.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gnosem.errors import ValidationError
from gnosem.json_input import JsonInputError, load_json
from memories.transfer.document import FORMAT, parse_document
from memories.transfer.formats import basic_memory, mcp_memory, mcp_memory_service, mem0
from memories.transfer.formats.reading import ForeignFile

GNOSEM = "gnosem"
# Each format's name and what a person knows its file as.
FORMATS = {
    GNOSEM: "Gnosem export (.json)",
    mcp_memory.NAME: "MCP memory server (memory.jsonl)",
    basic_memory.NAME: "basic-memory (a .zip of its folder, or one .md note)",
    mcp_memory_service.NAME: "mcp-memory-service (its export .json or its SQLite store)",
    mem0.NAME: "mem0 (get_all or export .json)",
}
FORMAT_NAMES = list(FORMATS)
READERS: dict[str, Callable[[bytes], ForeignFile]] = {
    mcp_memory.NAME: mcp_memory.read,
    basic_memory.NAME: basic_memory.read,
    mcp_memory_service.NAME: mcp_memory_service.read,
    mem0.NAME: mem0.read,
}


@dataclass(frozen=True)
class ImportFile:
    """A file read for import: its format, how many records it held (entries, lines, files), the
    export document it amounts to, and the records left out and why. Another tool's memories
    are duplicates of the same text whenever written (`same_text`): their dates, where they
    have any, are not Gnosem's."""

    format: str
    records: int
    document: dict[str, Any]
    skipped: list[str] = field(default_factory=list)

    @property
    def same_text(self) -> bool:
        return self.format != GNOSEM


def clean_format(value: object) -> str | None:
    """A format's name as asked for (None or "": recognise it from the file)."""
    if value is None or value == "":
        return None
    if value not in FORMATS:
        raise ValidationError("format", f"must be one of {', '.join(FORMATS)}; got {str(value)[:40]!r}.")
    return str(value)


def recognise(data: bytes) -> str:
    """The format of a file, from what it holds: a zip or Markdown is basic-memory's, a SQLite
    database mcp-memory-service's, JSON lines of entities and relations the MCP memory server's,
    JSON mem0's or mcp-memory-service's by their shapes; any other JSON is read as Gnosem's own,
    whose reader says what is wrong with it. ValidationError for anything else."""
    if data.startswith(mcp_memory_service.SQLITE_MAGIC):
        return mcp_memory_service.NAME
    if data.startswith(basic_memory.ZIP_MAGIC):
        return basic_memory.NAME
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start.startswith(b"---"):
        return basic_memory.NAME
    if not start.startswith((b"{", b"[")):
        raise ValidationError(
            "file",
            "is not a file this server can tell the tool of; choose its format: " + ", ".join(FORMATS.values()) + ".",
        )
    if mcp_memory.is_first_line(start.split(b"\n", 1)[0]):
        return mcp_memory.NAME
    try:
        document = load_json(data)
    except JsonInputError:
        return GNOSEM
    if mcp_memory_service.is_export(document):
        return mcp_memory_service.NAME
    if not (isinstance(document, dict) and document.get("format") == FORMAT) and mem0.items_of(document) is not None:
        return mem0.NAME
    return GNOSEM


def read_import_file(data: bytes, format: object = None) -> ImportFile:
    """The file read as `format` (recognised when not given); ValidationError saying what in it
    cannot be read, nothing being imported then."""
    chosen = clean_format(format) or recognise(data)
    if chosen == GNOSEM:
        document = parse_document(data)
        parts = [document.get(part) for part in ("memories", "notes")] if isinstance(document, dict) else []
        records = sum(len(part) for part in parts if isinstance(part, list))
        return ImportFile(format=GNOSEM, records=records, document=document)
    foreign = READERS[chosen](data)
    return ImportFile(format=chosen, records=foreign.records, document=foreign.document(), skipped=foreign.skipped)
