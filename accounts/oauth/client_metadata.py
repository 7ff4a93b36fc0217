"""What an OAuth client may declare about itself (RFC 7591 client metadata), by Dynamic Client
Registration or in a Client ID Metadata Document: one set of rules for both, and the error both
raise when a client cannot be used.

Redirect URIs follow the MCP authorization specification: https URLs, or http on the loopback
interface for an app on the user's own computer (RFC 8252). Metadata we do not use (logo_uri,
scope, contacts, application_type...) is ignored, as RFC 7591 section 2 asks.
"""

from dataclasses import dataclass
from urllib.parse import urlsplit

from gnosem.labels import label_problem

GRANT_TYPES = ("authorization_code", "refresh_token")
RESPONSE_TYPES = ("code",)
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
# A connection (the ApiToken row a grant becomes) is named after its client, in 100 characters.
MAX_CLIENT_NAME_LENGTH = 100


class OAuthClientError(Exception):
    """A client that cannot be registered or used: `error` is the RFC error code
    (invalid_client, invalid_client_metadata, invalid_redirect_uri), `description` says what was
    wrong and what to do, for the person or developer who reads it."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description


@dataclass(frozen=True)
class ClientMetadata:
    """A client's metadata, checked and normalised."""

    client_name: str
    redirect_uris: tuple[str, ...]
    grant_types: tuple[str, ...]
    response_types: tuple[str, ...]
    token_endpoint_auth_method: str


def client_metadata_clean(
    document: dict, *, auth_methods: tuple[str, ...], default_name: str | None = None
) -> ClientMetadata:
    """The metadata in `document` (a JSON object) checked against the rules; `auth_methods` are the
    token_endpoint_auth_method values accepted (the first is the default), `default_name` names a
    client without client_name (else the host of its first redirect URI)."""
    redirect_uris = redirect_uris_clean(document.get("redirect_uris"))
    return ClientMetadata(
        client_name=_client_name(
            document.get("client_name"), default_name or urlsplit(redirect_uris[0]).hostname or ""
        ),
        redirect_uris=redirect_uris,
        grant_types=_grant_types(document.get("grant_types")),
        response_types=_response_types(document.get("response_types")),
        token_endpoint_auth_method=_auth_method(document.get("token_endpoint_auth_method"), auth_methods),
    )


def redirect_uris_clean(value: object) -> tuple[str, ...]:
    """A non-empty list of allowed redirect URIs, without repeats."""
    if value is None:
        raise OAuthClientError("invalid_client_metadata", "redirect_uris is required: list the URLs to return to.")
    if not isinstance(value, list) or not all(isinstance(uri, str) for uri in value):
        raise OAuthClientError("invalid_client_metadata", "redirect_uris must be a list of URL strings.")
    uris = tuple(dict.fromkeys(value))
    if not uris:
        raise OAuthClientError("invalid_redirect_uri", "redirect_uris is empty: list at least one URL to return to.")
    if len(uris) > MAX_REDIRECT_URIS:
        raise OAuthClientError("invalid_redirect_uri", f"redirect_uris lists more than {MAX_REDIRECT_URIS} URLs.")
    for uri in uris:
        if not redirect_uri_allowed(uri):
            raise OAuthClientError(
                "invalid_redirect_uri",
                f"The redirect URI {uri[:200]!r} is not allowed: use an https URL, or http://localhost, "
                "http://127.0.0.1 or http://[::1] (any port) for an app on the user's computer; "
                "without a fragment, user name, spaces or control characters.",
            )
    return uris


def redirect_uri_allowed(uri: str) -> bool:
    """An https URL, or an http one on the loopback interface; no fragment (RFC 6749 3.1.2), no
    user name, no white space (the toolkit stores the list space-separated) and nothing else that
    does not print (NUL, which PostgreSQL refuses; controls and invisible characters)."""
    if len(uri) > MAX_REDIRECT_URI_LENGTH or " " in uri or not uri.isprintable():
        return False
    try:
        parts = urlsplit(uri)
        if parts.port == 0:  # reading the port raises ValueError when it is out of range
            return False
    except ValueError:
        return False
    if parts.fragment or "#" in uri or parts.username is not None or not parts.hostname:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)


def _client_name(value: object, default: str) -> str:
    if value is None:
        return default[:MAX_CLIENT_NAME_LENGTH]
    if not isinstance(value, str):
        raise OAuthClientError("invalid_client_metadata", "client_name must be a string.")
    name = " ".join(value.split())  # the consent page shows it on one line
    if problem := label_problem(name):
        raise OAuthClientError("invalid_client_metadata", f"client_name {problem}")
    if len(name) > MAX_CLIENT_NAME_LENGTH:
        raise OAuthClientError(
            "invalid_client_metadata", f"client_name is longer than {MAX_CLIENT_NAME_LENGTH} characters."
        )
    return name or default[:MAX_CLIENT_NAME_LENGTH]


def _string_list(value: object, field: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A non-empty list drawn from `allowed`, in `allowed`'s order; `allowed` itself when absent."""
    if value is None:
        return allowed
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise OAuthClientError("invalid_client_metadata", f"{field} must be a non-empty list of strings.")
    unsupported = [item for item in value if item not in allowed]
    if unsupported:
        raise OAuthClientError(
            "invalid_client_metadata",
            f"{field} {', '.join(repr(item[:50]) for item in unsupported)} not supported; "
            f"this server supports {', '.join(allowed)}.",
        )
    return tuple(item for item in allowed if item in value)


def _grant_types(value: object) -> tuple[str, ...]:
    grant_types = _string_list(value, "grant_types", GRANT_TYPES)
    if "authorization_code" not in grant_types:
        raise OAuthClientError(
            "invalid_client_metadata", "grant_types must include authorization_code, the only way to get a grant here."
        )
    return grant_types


def _response_types(value: object) -> tuple[str, ...]:
    return _string_list(value, "response_types", RESPONSE_TYPES)


def _auth_method(value: object, allowed: tuple[str, ...]) -> str:
    if value is None:
        return allowed[0]
    if value not in allowed:
        shown = repr(value[:50]) if isinstance(value, str) else "of that kind"
        raise OAuthClientError(
            "invalid_client_metadata",
            f"token_endpoint_auth_method {shown} is not supported; use {' or '.join(allowed)}.",
        )
    return value
