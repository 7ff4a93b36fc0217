"""API tokens for DRF: the same `token_authenticate` that guards /mcp (so OAuth access tokens for
this server work here too), and scopes as permissions."""

from typing import TYPE_CHECKING, Any

from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from accounts.models import ApiToken
from accounts.oauth.metadata import bearer_challenge
from accounts.oauth.urls_for import mcp_resource
from accounts.tokens import bearer_secret, token_authenticate
from gnosem.types import Owner

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views loads
    from rest_framework.views import APIView


class TokenRequest(Request):
    """A request to the REST API that TokenScopePermission (every view's) let through: signed in
    by an API token, whose owner is the user. For annotations only; DRF builds plain Requests."""

    user: Owner
    auth: ApiToken


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer gno_...` or an OAuth access token; request.user is the token's owner,
    request.auth the token (for OAuth, its connection)."""

    def authenticate(self, request: HttpRequest) -> tuple[Owner, ApiToken] | None:
        header = request.headers.get("Authorization")
        if not header:
            return None  # the permission check answers 401 with the header below
        token = token_authenticate(bearer_secret(header), resource=mcp_resource(request))
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown, malformed, expired or revoked token.")
        return token.owner, token

    def authenticate_header(self, request: HttpRequest) -> str:
        return bearer_challenge(request, token_given="Authorization" in request.headers)


class TokenScopePermission(permissions.BasePermission):
    """Any token reads; only a write token changes anything."""

    message = "This token is read-only: create a token with the write scope to change memories."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        if not isinstance(request.auth, ApiToken):
            raise exceptions.NotAuthenticated("Send an API token: `Authorization: Bearer gno_...`.")
        return request.method in permissions.SAFE_METHODS or request.auth.can_write


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes the token."""

    target_class = ApiTokenAuthentication
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token from the Tokens page (`gno_...`). Read tokens cannot write.",
        }
