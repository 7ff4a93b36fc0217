"""The discovery documents: protected resource metadata (RFC 9728) for the MCP endpoint and
authorization server metadata (RFC 8414), and the 401 challenge that points clients at them.
Every URL in them comes from accounts.oauth.urls_for."""

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from accounts.oauth import scopes
from accounts.oauth.cors import allow_any_origin
from accounts.oauth.urls_for import absolute_url, issuer, mcp_resource, resource_metadata_url


def bearer_challenge(request: HttpRequest, *, token_given: bool) -> str:
    """The WWW-Authenticate value of a 401 from /mcp or the REST API (RFC 9728 §5.1, RFC 6750 §3):
    where to discover how to get a token, and which scopes to ask for; `invalid_token` when a
    token was sent and is unknown, expired, revoked or for another resource."""
    challenge = f'Bearer resource_metadata="{resource_metadata_url(request)}", scope="{" ".join(scopes.MEMORY_SCOPES)}"'
    return challenge + ', error="invalid_token"' if token_given else challenge


def protected_resource_metadata(request: HttpRequest) -> dict[str, Any]:
    return {
        "resource": mcp_resource(request),
        "authorization_servers": [issuer(request)],
        "scopes_supported": list(scopes.MEMORY_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "Gnosem",
    }


def authorization_server_metadata(request: HttpRequest) -> dict[str, Any]:
    client_auth_methods = ["none", "client_secret_post", "client_secret_basic"]
    return {
        "issuer": issuer(request),
        "authorization_endpoint": absolute_url(request, "oauth_authorize"),
        "token_endpoint": absolute_url(request, "oauth_token"),
        "registration_endpoint": absolute_url(request, "oauth_register"),
        "revocation_endpoint": absolute_url(request, "oauth_revoke"),
        "scopes_supported": list(scopes.SUPPORTED),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": client_auth_methods,
        "revocation_endpoint_auth_methods_supported": client_auth_methods,
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }


@allow_any_origin
@require_GET
def protected_resource(request: HttpRequest) -> JsonResponse:
    """Served at the root form and the path-suffixed form for /mcp alike: /mcp is the only resource."""
    return JsonResponse(protected_resource_metadata(request))


@allow_any_origin
@require_GET
def authorization_server(request: HttpRequest) -> JsonResponse:
    return JsonResponse(authorization_server_metadata(request))
