"""JSON Schemas of the MCP tools' arguments and results.

Kept to plain JSON Schema (no `$ref`) that every revision and client understands; the limits
quoted here are the ones memories.validation enforces.
"""

from typing import Any

from django.conf import settings

from memories.models import MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_WRITTEN_BY_CHARS, IndexingStatus
from memories.validation import MAX_HALF_LIFE_DAYS, MAX_QUERY_CHARS, MAX_TOP_K

MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20
DEFAULT_TOP_K = 10

# Inputs -------------------------------------------------------------------------------------

_ID = {"type": "string", "format": "uuid", "description": "The memory's id, as returned by memory_write."}
_CONTENT = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_CONTENT_CHARS,
    "description": (
        "The memory itself: one self-contained fact, decision or preference, written so that it "
        f"makes sense on its own months later (who, what, why). Up to {MAX_CONTENT_CHARS:,} characters."
    ),
}
_TAGS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": MAX_TAG_CHARS},
    "maxItems": MAX_TAGS,
    "description": (
        f"Up to {MAX_TAGS} short labels such as a project or topic (letters, digits and . _ : / -; "
        'stored lower-case), e.g. ["billing", "decision"].'
    ),
}
_TAGS_FILTER = {**_TAGS, "description": "Only memories carrying all of these tags."}
_WRITTEN_BY = {
    "type": "string",
    "maxLength": MAX_WRITTEN_BY_CHARS,
    "description": (
        "The client that wrote the memory. Leave it out: it defaults to this MCP client's name (sent "
        "with each 2026-07-28 request), or else to the name of the API token in use."
    ),
}
_WRITTEN_BY_FILTER = {
    "type": "string",
    "maxLength": MAX_WRITTEN_BY_CHARS,
    "description": "Only memories written by this client (exact name).",
}
_CREATED_AFTER = {
    "type": "string",
    "examples": ["2025-06-01", "2025-06-01T09:30:00Z"],
    "description": "Only memories created at or after this ISO 8601 date or date-time, e.g. 2025-06-01.",
}
_CREATED_BEFORE = {
    "type": "string",
    "examples": ["2025-07-01", "2025-07-01T00:00:00Z"],
    "description": "Only memories created before this ISO 8601 date or date-time, e.g. 2025-07-01T00:00:00Z.",
}
_RAW = {
    "type": "boolean",
    "default": False,
    "description": "Return the text exactly as written instead of its compressed form.",
}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


WRITE_INPUT = _object({"content": _CONTENT, "tags": _TAGS, "written_by": _WRITTEN_BY}, ("content",))
SEARCH_INPUT = _object(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
            "description": (
                "What to look for, as a question or keywords; exact identifiers (error codes, SHAs) work too."
            ),
        },
        "top_k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOP_K,
            "default": DEFAULT_TOP_K,
            "description": f"How many memories to return (1-{MAX_TOP_K}).",
        },
        "tags": _TAGS_FILTER,
        "written_by": _WRITTEN_BY_FILTER,
        "created_after": _CREATED_AFTER,
        "created_before": _CREATED_BEFORE,
        "min_score": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 0,
            "description": "Leave out results scoring below this (scores run from 0 to 1.0 at best).",
        },
        "half_life_days": {
            "type": "number",
            "minimum": 0,
            "maximum": MAX_HALF_LIFE_DAYS,
            "description": (
                "Recency boost: newer memories rank a little higher, the boost halving every this many days "
                f"(this server's default: {settings.GNOSEM_HALF_LIFE_DAYS:g}). 0 turns it off, e.g. when asking "
                "about old events."
            ),
        },
        "diversity": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": (
                "How strongly near-duplicates of better results are pushed down (0 = pure relevance, "
                f"1 = most diverse; this server's default: {settings.GNOSEM_DIVERSITY:g})."
            ),
        },
        "explain": {
            "type": "boolean",
            "default": False,
            "description": "Add to each result how its score came about (each signal's rank and score, each factor).",
        },
        "raw": _RAW,
    },
    ("query",),
)
LIST_INPUT = _object(
    {
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIST_LIMIT,
            "default": DEFAULT_LIST_LIMIT,
            "description": f"How many memories per page (1-{MAX_LIST_LIMIT}).",
        },
        "cursor": {"type": "string", "description": "The next_cursor of the previous page; omit for the newest."},
        "tags": _TAGS_FILTER,
        "written_by": _WRITTEN_BY_FILTER,
        "created_after": _CREATED_AFTER,
        "created_before": _CREATED_BEFORE,
        "raw": _RAW,
    }
)
GET_INPUT = _object({"id": _ID, "raw": _RAW}, ("id",))
UPDATE_INPUT = _object(
    {
        "id": _ID,
        "content": {**_CONTENT, "description": "New text replacing the memory's content."},
        "tags": {**_TAGS, "description": "New tags replacing all of the memory's tags ([] removes them)."},
        "written_by": {**_WRITTEN_BY, "description": "New client name for the memory."},
    },
    ("id",),
)
DELETE_INPUT = _object({"id": _ID}, ("id",))

# Outputs ------------------------------------------------------------------------------------

_MEMORY_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "format": "uuid"},
    "content": {"type": "string", "description": "The compressed form when optimized, else the text as written."},
    "content_raw": {"type": "string", "description": "The text as written; present only when optimized."},
    "optimized": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "written_by": {"type": "string"},
    "created_at": {"type": "string", "format": "date-time"},
    "updated_at": {"type": "string", "format": "date-time"},
    "indexing_status": {
        "type": "string",
        "enum": list(IndexingStatus.values),
        "description": "pending: found by exact words only until embedded; indexed: found by meaning too.",
    },
    "tokens": {"type": "integer", "description": "Estimated tokens of `content`."},
}
_MEMORY_REQUIRED = tuple(name for name in _MEMORY_PROPERTIES if name != "content_raw")
MEMORY = _object(_MEMORY_PROPERTIES, _MEMORY_REQUIRED)
SEARCH_HIT = _object(
    {
        **_MEMORY_PROPERTIES,
        "score": {"type": "number", "description": "Relevance, 1.0 at best."},
        "explanation": {
            "type": "object",
            "description": (
                "With explain: `signals` (rank and raw score in each signal that found the memory), `fused` (their "
                "combined score, with `context` gained from neighbouring memories), the factors applied after it "
                "(`recency`, `time_window`, `diversity`) and the final `score`."
            ),
        },
    },
    (*_MEMORY_REQUIRED, "score"),
)
_WRITE_FIELDS = ("id", "indexing_status", "tags", "written_by", "created_at", "tokens")
WRITE_OUTPUT = _object({name: _MEMORY_PROPERTIES[name] for name in _WRITE_FIELDS}, _WRITE_FIELDS)
SEARCH_OUTPUT = _object({"results": {"type": "array", "items": SEARCH_HIT}}, ("results",))
LIST_OUTPUT = _object(
    {
        "memories": {"type": "array", "items": MEMORY},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null at the end.",
        },
    },
    ("memories", "next_cursor"),
)
DELETE_OUTPUT = _object(
    {"id": {"type": "string", "format": "uuid"}, "deleted": {"type": "boolean", "const": True}}, ("id", "deleted")
)
