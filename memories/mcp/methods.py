"""The MCP methods Gnosem serves, per era, and the shaping of their results.

2025 revisions: initialize, ping, tools/list, tools/call. 2026-07-28: server/discover,
tools/list, tools/call (no handshake, no ping). Every 2026 result carries
`resultType: "complete"` and the server's identity in `_meta`; the cacheable ones carry
`ttlMs` and `cacheScope`.
"""

from collections.abc import Callable
from typing import Any

from memories.mcp import protocol
from memories.mcp.protocol import Exchange, Request, RpcError
from memories.mcp.tools import TOOLS, Caller, tool_call, tools_for

SERVER_NAME = "gnosem"
SERVER_TITLE = "Gnosem"
SERVER_VERSION = "0.1.0"
SERVER_INFO = {"name": SERVER_NAME, "title": SERVER_TITLE, "version": SERVER_VERSION}
CAPABILITIES = {"tools": {"listChanged": False}}
INSTRUCTIONS = (
    "Gnosem is the user's long-term memory, shared by all of their assistants. Call session_start "
    "first in every conversation (with the user's first request as query): it returns their standing "
    "context and what is new. Before answering anything that may depend on earlier decisions, "
    "preferences, projects or people, call memory_search. As you learn something durable (a decision "
    "and why, a preference, a fact, a fix that worked), save it at once with memory_write as one "
    "self-contained statement. Correct stale memories with memory_update, or write the new fact with "
    "supersedes naming the old one, rather than leaving contradicting ones. For 'how many' questions "
    "use memory_count. To leave something out of a search ('databases other than Postgres'), pass it in "
    "memory_search's exclude. Memories live in spaces: the user's personal space and any team spaces they "
    "belong to (spaces_list). Reads cover every space unless you pass `space`; write what the user's "
    "team should know to the team space (pass `space`) and private matters to the personal one."
)
# The tool list depends on the token's scope, so caches must not share it across tokens.
TOOLS_LIST_TTL_MS = 60_000
DISCOVER_TTL_MS = 60_000

Handler = Callable[[Request, Exchange, Caller], dict[str, Any]]


def _initialize(request: Request, exchange: Exchange, caller: Caller) -> dict[str, Any]:
    requested = request.params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(protocol.INVALID_PARAMS, "initialize needs params.protocolVersion, a revision like 2025-11-25.")
    version = requested if requested in protocol.LEGACY_VERSIONS else protocol.LATEST_LEGACY_VERSION
    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


def _ping(request: Request, exchange: Exchange, caller: Caller) -> dict[str, Any]:
    return {}


def _discover(request: Request, exchange: Exchange, caller: Caller) -> dict[str, Any]:
    return {
        "supportedVersions": list(protocol.MODERN_VERSIONS),
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "ttlMs": DISCOVER_TTL_MS,
        "cacheScope": "public",
    }


def _tools_list(request: Request, exchange: Exchange, caller: Caller) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": [tool.definition() for tool in tools_for(caller.token)]}
    if exchange.modern:
        result.update(ttlMs=TOOLS_LIST_TTL_MS, cacheScope="private")
    return result


def _tools_call(request: Request, exchange: Exchange, caller: Caller) -> dict[str, Any]:
    name, arguments = request.params.get("name"), request.params.get("arguments")
    if not isinstance(name, str):
        raise RpcError(protocol.INVALID_PARAMS, "tools/call needs params.name, the name of a tool from tools/list.")
    if arguments is not None and not isinstance(arguments, dict):
        raise RpcError(protocol.INVALID_PARAMS, "tools/call params.arguments must be an object.")
    tool = TOOLS.get(name)
    if tool is None:
        known = ", ".join(tool.name for tool in tools_for(caller.token))
        raise RpcError(protocol.INVALID_PARAMS, f"Unknown tool: {name}. Tools: {known}.")
    return tool_call(tool, arguments or {}, caller)


LEGACY_METHODS: dict[str, Handler] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
}
MODERN_METHODS: dict[str, Handler] = {
    "server/discover": _discover,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
}


def answer(request: Request, exchange: Exchange, caller: Caller) -> dict[str, Any]:
    """The result of a request, shaped for its era; protocol errors raise RpcError."""
    handler = (MODERN_METHODS if exchange.modern else LEGACY_METHODS).get(request.method)
    if handler is None:
        raise RpcError(protocol.METHOD_NOT_FOUND, f"Method not found: {request.method}", request.method)
    result = handler(request, exchange, caller)
    return modern_result(result) if exchange.modern else result


def modern_result(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result: complete, and carrying the server's identity."""
    return {**result, "resultType": "complete", "_meta": {protocol.SERVER_INFO_META_KEY: SERVER_INFO}}
