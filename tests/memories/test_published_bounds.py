"""Defaults and limits have one source, memories.validation: the MCP tools' input schemas and the
served OpenAPI document state the bounds it enforces (tests/memories/test_validation.py)."""

import json

import pytest
from django.test import Client

from memories import models, validation
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
