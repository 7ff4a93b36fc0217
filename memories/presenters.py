"""The one outward shape of a memory and of a search result, shared by MCP and the REST API."""

from typing import Any

from memories.models import Memory
from memories.search.pipeline import SearchHit


def memory_to_dict(memory: Memory, *, raw: bool = False) -> dict[str, Any]:
    """A memory as every interface returns it.

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
    """A search result: the memory's shape plus its `score`, and with `explain=True` its `explanation`."""
    data = {**memory_to_dict(hit.memory, raw=raw), "score": round(hit.score, 4)}
    if explain:
        data["explanation"] = hit.explanation
    return data
