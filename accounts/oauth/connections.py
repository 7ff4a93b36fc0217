"""Connections: what a user granted an OAuth client, one ApiToken row per grant.

The row is made when the client exchanges its authorization code, and is tied to the refresh
token family that exchange starts (rotation keeps the family). An access token authenticates as
its family's connection, so rate limits, last use, written_by, activity and revocation work as for
`gno_` tokens. Revoking the connection revokes the family; a family ended by the client (RFC 7009)
or by refresh token reuse ends its connection, and so does the authorization code presented again.
"""

import hashlib
from typing import cast
from urllib.parse import urlsplit
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from oauth2_provider.models import clear_expired, get_access_token_model, get_refresh_token_model

from accounts.activity import activity_record
from accounts.binding import SpaceBinding
from accounts.models import ActivityAction, ApiToken, OAuthClient, Space, TokenScope
from accounts.oauth.scopes import token_scope
from gnosem.errors import NotFound
from gnosem.types import Owner

# The longest name a connection may have: its column's length.
MAX_NAME_CHARS = cast(int, ApiToken._meta.get_field("name").max_length)  # a CharField's: always set
# Access tokens are random strings of a few dozen characters; longer input is not looked up.
MAX_ACCESS_TOKEN_CHARS = 255


def redirect_host(client: OAuthClient | None) -> str:
    """Where the client sends the user back to: the host of its first redirect URI (a connection's
    client is never None; its column allows it for `gno_` tokens)."""
    uris = client.redirect_uris.split() if client is not None else []
    return (urlsplit(uris[0]).hostname or "") if uris else ""


def connection_name(client: OAuthClient) -> str:
    return (client.name.strip() or redirect_host(client) or "OAuth client")[:MAX_NAME_CHARS]


def _detail(connection: ApiToken) -> dict[str, str]:
    return {"name": connection.name, "scope": connection.scope, "client": redirect_host(connection.oauth_client)}


# Where a grant keeps the spaces chosen on the consent page until its code is exchanged: the
# toolkit's Grant.claims (OpenID Connect's, unused here since Gnosem is no OpenID provider), which it
# hands back as request.claims when the code is presented. The consent page always sets it, so
# nothing a client sends ends up there.
BINDING_CLAIM = "gnosem_spaces"


def connection_binding_claims(binding: SpaceBinding) -> dict[str, dict[str, list[int] | int | None]]:
    """What the grant keeps of the spaces chosen on the consent page."""
    space_ids = None if binding.space_ids is None else list(binding.space_ids)
    return {BINDING_CLAIM: {"spaces": space_ids, "default_space": binding.default_space_id}}


def connection_binding_of_claims(claims: object) -> SpaceBinding:
    """The spaces a grant was given, from what `connection_binding_claims` made of them (a grant
    made before spaces could be chosen has none: all of them). A space deleted since is left out;
    a connection whose chosen spaces are all gone reaches nothing."""
    chosen = claims.get(BINDING_CLAIM) if isinstance(claims, dict) else None
    if not isinstance(chosen, dict):
        return SpaceBinding(space_ids=None, default_space_id=None)
    wanted = chosen.get("spaces")
    default = chosen.get("default_space")
    found = set(Space.objects.filter(pk__in=[*(wanted or ()), default or 0]).values_list("pk", flat=True))
    return SpaceBinding(
        space_ids=None if wanted is None else tuple(pk for pk in wanted if pk in found),
        default_space_id=default if default in found else None,
    )


def connection_create(
    *, owner: Owner, client: OAuthClient, scopes: str, token_family: UUID, code: str, binding: SpaceBinding
) -> ApiToken:
    """The connection for a grant of `scopes` whose tokens form `token_family`, bought with the
    authorization `code` and reaching the spaces of `binding` (called inside the token exchange's
    transaction)."""
    connection = ApiToken.objects.create(
        owner=owner,
        name=connection_name(client),
        scope=token_scope(scopes),
        oauth_client=client,
        oauth_token_family=token_family,
        oauth_code_digest=_checksum(code),
        all_spaces=binding.space_ids is None,
        default_space_id=binding.default_space_id,
    )
    connection.spaces.set(binding.space_ids or ())
    activity_record(owner=owner, action=ActivityAction.APP_CONNECTED, token=connection, detail=_detail(connection))
    return connection


def connection_list(*, owner: Owner) -> QuerySet[ApiToken]:
    """The owner's active connections, newest first, as the Tokens page shows them."""
    return (
        ApiToken.objects.filter(owner=owner, oauth_client__isnull=False, revoked_at__isnull=True)
        .select_related("oauth_client", "default_space")
        .prefetch_related("spaces")
        .order_by("-created_at")
    )


def _end(connection: ApiToken, *, request: HttpRequest | None) -> bool:
    """Mark the connection revoked unless it already is; only an actual revocation is logged."""
    now = timezone.now()
    if not ApiToken.objects.filter(pk=connection.pk, revoked_at__isnull=True).update(revoked_at=now):
        return False
    connection.revoked_at = now
    activity_record(
        owner=connection.owner, action=ActivityAction.APP_DISCONNECTED, detail=_detail(connection), request=request
    )
    return True


@transaction.atomic
def connection_revoke(*, owner: Owner, public_id: UUID, request: HttpRequest | None = None) -> ApiToken:
    """Revoke one of the owner's connections and every token of its family: the next request
    with its access token is refused, and its refresh token gets no new one."""
    connection = (
        ApiToken.objects.select_related("oauth_client", "owner")
        .filter(owner=owner, public_id=public_id, oauth_client__isnull=False)
        .first()
    )
    if connection is None:
        raise NotFound(f"No connected application with id {public_id}.")
    get_refresh_token_model().revoke_family(connection.oauth_token_family)
    _end(connection, request=request)
    return connection


@transaction.atomic
def connections_of_code_revoke(*, client: OAuthClient, code: str) -> int:
    """An authorization code presented again after its exchange: revoke every token issued for it
    and end its connection (RFC 6749 section 4.1.2; the code may have been stolen). Returns how
    many connections ended."""
    ended = 0
    for connection in ApiToken.objects.select_related("oauth_client", "owner").filter(
        oauth_client=client, oauth_code_digest=_checksum(code)
    ):
        get_refresh_token_model().revoke_family(connection.oauth_token_family)
        ended += _end(connection, request=None)
    return ended


def connection_end_if_family_ended(token_family: UUID | None) -> None:
    """After the toolkit revoked tokens (RFC 7009 revocation, refresh token reuse): when no live
    refresh token is left in the family, its connection is over too."""
    if (
        token_family is None
        or get_refresh_token_model().objects.filter(token_family=token_family, revoked__isnull=True).exists()
    ):
        return
    connection = (
        ApiToken.objects.select_related("oauth_client", "owner").filter(oauth_token_family=token_family).first()
    )
    if connection is not None:
        _end(connection, request=None)


def connections_lapsed_end() -> int:
    """Delete expired codes and tokens (the toolkit's clear_expired: a refresh token goes
    GNOSEM_OAUTH_REFRESH_TOKEN_DAYS after its last access token expired), then end the connections
    that have no live refresh token left: unused that long, they could only sign in again. Returns
    how many connections ended."""
    clear_expired()
    # Without NULL families: NOT IN over a list holding a NULL matches no row at all.
    live_families = (
        get_refresh_token_model()
        .objects.filter(revoked__isnull=True, token_family__isnull=False)
        .values("token_family")
    )
    lapsed = (
        ApiToken.objects.select_related("oauth_client", "owner")
        .filter(oauth_client__isnull=False, revoked_at__isnull=True)
        .exclude(oauth_token_family__in=live_families)
    )
    ended = 0
    for connection in lapsed:
        ended += _end(connection, request=None)
    return ended


def token_family_of(raw_token: str) -> UUID | None:
    """The family of an access or refresh token, given the token itself (None if unknown)."""
    checksum = _checksum(raw_token)
    family = (
        get_refresh_token_model().objects.filter(token_checksum=checksum).values_list("token_family", flat=True).first()
    )
    if family is not None:
        return family
    return (
        get_refresh_token_model()
        .objects.filter(access_token__token_checksum=checksum)
        .values_list("token_family", flat=True)
        .first()
    )


def _checksum(raw_token: str) -> str:
    # How the toolkit finds a token: it stores only this digest (COMPLIANT_BCP_RFC9700_TOKEN_STORAGE);
    # a connection keeps its code's the same way.
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def connection_authenticate(secret: str, *, resource: str) -> ApiToken | None:
    """The active connection an unexpired OAuth access token issued for `resource` belongs to (its
    owner loaded), or None. The row's scope is narrowed to the access token's own when a refresh
    asked for less than the grant (not saved)."""
    if len(secret) > MAX_ACCESS_TOKEN_CHARS or not secret.isascii():
        return None
    access_token = (
        get_access_token_model()
        .objects.select_related("refresh_token")
        .filter(token_checksum=_checksum(secret), expires__gt=timezone.now())
        .first()
    )
    if access_token is None or resource not in access_token.resource:
        return None
    refresh_token = getattr(access_token, "refresh_token", None)
    if refresh_token is None or refresh_token.token_family is None:
        return None
    connection = ApiToken.objects.active_with_owner("oauth_token_family", refresh_token.token_family)
    if connection is not None and token_scope(access_token.scope) == TokenScope.READ:
        connection.scope = TokenScope.READ
    return connection
