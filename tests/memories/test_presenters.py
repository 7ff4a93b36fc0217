"""The memory's outward shape is stated once, next to the functions that make it
(memories.presenters): the MCP tools publish those schemas as they are, and the OpenAPI document
states the same fields, required the same way."""

import json

import jsonschema
import pytest
from django.test import Client

from memories import services
from memories.models import CompressionStatus
from memories.presenters import (
    MEMORY_PAGE_SCHEMA,
    MEMORY_SCHEMA,
    SEARCH_HIT_SCHEMA,
    SEARCH_RESULTS_SCHEMA,
    memory_to_dict,
)
from tests.memories.mcp.conftest import McpCaller
from tests.memories.stored import store


def test_a_memory_plain_and_compressed_matches_the_schema(owner):
    memory = services.memory_write(owner=owner, content="We deploy on Tuesdays, never on Fridays.")
    store(memory.pk, content_optimized="DEPLOY_DAY=tuesday", compression_status=CompressionStatus.COMPRESSED)
    memory.refresh_from_db()

    for shape in (memory_to_dict(memory), memory_to_dict(memory, raw=True)):
        jsonschema.validate(shape, MEMORY_SCHEMA)
    assert "content_raw" in memory_to_dict(memory) and "content_raw" not in memory_to_dict(memory, raw=True)


def test_the_mcp_tools_publish_the_presenters_schemas(client, owner_token):
    tools = McpCaller(client, owner_token).tools()

    assert tools["memory_get"]["outputSchema"] == tools["memory_update"]["outputSchema"] == MEMORY_SCHEMA
    assert tools["memory_list"]["outputSchema"] == MEMORY_PAGE_SCHEMA
    assert tools["memory_search"]["outputSchema"] == SEARCH_RESULTS_SCHEMA


@pytest.mark.parametrize(
    ("component", "schema"),
    [
        ("MemoryOut", MEMORY_SCHEMA),
        ("SearchResultOut", SEARCH_HIT_SCHEMA),
        ("SearchOut", SEARCH_RESULTS_SCHEMA),
        ("MemoryPageOut", MEMORY_PAGE_SCHEMA),
    ],
)
def test_the_openapi_components_state_the_same_fields(db, component, schema):
    document = json.loads(Client().get("/api/v1/schema", headers={"Accept": "application/json"}).content)
    served = document["components"]["schemas"][component]

    assert list(served["properties"]) == list(schema["properties"])
    assert served["required"] == schema["required"]
    assert served["additionalProperties"] is False
