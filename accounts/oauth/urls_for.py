"""Where this server is, as OAuth names it: the public base URL (GNOSEM_PUBLIC_URL, else the
request's scheme and host), and from it the issuer, the protected resource (the MCP endpoint) and
the URLs the metadata documents and the 401 challenge point at."""

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse


def public_base_url(request: HttpRequest) -> str:
    """`https://memory.example.com`: no path, no trailing slash."""
    return settings.GNOSEM_PUBLIC_URL or f"{request.scheme}://{request.get_host()}"


def absolute_url(request: HttpRequest, view_name: str) -> str:
    """The public URL of one of our named views."""
    return public_base_url(request) + reverse(view_name)


def issuer(request: HttpRequest) -> str:
    """The authorization server's issuer identifier (RFC 8414), also sent as `iss` (RFC 9207)."""
    return public_base_url(request)


def mcp_resource(request: HttpRequest) -> str:
    """The protected resource (RFC 8707/9728) that access tokens are bound to: the MCP endpoint."""
    return absolute_url(request, "mcp")


def resource_metadata_url(request: HttpRequest) -> str:
    """The MCP endpoint's protected resource metadata (RFC 9728, path-suffixed form)."""
    return absolute_url(request, "oauth_protected_resource_mcp")
