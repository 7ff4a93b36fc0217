"""POST /mcp: the Streamable HTTP endpoint, stateless, answering with JSON only.

This view owns the HTTP rules (Origin, method, bearer token, one message per POST, status
codes); memories.mcp.protocol frames and negotiates, memories.mcp.methods answers.
"""

import json
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from accounts.models import ApiToken
from accounts.oauth.metadata import bearer_challenge
from accounts.oauth.urls_for import mcp_resource
from accounts.tokens import bearer_secret, token_authenticate
from memories.limits.rates import RateDecision, token_rate_limit_hit
from memories.mcp import methods, protocol
from memories.mcp.protocol import Exchange, Notification, RpcError
from memories.mcp.tools import Caller

logger = logging.getLogger(__name__)

# JSON-RPC's range for server-defined errors; `data.retryAfter` holds the seconds to wait.
RATE_LIMITED = -32000
_UNAUTHENTICATED = RpcError(
    protocol.INVALID_REQUEST,
    "Missing, unknown, expired or revoked token: connect through OAuth (the WWW-Authenticate header says "
    "where) or send an API token, `Authorization: Bearer gno_...`.",
)


def _json(payload: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(
        json.dumps(payload, ensure_ascii=False), status=status, content_type="application/json", headers=headers
    )


def _error(error: RpcError, status: int, request_id: protocol.RequestId | None = None, **kwargs: Any) -> HttpResponse:
    return _json(protocol.failure(request_id, error), status=status, **kwargs)


def _origin_allowed(request: HttpRequest) -> bool:
    """No Origin (CLI clients), our own origin, or one the operator listed."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    own = f"{request.scheme}://{request.get_host()}"
    allowed = {own, *settings.GNOSEM_MCP_ALLOWED_ORIGINS}
    return origin.rstrip("/").lower() in {value.rstrip("/").lower() for value in allowed}


def _accepts_json(request: HttpRequest) -> bool:
    accept = request.headers.get("Accept")
    if not accept:
        return True
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


def _authenticate(request: HttpRequest) -> ApiToken | None:
    return token_authenticate(bearer_secret(request.headers.get("Authorization")), resource=mcp_resource(request))


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """Answer one JSON-RPC message; never a stack trace to the client."""
    if not _origin_allowed(request):
        message = "Origin not allowed: add it to GNOSEM_MCP_ALLOWED_ORIGINS to call /mcp from that page."
        return _error(RpcError(protocol.INVALID_REQUEST, message), status=403)
    if request.method != "POST":
        # Stateless and JSON-only: no GET stream to open and no session to DELETE.
        return HttpResponse(status=405, headers={"Allow": "POST"})
    if not _accepts_json(request):
        return _error(RpcError(protocol.INVALID_REQUEST, "Not acceptable: accept application/json."), status=406)
    try:
        token = _authenticate(request)
        if token is None:
            challenge = bearer_challenge(request, token_given="Authorization" in request.headers)
            return _error(_UNAUTHENTICATED, 401, headers={"WWW-Authenticate": challenge})
        return _handle(request, token)
    except Exception:
        logger.exception("MCP request failed")
        return _error(RpcError(protocol.INTERNAL_ERROR, "Internal error"), status=500)


def _handle(request: HttpRequest, token: ApiToken) -> HttpResponse:
    try:
        message = protocol.parse_message(request.body)
    except RequestDataTooBig:
        return _error(RpcError(protocol.INVALID_REQUEST, "Request body too large."), status=413)
    except RpcError as error:
        return _error(error, status=error.status or 400)
    if isinstance(message, Notification):
        return _acknowledge(request, message)
    try:
        exchange = protocol.negotiate(message, request.headers)
    except RpcError as error:
        return _error(error, error.status or 400, message.id)
    decision = token_rate_limit_hit(token)
    if not decision.allowed:
        return _rate_limited(message, exchange, decision)
    return _answer(message, exchange, Caller(token=token, client_name=exchange.client_name))


def _rate_limited(message: protocol.Request, exchange: Exchange, decision: RateDecision) -> HttpResponse:
    """Over the token's rate limit. A tool call gets a tool error at HTTP 200: the MCP SDKs hand a
    non-2xx answer to the host application as an exception (the Python SDK) or as "Error POSTing to
    endpoint (HTTP 429)" (the TypeScript SDK), while an `isError` result reaches the model, which can
    read how long to wait. Anything else (initialize, tools/list) is HTTP 429 with a JSON-RPC error,
    which the SDKs surface with its message. Both carry Retry-After."""
    text = decision.message("this API token")
    headers = {"Retry-After": str(decision.retry_after)}
    if message.method == "tools/call":
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if exchange.modern:
            result = methods.modern_result(result)
        return _json(protocol.success(message.id, result), headers=headers)
    error = RpcError(RATE_LIMITED, text, {"retryAfter": decision.retry_after})
    return _error(error, 429, message.id, headers=headers)


def _acknowledge(request: HttpRequest, notification: Notification) -> HttpResponse:
    """202 for a notification or a response sent back: nothing to do on a stateless server."""
    try:
        protocol.check_header_version(request.headers)
    except RpcError as error:
        return _error(error, status=400)
    logger.debug("acknowledged %s", notification.method or "a client response")
    return HttpResponse(status=202)


def _answer(message: protocol.Request, exchange: Exchange, caller: Caller) -> HttpResponse:
    try:
        result = methods.answer(message, exchange, caller)
    except RpcError as error:
        return _error(error, protocol.error_status(error, exchange), message.id)
    except Exception:
        logger.exception("MCP %s failed", message.method)
        return _error(RpcError(protocol.INTERNAL_ERROR, "Internal error"), 200, message.id)
    return _json(protocol.success(message.id, result))
