"""A raw JSON-RPC caller for /mcp over the Django test client, in either protocol era, and the
official MCP SDK client against a live server."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from django.http import HttpResponse
from django.test import Client
from mcp import Client as SdkClient
from mcp.client.streamable_http import streamable_http_client

from memories.mcp.protocol import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    MODERN_VERSIONS,
    NAME_BEARING_METHODS,
    PROTOCOL_VERSION_META_KEY,
)

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CLIENT_NAME = "pytest-agent"


@dataclass
class McpCaller:
    """Posts JSON-RPC to /mcp the way a client of `version` would (envelope and headers)."""

    client: Client
    token: str | None
    version: str = LEGACY

    @property
    def modern(self) -> bool:
        return self.version in MODERN_VERSIONS

    def post(self, body: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> HttpResponse:
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        all_headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        all_headers.update(headers or {})
        return self.client.post("/mcp", data=data, content_type="application/json", headers=all_headers, **kwargs)

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None, id: int = 1
    ) -> HttpResponse:
        params = dict(params or {})
        routing = {"MCP-Protocol-Version": self.version}
        if self.modern:
            params["_meta"] = {
                PROTOCOL_VERSION_META_KEY: self.version,
                CLIENT_INFO_META_KEY: {"name": CLIENT_NAME, "version": "1.0"},
                CLIENT_CAPABILITIES_META_KEY: {},
            }
            routing["Mcp-Method"] = method
            if (key := NAME_BEARING_METHODS.get(method)) and key in params:
                routing["Mcp-Name"] = params[key]
        return self.post(
            {"jsonrpc": "2.0", "id": id, "method": method, "params": params}, {**routing, **(headers or {})}
        )

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.request(method, params)
        assert response.status_code == 200, response.content
        body = response.json()
        assert "result" in body, body
        return body["result"]

    def error(self, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        response = self.request(method, params, **kwargs)
        return response.status_code, response.json()["error"]

    def tools(self) -> dict[str, dict[str, Any]]:
        return {tool["name"]: tool for tool in self.result("tools/list")["tools"]}

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.result("tools/call", {"name": name, "arguments": arguments or {}})

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A successful tool call's structured result, checked against the tool's outputSchema."""
        result = self.call(name, arguments)
        assert result["isError"] is False, result
        structured = result["structuredContent"]
        assert result["content"] == [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}]
        jsonschema.validate(structured, self.tools()[name]["outputSchema"])
        return structured

    def fails(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """The message of a tool call that failed with `isError`."""
        result = self.call(name, arguments)
        assert result["isError"] is True, result
        assert "structuredContent" not in result
        [block] = result["content"]
        assert block["type"] == "text"
        return block["text"]


@pytest.fixture(params=[LEGACY, MODERN])
def mcp(request, client, owner_token) -> McpCaller:
    """The owner's write token, in each era."""
    return McpCaller(client, owner_token, request.param)


@pytest.fixture
def mcp_as(client):
    """Build a caller for any token and version."""

    def build(token: str | None, version: str = LEGACY) -> McpCaller:
        return McpCaller(client, token, version)

    return build


@asynccontextmanager
async def sdk_client(live_server, token: str, mode: str) -> AsyncIterator[SdkClient]:
    """An SDK client connected to the live server in `mode`, sending `token`."""
    # Generous timeout: the first write embeds on commit, loading the model in the server.
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http:
        transport = streamable_http_client(f"{live_server.url}/mcp", http_client=http)
        async with SdkClient(transport, mode=mode) as client:
            yield client


def run_client(live_server, token: str, mode: str, script) -> Any:
    """Run `script(client)` with an SDK client connected to the live server in `mode`."""

    async def main() -> Any:
        async with sdk_client(live_server, token, mode) as client:
            return await script(client)

    return anyio.run(main)
