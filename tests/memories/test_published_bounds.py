"""Defaults and limits have one source, memories.validation: the MCP tools' input schemas and the
served OpenAPI document state the bounds it enforces (tests/memories/test_validation.py)."""

import json

import pytest
from django.test import Client

from memories import models, services, validation
from memories.notes import services as notes
from tests.memories.mcp.conftest import McpCaller

TOP_K = {"type": "integer", "minimum": 1, "maximum": validation.MAX_TOP_K, "default": validation.DEFAULT_TOP_K}
LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": validation.MAX_LIST_LIMIT,
    "default": validation.DEFAULT_LIST_LIMIT,
}
QUERY = {"type": "string", "minLength": 1, "maxLength": validation.MAX_QUERY_CHARS}
HALF_LIFE_DAYS = {"type": "number", "minimum": 0, "maximum": validation.MAX_HALF_LIFE_DAYS}
FRACTION = {"type": "number", "minimum": 0, "maximum": 1}
CONTENT = {"type": "string", "minLength": 1, "maxLength": models.MAX_CONTENT_CHARS}
TAGS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": models.MAX_TAG_CHARS},
    "maxItems": models.MAX_TAGS,
}
WRITTEN_BY = {"type": "string", "maxLength": models.MAX_WRITTEN_BY_CHARS}


def bounds(schema: dict) -> dict:
    """A schema without its words (descriptions and examples are each interface's own)."""
    kept = {key: value for key, value in schema.items() if key not in {"description", "examples"}}
    if isinstance(kept.get("items"), dict):
        kept["items"] = bounds(kept["items"])
    return kept


@pytest.fixture
def tools(client, owner_token) -> dict[str, dict]:
    return McpCaller(client, owner_token).tools()


def test_the_mcp_input_schemas_state_the_validation_bounds(tools):
    search = tools["memory_search"]["inputSchema"]["properties"]
    listing = tools["memory_list"]["inputSchema"]["properties"]
    write = tools["memory_write"]["inputSchema"]["properties"]
    update = tools["memory_update"]["inputSchema"]["properties"]

    assert bounds(search["top_k"]) == TOP_K and bounds(listing["limit"]) == LIMIT
    assert bounds(search["query"]) == QUERY and bounds(search["half_life_days"]) == HALF_LIFE_DAYS
    assert bounds(search["diversity"]) == FRACTION and bounds(search["min_score"]) == {**FRACTION, "default": 0}
    for properties in (write, update):
        assert bounds(properties["content"]) == CONTENT
        assert bounds(properties["tags"]) == TAGS
        assert bounds(properties["written_by"]) == WRITTEN_BY
    assert bounds(search["tags"]) == TAGS and bounds(search["written_by"]) == WRITTEN_BY


@pytest.fixture
def document(db) -> dict:
    return json.loads(Client().get("/api/v1/schema", headers={"Accept": "application/json"}).content)


def parameters(document: dict, path: str) -> dict[str, dict]:
    return {parameter["name"]: parameter["schema"] for parameter in document["paths"][path]["get"]["parameters"]}


def test_the_openapi_document_states_the_validation_bounds(document):
    search = parameters(document, "/api/v1/memories/search")
    listing = parameters(document, "/api/v1/memories")
    components = document["components"]["schemas"]

    assert search["top_k"] == TOP_K and listing["limit"] == LIMIT
    assert search["query"] == QUERY and search["half_life_days"] == HALF_LIFE_DAYS
    assert search["diversity"] == FRACTION and search["min_score"] == {**FRACTION, "default": 0}
    assert search["written_by"] == listing["written_by"] == WRITTEN_BY
    for body in ("MemoryCreateInRequest", "PatchedMemoryUpdateInRequest"):
        properties = components[body]["properties"]
        assert bounds(properties["content"]) == CONTENT
        assert bounds(properties["tags"]) == TAGS
        assert bounds(properties["written_by"]) == WRITTEN_BY


def just_outside(prop: dict) -> list[tuple[str, float]]:
    """Each bound a numeric argument states, with the value one step past it (1 for whole numbers)."""
    step = 1 if prop["type"] == "integer" else 0.001
    return [
        (bound, prop[bound] + (step if bound == "maximum" else -step))
        for bound in ("minimum", "maximum")
        if bound in prop
    ]


def test_every_numeric_bound_a_tool_states_is_enforced(owner, mcp):
    memory = services.memory_write(owner=owner, content="The release train leaves on Thursdays.")
    note = notes.note_write(owner=owner, title="Runbook", content="# Runbook\n\nRestart the worker on Thursdays.")
    checked = []

    for name, tool in mcp.tools().items():
        schema = tool["inputSchema"]
        own_id = str(note.public_id if name.startswith("note_") else memory.public_id)
        given = {"id": own_id, "query": "release train", "content": "Restart the worker.", "title": "Runbook"}
        # The required arguments, and a query where a tool takes one (explore_graph needs somewhere to start).
        base = {
            key: given[key]
            for key in schema["properties"]
            if key in given and (key == "query" or key in schema.get("required", ()))
        }
        for argument, prop in schema["properties"].items():
            if prop["type"] not in {"integer", "number"}:
                continue
            for bound, outside in just_outside(prop):
                refused = mcp.fails(name, {**base, argument: outside})
                assert refused.startswith(f"Invalid argument `{argument}`: "), (name, outside, refused)
                at_bound = mcp.call(name, {**base, argument: prop[bound]})
                assert at_bound["isError"] is False, (name, argument, prop[bound], at_bound)
                checked.append((name, argument, bound))

    assert {("note_get", "start", "minimum"), ("memory_search", "min_score", "maximum")} <= set(checked)
