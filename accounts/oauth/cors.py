"""Cross-origin access for the OAuth documents and endpoints a client in a browser calls (the MCP
Inspector runs discovery, registration and the token exchange from its web page)."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse


def allow_any_origin(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Let any origin read the view's answers and answer the preflight. Safe because these
    endpoints take no cookies: a client proves itself with the request's own parameters."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = HttpResponse(status=204) if request.method == "OPTIONS" else view(request, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
        response["Access-Control-Allow-Headers"] = "Authorization, Content-Type, MCP-Protocol-Version"
        response["Access-Control-Max-Age"] = "86400"
        return response

    return wrapped
