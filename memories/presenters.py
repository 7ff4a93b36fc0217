"""The one outward shape of a memory, of a search result and of their lists, shared by MCP and the
REST API: the functions that make them and, next to each, the JSON Schema that states it. MCP
publishes these schemas as its tools' `outputSchema`; the OpenAPI document turns them into its
components (memories.api.serializers). Plain JSON Schema without `$ref`, which every MCP client
reads."""

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from memories.budget import fit_to_budget, reading_tokens
from memories.models import IndexingStatus, Memory, MemoryRevision
from memories.search.pipeline import SearchHit
from memories.selectors import MemoryPage

Item = TypeVar("Item")


def _object(properties: dict[str, Any], required: Iterable[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


MEMORY_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "format": "uuid"},
    "content": {
        "type": "string",
        "description": "The compressed form when there is one (unless raw), else the text as written.",
    },
    "optimized": {"type": "boolean", "description": "Whether `content` is the compressed form."},
    "content_raw": {"type": "string", "description": "The text as written; present only when `optimized`."},
    "tags": {"type": "array", "items": {"type": "string"}},
    "written_by": {"type": "string", "description": "The client that wrote the memory."},
    "created_at": {"type": "string", "format": "date-time"},
    "updated_at": {"type": "string", "format": "date-time"},
    "indexing_status": {
        "type": "string",
        "enum": list(IndexingStatus.values),
        "description": (
            "pending: found by exact words only until embedded; indexed: found by meaning too; "
            "failed: found by exact words only until retried (the dashboard's Retry failed)."
        ),
    },
    "tokens": {"type": "integer", "description": "Estimated tokens to read `content`."},
    "pinned": {"type": "boolean", "description": "Standing context: session_start lists pinned memories first."},
    "superseded_by": {
        "type": ["string", "null"],
        "format": "uuid",
        "description": (
            "The memory that corrects this one, or null. A superseded memory is left out of search, counts "
            "and session_start unless include_superseded."
        ),
    },
    "also_written_by": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Other clients that wrote this same text again (stored once).",
    },
    "duplicate_of": {
        "type": ["string", "null"],
        "format": "uuid",
        "description": "The older memory this one restates in other words (a near-duplicate), or null.",
    },
}
_MEMORY_REQUIRED = [name for name in MEMORY_PROPERTIES if name != "content_raw"]
MEMORY_SCHEMA = _object(MEMORY_PROPERTIES, _MEMORY_REQUIRED)
DUPLICATE_PROPERTY: dict[str, Any] = {
    "type": "boolean",
    "description": (
        "True when the same text (case and spacing aside) was already stored: this is that memory, which now "
        "also carries the tags given and lists the writer in also_written_by; nothing new was stored."
    ),
}
WRITTEN_MEMORY_SCHEMA = _object(
    {**MEMORY_PROPERTIES, "duplicate": DUPLICATE_PROPERTY}, [*_MEMORY_REQUIRED, "duplicate"]
)
SEARCH_HIT_SCHEMA = _object(
    {
        **MEMORY_PROPERTIES,
        "score": {"type": "number", "description": "Relevance, 1.0 at best."},
        "duplicates": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "description": (
                "Memories saying the same in other words (near-duplicates), shown once as this result; their "
                "writers are in also_written_by."
            ),
        },
        "explanation": {
            "type": "object",
            "description": (
                "Only with explain. `signals`: rank and raw score in each signal that found the memory; "
                "`fused`: their combined score (1.0 for the best candidate, also counting neighbouring memories); the "
                "factors applied after it (`recency`, `time_window`, `diversity`, each present when applied); "
                "the final `score`."
            ),
        },
    },
    [*_MEMORY_REQUIRED, "score", "duplicates"],
)
# Present when a read is given max_tokens.
CUT_FOR_BUDGET_PROPERTIES: dict[str, Any] = {
    "cut_for_budget": {
        "type": "array",
        "items": {"type": "string", "format": "uuid"},
        "description": (
            "Only with max_tokens: the ids of the memories left out because they did not fit the budget "
            "(read them with memory_get, or ask again with a larger max_tokens)."
        ),
    },
}
SEARCH_RESULTS_SCHEMA = _object(
    {"results": {"type": "array", "items": SEARCH_HIT_SCHEMA}, **CUT_FOR_BUDGET_PROPERTIES}, ["results"]
)
MEMORY_PAGE_SCHEMA = _object(
    {
        "memories": {"type": "array", "items": MEMORY_SCHEMA},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null at the end.",
        },
        **CUT_FOR_BUDGET_PROPERTIES,
    },
    ["memories", "next_cursor"],
)


def memory_to_dict(memory: Memory, *, raw: bool = False) -> dict[str, Any]:
    """A memory as every interface returns it (MEMORY_SCHEMA).

    `content` is the compressed form when there is one (then `content_raw` carries the text as
    written and `optimized` is true); with `raw=True`, or without a compressed form, `content`
    is the text as written. `tokens` estimates the cost of reading `content`.
    """
    optimized = memory.content_optimized is not None and not raw
    successor = memory.superseded_by.public_id if memory.superseded_by_id else None
    original = memory.duplicate_of.public_id if memory.duplicate_of_id else None
    data: dict[str, Any] = {
        "id": str(memory.public_id),
        "content": memory.content_optimized if optimized else memory.content,
        "optimized": optimized,
    }
    if optimized:
        data["content_raw"] = memory.content
    data.update(
        tags=list(memory.tags),
        written_by=memory.written_by,
        created_at=memory.created_at.isoformat(),
        updated_at=memory.updated_at.isoformat(),
        indexing_status=memory.indexing_status,
        tokens=reading_tokens(memory, raw=raw),
        pinned=memory.pinned,
        superseded_by=str(successor) if successor else None,
        also_written_by=list(memory.also_written_by),
        duplicate_of=str(original) if original else None,
    )
    return data


def written_memory_to_dict(memory: Memory) -> dict[str, Any]:
    """What a write answers (WRITTEN_MEMORY_SCHEMA): the memory stored, or the one that already held its text."""
    return {**memory_to_dict(memory), "duplicate": memory.written_again}


def search_hit_to_dict(hit: SearchHit, *, raw: bool = False, explain: bool = False) -> dict[str, Any]:
    """A search result (SEARCH_HIT_SCHEMA): the memory's shape plus its `score` and its near-duplicates
    (their writers joining `also_written_by`), and with `explain=True` its `explanation`."""
    data = {**memory_to_dict(hit.memory, raw=raw), "score": round(hit.score, 4)}
    data["duplicates"] = [str(member.public_id) for member in hit.duplicates]
    writers = [*data["also_written_by"], *(w for m in hit.duplicates for w in (m.written_by, *m.also_written_by))]
    data["also_written_by"] = [writer for writer in dict.fromkeys(writers) if writer and writer != data["written_by"]]
    if explain:
        data["explanation"] = hit.explanation
    return data


def search_results_to_dict(
    hits: list[SearchHit], *, raw: bool = False, explain: bool = False, max_tokens: int | None = None
) -> dict[str, Any]:
    """A search's answer (SEARCH_RESULTS_SCHEMA); with `max_tokens`, the best results that fit it."""
    hits, cut = _budgeted(hits, lambda hit: hit.memory, raw, max_tokens)
    return {"results": [search_hit_to_dict(hit, raw=raw, explain=explain) for hit in hits], **cut}


def memory_page_to_dict(page: MemoryPage, *, raw: bool = False, max_tokens: int | None = None) -> dict[str, Any]:
    """A page of a list (MEMORY_PAGE_SCHEMA); with `max_tokens`, the page's memories that fit it
    (the next page starts after the last one read, cut or not)."""
    memories, cut = _budgeted(page.memories, lambda memory: memory, raw, max_tokens)
    return {
        "memories": [memory_to_dict(memory, raw=raw) for memory in memories],
        "next_cursor": page.next_cursor,
        **cut,
    }


def _budgeted(
    items: list[Item], memory_of: Callable[[Item], Memory], raw: bool, max_tokens: int | None
) -> tuple[list[Item], dict[str, Any]]:
    """The items that fit `max_tokens` and the `cut_for_budget` property (none without a budget)."""
    if max_tokens is None:
        return items, {}
    kept, cut = fit_to_budget(items, lambda item: reading_tokens(memory_of(item), raw=raw), max_tokens)
    return kept, {"cut_for_budget": [str(memory_of(item).public_id) for item in cut]}


REVISION_SCHEMA = _object(
    {
        "content": {"type": "string", "description": "The text as it was."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "written_by": {"type": "string"},
        "valid_from": {"type": "string", "format": "date-time", "description": "When this version took effect."},
        "replaced_at": {"type": "string", "format": "date-time", "description": "When an update replaced it."},
    },
    ["content", "tags", "written_by", "valid_from", "replaced_at"],
)
HISTORY_SCHEMA = _object(
    {
        "memory": MEMORY_SCHEMA,
        "revisions": {
            "type": "array",
            "items": REVISION_SCHEMA,
            "description": "Earlier versions, newest first (the latest 100 are kept).",
        },
    },
    ["memory", "revisions"],
)
COUNT_SCHEMA = _object(
    {
        "count": {"type": "integer", "description": "How many memories match: exact, not estimated."},
        "groups": {
            "type": "array",
            "items": _object({"key": {"type": "string"}, "count": {"type": "integer"}}, ["key", "count"]),
            "description": (
                "Only with group_by, most first. A memory with several tags counts once per tag; untagged "
                'memories form the key "". Months are YYYY-MM (UTC).'
            ),
        },
        "by_meaning": {
            "type": "boolean",
            "description": "False when a query could be matched by its words only (the embedding model failed).",
        },
    },
    ["count", "by_meaning"],
)
SESSION_SCHEMA = _object(
    {
        "text": {
            "type": "string",
            "description": "The context to read: pinned memories, what is new since this client's last memory, and "
            "with a query the most relevant ones, as numbered lines.",
        },
        "ids": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "description": "The memory behind each numbered line, in order (line 1 is ids[0]).",
        },
        "pinned": {"type": "integer"},
        "recent": {"type": "integer"},
        "relevant": {"type": "integer"},
        "left_out": {"type": "integer", "description": "Memories left out for the token budget."},
        "since": {
            "type": ["string", "null"],
            "format": "date-time",
            "description": "When this client last wrote a memory (null: never; then the newest are listed).",
        },
        "memories_total": {"type": "integer", "description": "The user's current (not superseded) memories."},
        "tokens": {"type": "integer", "description": "Estimated tokens of `text` (at most max_tokens)."},
    },
    ["text", "ids", "pinned", "recent", "relevant", "left_out", "since", "memories_total", "tokens"],
)


def revision_to_dict(revision: MemoryRevision) -> dict[str, Any]:
    """An earlier version (REVISION_SCHEMA), as history and export both give it."""
    return {
        "content": revision.content,
        "tags": list(revision.tags),
        "written_by": revision.written_by,
        "valid_from": revision.valid_from.isoformat(),
        "replaced_at": revision.replaced_at.isoformat(),
    }


def history_to_dict(memory: Memory, revisions: list[MemoryRevision]) -> dict[str, Any]:
    """A memory and its earlier versions (HISTORY_SCHEMA)."""
    return {"memory": memory_to_dict(memory, raw=True), "revisions": [revision_to_dict(r) for r in revisions]}
