"""The one outward shape of a memory, of a search result and of their lists, shared by MCP and the
REST API: the functions that make them and, next to each, the JSON Schema that states it. MCP
publishes these schemas as its tools' `outputSchema`; the OpenAPI document turns them into its
components (memories.api.serializers). Plain JSON Schema without `$ref`, which every MCP client
reads."""

from collections.abc import Iterable
from typing import Any

from memories.models import IndexingStatus, Memory
from memories.search.pipeline import SearchHit
from memories.selectors import MemoryPage


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
}
_MEMORY_REQUIRED = [name for name in MEMORY_PROPERTIES if name != "content_raw"]
MEMORY_SCHEMA = _object(MEMORY_PROPERTIES, _MEMORY_REQUIRED)
SEARCH_HIT_SCHEMA = _object(
    {
        **MEMORY_PROPERTIES,
        "score": {"type": "number", "description": "Relevance, 1.0 at best."},
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
    [*_MEMORY_REQUIRED, "score"],
)
SEARCH_RESULTS_SCHEMA = _object({"results": {"type": "array", "items": SEARCH_HIT_SCHEMA}}, ["results"])
MEMORY_PAGE_SCHEMA = _object(
    {
        "memories": {"type": "array", "items": MEMORY_SCHEMA},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null at the end.",
        },
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
        tokens=memory.tokens_optimized if optimized else memory.tokens_raw,
    )
    return data


def search_hit_to_dict(hit: SearchHit, *, raw: bool = False, explain: bool = False) -> dict[str, Any]:
    """A search result (SEARCH_HIT_SCHEMA): the memory's shape plus its `score`, and with
    `explain=True` its `explanation`."""
    data = {**memory_to_dict(hit.memory, raw=raw), "score": round(hit.score, 4)}
    if explain:
        data["explanation"] = hit.explanation
    return data


def search_results_to_dict(hits: list[SearchHit], *, raw: bool = False, explain: bool = False) -> dict[str, Any]:
    """A search's answer (SEARCH_RESULTS_SCHEMA)."""
    return {"results": [search_hit_to_dict(hit, raw=raw, explain=explain) for hit in hits]}


def memory_page_to_dict(page: MemoryPage, *, raw: bool = False) -> dict[str, Any]:
    """A page of a list (MEMORY_PAGE_SCHEMA)."""
    return {"memories": [memory_to_dict(memory, raw=raw) for memory in page.memories], "next_cursor": page.next_cursor}
