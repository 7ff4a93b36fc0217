"""JSON-RPC framing and protocol-version negotiation for the MCP endpoint.

Two eras share one URL. The 2025 revisions negotiate once with `initialize` and then name the
version in the `MCP-Protocol-Version` header. The 2026-07-28 revision has no handshake: every
request carries its version, client info and capabilities in `params._meta`, mirrored into the
`MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. The constants below are the ones
the official `mcp` SDK uses (tests/memories/mcp/test_protocol.py checks them against it); the SDK
itself is a development dependency only, so the server does not import it.
"""

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gnosem.json_input import JsonInputError, load_json

LEGACY_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = (*LEGACY_VERSIONS, *MODERN_VERSIONS)
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[-1]
# A 2025 request without the header is assumed to speak the first revision that had the header.
DEFAULT_LEGACY_VERSION = "2025-03-26"

PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"

PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# Methods whose target is mirrored into the Mcp-Name header, and the params key holding it.
NAME_BEARING_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# 2026-07-28 gives protocol errors an HTTP status; anything else (and every 2025 error) is a 200.
MODERN_ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}

RequestId = int | str


class RpcError(Exception):
    """A JSON-RPC error to answer with; `status` overrides the era's usual HTTP status."""

    def __init__(self, code: int, message: str, data: Any = None, *, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Notification:
    """A notification, or a response the client sent back: both are acknowledged and dropped."""

    method: str | None


@dataclass(frozen=True)
class Exchange:
    """What one request negotiated: its protocol version and era, and who the client says it is."""

    version: str
    modern: bool
    client_name: str | None = None


def parse_message(body: bytes) -> Request | Notification:
    """One JSON-RPC message from a POST body; batches and malformed envelopes are RpcErrors."""
    try:
        message = load_json(body)
    except JsonInputError as exc:
        raise RpcError(PARSE_ERROR, f"Parse error: {exc}", status=400) from None
    if isinstance(message, list):
        raise RpcError(INVALID_REQUEST, "Batches are not supported: send one JSON-RPC message per POST.", status=400)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid request: send one JSON-RPC 2.0 object ("jsonrpc": "2.0").', status=400)
    if "method" not in message and "id" in message and ("result" in message or "error" in message):
        return Notification(method=None)
    method, params = message.get("method"), message.get("params")
    if not isinstance(method, str) or not (params is None or isinstance(params, dict)):
        raise RpcError(INVALID_REQUEST, "Invalid request: `method` must be a string, `params` an object.", status=400)
    if "id" not in message:
        return Notification(method=method)
    request_id = message["id"]
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        raise RpcError(INVALID_REQUEST, "Invalid request: `id` must be a string or an integer.", status=400)
    return Request(id=request_id, method=method, params=params or {})


def check_header_version(headers: Mapping[str, str]) -> None:
    """Refuse a `MCP-Protocol-Version` header naming a revision this server does not speak."""
    requested = headers.get(PROTOCOL_VERSION_HEADER)
    if requested is not None and requested not in SUPPORTED_VERSIONS:
        raise unsupported_version(requested)


def unsupported_version(requested: str) -> RpcError:
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
        status=400,
    )


def negotiate(request: Request, headers: Mapping[str, str]) -> Exchange:
    """The era and version of a request, from its `_meta` envelope and headers.

    A request carrying the 2026 envelope, or a 2026 header, is checked the way the SDK's
    server checks it (envelope, then header agreement, then version); anything else is a
    2025 request whose version is its header's, or 2025-03-26 without one.
    """
    meta = request.params.get("_meta")
    header_version = headers.get(PROTOCOL_VERSION_HEADER)
    has_envelope = isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta
    if has_envelope or header_version in MODERN_VERSIONS:
        return _negotiate_modern(request, meta, headers)
    check_header_version(headers)
    return Exchange(version=header_version or DEFAULT_LEGACY_VERSION, modern=False)


def _negotiate_modern(request: Request, meta: Any, headers: Mapping[str, str]) -> Exchange:
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META_KEY!r} "
            f"and {CLIENT_CAPABILITIES_META_KEY!r}.",
            status=400,
        )
    missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}.", status=400)
    version = meta[PROTOCOL_VERSION_META_KEY]
    _check_routing_headers(request, version, headers)
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, "The protocol version in params._meta must be a string.", status=400)
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    return Exchange(version=version, modern=True, client_name=_client_name(meta.get(CLIENT_INFO_META_KEY)))


def _check_routing_headers(request: Request, version: Any, headers: Mapping[str, str]) -> None:
    """A 2026 request's headers must repeat what its body says (proxies route on them)."""
    if headers.get(PROTOCOL_VERSION_HEADER) != version:
        raise _mismatch(f"the {PROTOCOL_VERSION_HEADER} header does not match params._meta's protocol version.")
    if headers.get(METHOD_HEADER) != request.method:
        raise _mismatch(f"the {METHOD_HEADER} header does not match the request's method.")
    name_key = NAME_BEARING_METHODS.get(request.method)
    body_name = request.params.get(name_key) if name_key else None
    if body_name is not None and decode_header_value(headers.get(NAME_HEADER)) != body_name:
        raise _mismatch(f"the {NAME_HEADER} header does not match params.{name_key}.")


def _mismatch(message: str) -> RpcError:
    return RpcError(HEADER_MISMATCH, f"Header mismatch: {message}", status=400)


def _client_name(client_info: Any) -> str | None:
    name = client_info.get("name") if isinstance(client_info, dict) else None
    if not isinstance(name, str) or not name.strip():
        return None
    return name.strip()


_BASE64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def decode_header_value(value: str | None) -> str | None:
    """A header value as sent, or the text inside the `=?base64?...?=` wrapper clients use for
    values that are not plain ASCII; None for a malformed wrapper, so it never matches."""
    match = _BASE64_SENTINEL.fullmatch(value) if value is not None else None
    if match is None:
        return value
    try:
        return base64.b64decode(match["payload"], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def success(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def failure(request_id: RequestId | None, error: RpcError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def error_status(error: RpcError, exchange: Exchange) -> int:
    """HTTP status for an error answer: its own, else the 2026 table, else 200 (2025 era)."""
    if error.status is not None:
        return error.status
    return MODERN_ERROR_STATUS.get(error.code, 200) if exchange.modern else 200
