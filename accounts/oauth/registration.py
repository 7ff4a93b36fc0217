"""Dynamic Client Registration (RFC 7591) at POST /oauth/register, and the cleanup it needs.

Anyone may register a client (that is how claude.ai and ChatGPT connect, and Claude registers anew
on every fresh connection), so registration is rate-limited per client address with allauth's
limiter, as sign-up is (GNOSEM_OAUTH_REGISTRATION_RATE_LIMIT), and registrations that never got a
token are deleted after GNOSEM_OAUTH_UNUSED_CLIENT_HOURS by a periodic task.

Public clients (token_endpoint_auth_method "none", PKCE) are the default. Clients that ask for a
secret (client_secret_post or client_secret_basic, as claude.ai's connector does) get one, shown in
the response only; PKCE is required of them too.
"""

import re
from dataclasses import dataclass
from datetime import timedelta

from allauth.core import ratelimit
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.generators import generate_client_secret

from accounts.models import ApiToken, OAuthClient
from accounts.oauth.client_metadata import ClientMetadata, OAuthClientError, client_metadata_clean
from accounts.oauth.cors import allow_any_origin
from gnosem.json_input import JsonInputError, load_json

MAX_BODY_BYTES = 16 * 1024
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
# The action GNOSEM_OAUTH_REGISTRATION_RATE_LIMIT is kept under in ACCOUNT_RATE_LIMITS.
RATE_LIMIT_ACTION = "oauth_register"
_PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PERIOD = re.compile(r"(\d*)([smhd])")
_NOT_CLIENT_METADATA = "The registration request must be a JSON object of client metadata"


@dataclass(frozen=True)
class Registration:
    """A registered client and, for a confidential one, its secret in clear (never stored so)."""

    client: OAuthClient
    client_secret: str | None


@transaction.atomic
def oauth_client_register(*, metadata: ClientMetadata) -> Registration:
    """Register a client with checked metadata."""
    public = metadata.token_endpoint_auth_method == "none"
    secret = None if public else generate_client_secret()
    client = OAuthClient.objects.create(
        name=metadata.client_name,
        redirect_uris=" ".join(metadata.redirect_uris),
        client_type=OAuthClient.CLIENT_PUBLIC if public else OAuthClient.CLIENT_CONFIDENTIAL,
        authorization_grant_type=OAuthClient.GRANT_AUTHORIZATION_CODE,
        registration_source=OAuthClient.RegistrationSource.DCR,
        client_secret=secret or "",
        hash_client_secret=not public,  # hashed on save
    )
    return Registration(client=client, client_secret=secret)


def oauth_clients_unused_delete() -> int:
    """Delete the clients registered (by DCR, or fetched from a metadata document) that nobody
    uses: never given a token GNOSEM_OAUTH_UNUSED_CLIENT_HOURS after registering, or left with no
    active connection and no token for GNOSEM_OAUTH_REFRESH_TOKEN_DAYS (Claude registers anew on
    every fresh connection, so old registrations pile up otherwise). Returns how many. A metadata
    document's client is fetched again when it comes back; a DCR one registers again."""
    now = timezone.now()
    never_used = Q(
        created__lt=now - timedelta(hours=settings.GNOSEM_OAUTH_UNUSED_CLIENT_HOURS),
        last_used_at__isnull=True,
        connections__isnull=True,
    )
    # Its last refresh token has expired by then, so none of its tokens works any more.
    long_unused = Q(last_used_at__lt=now - timedelta(days=settings.GNOSEM_OAUTH_REFRESH_TOKEN_DAYS + 1))
    active = ApiToken.objects.filter(oauth_client__isnull=False, revoked_at__isnull=True).values("oauth_client")
    unused = (
        OAuthClient.objects.filter(
            registration_source__in=[OAuthClient.RegistrationSource.DCR, OAuthClient.RegistrationSource.CIMD]
        )
        .filter(never_used | long_unused)
        .exclude(pk__in=active)
    )
    _, deleted = unused.delete()
    return deleted.get(OAuthClient._meta.label, 0)


def registration_response(registration: Registration, metadata: ClientMetadata) -> dict:
    """The client information response (RFC 7591 section 3.2.1): the id and what was registered."""
    client = registration.client
    answer = {
        "client_id": client.client_id,
        "client_id_issued_at": int(client.created.timestamp()),
        "client_name": metadata.client_name,
        "redirect_uris": list(metadata.redirect_uris),
        "grant_types": list(metadata.grant_types),
        "response_types": list(metadata.response_types),
        "token_endpoint_auth_method": metadata.token_endpoint_auth_method,
    }
    if registration.client_secret is not None:
        answer |= {"client_secret": registration.client_secret, "client_secret_expires_at": 0}
    return answer


def _error(status: int, error: str, description: str) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


def _retry_after_seconds() -> int:
    """The longest window of the registration limits: by then the address surely has room again."""
    rates = settings.ACCOUNT_RATE_LIMITS.get(RATE_LIMIT_ACTION, "")
    windows = [_PERIOD.fullmatch(part.strip().split("/")[1]) for part in rates.split(",") if "/" in part]
    return max((int(match[1] or 1) * _PERIOD_SECONDS[match[2]] for match in windows if match), default=60)


@csrf_exempt  # no cookies are read: a client registers with the request body alone
@allow_any_origin
@require_POST
def register_view(request: HttpRequest) -> JsonResponse:
    """POST /oauth/register: a JSON object of client metadata in, 201 with the client's id out."""
    if not ratelimit.consume(request, action=RATE_LIMIT_ACTION):
        wait = _retry_after_seconds()
        # RFC 7591 names no error for this; temporarily_unavailable (RFC 6749) is the nearest.
        response = _error(
            429,
            "temporarily_unavailable",
            f"Too many client registrations from this address. Try again in {wait} seconds.",
        )
        response["Retry-After"] = str(wait)
        return response
    declared = request.META.get("CONTENT_LENGTH") or ""
    too_large = declared.isdigit() and int(declared) > MAX_BODY_BYTES  # refused unread
    if not too_large:
        body = request.read(MAX_BODY_BYTES + 1)  # an undeclared length is read no further
        too_large = len(body) > MAX_BODY_BYTES
    if too_large:
        return _error(413, "invalid_client_metadata", f"The registration request is over {MAX_BODY_BYTES // 1024} KiB.")
    try:
        document = load_json(body)
    except JsonInputError as exc:
        return _error(400, "invalid_client_metadata", f"{_NOT_CLIENT_METADATA}: {exc}")
    if not isinstance(document, dict):
        return _error(400, "invalid_client_metadata", f"{_NOT_CLIENT_METADATA}.")
    try:
        metadata = client_metadata_clean(document, auth_methods=AUTH_METHODS)
    except OAuthClientError as exc:
        return _error(400, exc.error, exc.description)
    registration = oauth_client_register(metadata=metadata)
    response = JsonResponse(registration_response(registration, metadata), status=201)
    response["Cache-Control"] = "no-store"
    return response
