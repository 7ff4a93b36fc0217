"""The export document: its format, version and fields, the import size limit, and reading an
uploaded file as JSON.

The document (`FORMAT`, version `VERSION`):

    {"format": "gnosem-export", "version": 3, "exported_at": "...",
     "memories": [{"id", "content", "content_optimized", "compression_status", "tags",
                   "written_by", "created_at", "updated_at", "pinned", "superseded_by",
                   "duplicate_of", "also_written_by", "revisions": [{"content", "tags",
                   "written_by", "valid_from", "replaced_at"}, ...], "shared_from",
                   "shared_by"}, ...],
     "notes": [{"id", "title", "content", "format", "tags", "created_at", "updated_at"}, ...]}

Version 1 files (without `pinned`, `superseded_by`, `duplicate_of`, `also_written_by` and
`revisions`), version 2 files (without notes) and files without a memory's provenance
(`shared_from`, `shared_by`) still import. `superseded_by` and `duplicate_of` name another entry of
the same file (by its `id`), and following links of one kind never comes back to an entry; the
link is restored to whatever id that entry gets.
"""

from typing import Any, NoReturn

from django.conf import settings

from gnosem.errors import ValidationError
from gnosem.json_input import JsonInputError, load_json

FORMAT = "gnosem-export"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
# The first version with a "notes" list.
NOTES_SINCE = 3
MEMORY_FIELDS = (
    "id",
    "content",
    "content_optimized",
    "compression_status",
    "tags",
    "written_by",
    "created_at",
    "updated_at",
    "pinned",
    "superseded_by",
    "duplicate_of",
    "also_written_by",
    "revisions",
    "shared_from",
    "shared_by",
)
# Fields naming another memory of the file.
LINK_FIELDS = ("superseded_by", "duplicate_of")
REVISION_FIELDS = ("content", "tags", "written_by", "valid_from", "replaced_at")
NOTE_FIELDS = ("id", "title", "content", "format", "tags", "created_at", "updated_at")
# Problems listed in one refusal; the rest are counted.
MAX_REPORTED_PROBLEMS = 10
# Notes read or inserted at once hold at most about this many bytes of text (a note can hold up to
# GNOSEM_NOTE_MAX_BYTES, 10 MB at most: a thousand of them would not fit in memory).
NOTE_BATCH_BYTES = 32 * 2**20


def note_batch() -> int:
    """How many notes to read or insert at once (NOTE_BATCH_BYTES of the largest ones)."""
    return max(1, NOTE_BATCH_BYTES // settings.GNOSEM_NOTE_MAX_BYTES)


def exceeds_import_limit(content_length: str | None) -> bool:
    """Whether a request body of this declared length is over GNOSEM_IMPORT_MAX_BYTES. Judged
    before anything is read: Django never reads past Content-Length."""
    try:
        return int(content_length or 0) > settings.GNOSEM_IMPORT_MAX_BYTES
    except ValueError:
        return True


def import_limit_description() -> str:
    """The import limit for people: "64 MiB", "2 KiB"."""
    limit = settings.GNOSEM_IMPORT_MAX_BYTES
    return f"{limit / 2**20:.3g} MiB" if limit >= 2**20 else f"{limit / 2**10:.3g} KiB"


def refuse_file(problems: list[str]) -> NoReturn:
    """Refuse a file to import, naming its first MAX_REPORTED_PROBLEMS problems and counting the
    rest (ValidationError)."""
    more = len(problems) - MAX_REPORTED_PROBLEMS
    listed = "; ".join(problem.rstrip(".") for problem in problems[:MAX_REPORTED_PROBLEMS])
    raise ValidationError("file", f"nothing was imported: {listed}{f'; and {more} more' if more > 0 else ''}.")


def parse_document(data: bytes | str) -> dict[str, Any]:
    """The JSON document in an uploaded file, read as every JSON door reads, or ValidationError
    saying why it is not one."""
    try:
        return load_json(data)
    except JsonInputError as exc:
        raise ValidationError("file", f"{exc.problem}; upload the .json file a Gnosem export produced.") from None
