"""Token-budgeted reads: max_tokens on search and list keeps what fits and names what was cut."""

import pytest

from memories import services
from memories.models import Memory

SHORT = "The user prefers tabs over spaces in Go code."  # 12 tokens
LONG = "The release checklist for the mobile app: " + "check the store listing and screenshots; " * 30


def _write(owner, *texts: str) -> list[Memory]:
    return [services.memory_write(owner=owner, content=text, written_by=f"client {i}") for i, text in enumerate(texts)]


def test_list_keeps_the_memories_that_fit_and_lists_the_ids_of_the_others(mcp, owner):
    short, long, other = _write(owner, SHORT, LONG, "Go code is formatted with gofmt before each commit.")

    page = mcp.ok("memory_list", {"max_tokens": 100})

    assert [memory["id"] for memory in page["memories"]] == [str(other.public_id), str(short.public_id)]
    assert page["cut_for_budget"] == [str(long.public_id)]
    assert sum(memory["tokens"] for memory in page["memories"]) <= 100


def test_search_keeps_the_best_results_that_fit(mcp, owner):
    _write(owner, SHORT, LONG)

    unbudgeted = mcp.ok("memory_search", {"query": "tabs spaces release checklist"})
    budgeted = mcp.ok("memory_search", {"query": "tabs spaces release checklist", "max_tokens": 100})

    assert "cut_for_budget" not in unbudgeted
    assert len(unbudgeted["results"]) == 2
    assert [hit["content"] for hit in budgeted["results"]] == [SHORT]
    assert len(budgeted["cut_for_budget"]) == 1


@pytest.mark.parametrize("max_tokens", [99, 100_001, 0, -5, 1.5, "500", True])
def test_a_budget_outside_100_to_100000_is_refused(mcp, owner_token, max_tokens):
    from tests.memories.api.test_api import Api

    message = mcp.fails("memory_search", {"query": "tabs", "max_tokens": max_tokens})
    assert "max_tokens" in message

    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        response = Api(owner_token).get("memories", {"max_tokens": max_tokens})
        assert response.status_code == 400
        assert "from 100 to 100,000" in response.json()["error"]["message"]
