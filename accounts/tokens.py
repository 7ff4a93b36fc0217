"""API tokens: creation, revocation and the one authentication function used by MCP and REST.

A token is `gno_` + 43 URL-safe characters. The database keeps its first 16 characters as an
indexed lookup prefix and an HMAC-SHA256 digest of the whole token under GNOSEM_TOKEN_SECRET,
so a leaked database reveals no usable token. OAuth access tokens authenticate through the same
function, as their connection (accounts.oauth.connections); the functions here that list and
revoke tokens leave connections alone.
"""

import hashlib
import hmac
import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import cast

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from accounts.activity import activity_record
from accounts.binding import space_binding_clean
from accounts.models import ActivityAction, ApiToken, TokenScope
from accounts.oauth.connections import connection_authenticate
from accounts.reach import reach_of
from gnosem.errors import NotFound, ValidationError
from gnosem.labels import label_problem
from gnosem.types import Owner

TOKEN_PREFIX = "gno_"
LOOKUP_PREFIX_CHARS = 16
# What any token we issued looks like; anything else (NUL bytes, non-ASCII) never reaches the database.
TOKEN_SHAPE = re.compile(r"gno_[A-Za-z0-9_-]+")
# The longest name a token may have: its column's length (the token forms say it too).
MAX_NAME_CHARS = cast(int, ApiToken._meta.get_field("name").max_length)  # a CharField's: always set
# last_used_at is refreshed at most this often, so authentication does not write on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token: `secret` is the only copy there will ever be."""

    token: ApiToken
    secret: str


def _digest(secret: str) -> str:
    return hmac.new(settings.GNOSEM_TOKEN_SECRET.encode(), secret.encode(), hashlib.sha256).hexdigest()


def _token_detail(token: ApiToken) -> dict[str, str | None]:
    return {"name": token.name, "prefix": token.prefix, "scope": token.scope}


@transaction.atomic
def token_create(
    *,
    owner: Owner,
    name: str,
    scope: str,
    spaces: Sequence[object] = (),
    default_space: object = None,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> IssuedToken:
    """A new token for `owner`, reaching every space they belong to or only `spaces` (their names
    or ids), and writing to `default_space` when a call names none (default: the personal space,
    or with `spaces` bound, the first of them); `request` (a web page) or `actor_token` (an API
    call) say, for the activity log, where it was made from (neither: the command line)."""
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise ValidationError(
            "name", f"give the token a name of 1-{MAX_NAME_CHARS} characters, like 'laptop claude code'."
        )
    if problem := label_problem(name):
        raise ValidationError("name", problem)
    if scope not in TokenScope.values:
        raise ValidationError("scope", f"must be one of {', '.join(TokenScope.values)}.")
    binding = space_binding_clean(reach=reach_of(owner), spaces=spaces, default_space=default_space)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        owner=owner,
        name=name,
        scope=scope,
        prefix=secret[:LOOKUP_PREFIX_CHARS],
        digest=_digest(secret),
        all_spaces=binding.space_ids is None,
        default_space_id=binding.default_space_id,
    )
    token.spaces.set(binding.space_ids or ())
    activity_record(
        owner=owner,
        action=ActivityAction.TOKEN_CREATED,
        token=actor_token,
        detail=_token_detail(token),
        request=request,
    )
    return IssuedToken(token=token, secret=secret)


def _revoke(token: ApiToken, *, request: HttpRequest | None, actor_token: ApiToken | None) -> ApiToken:
    """Revoke `token` unless it already is; only an actual revocation is logged. The conditional
    update makes two concurrent revocations log once."""
    now = timezone.now()
    if ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now):
        token.revoked_at = now
        activity_record(
            owner=token.owner,
            action=ActivityAction.TOKEN_REVOKED,
            token=actor_token,
            detail=_token_detail(token),
            request=request,
        )
    return token


@transaction.atomic
def token_revoke(
    *, owner: Owner, public_id: uuid.UUID, request: HttpRequest | None = None, actor_token: ApiToken | None = None
) -> ApiToken:
    """Revoke one of the owner's tokens; it stops working on the next request."""
    token = ApiToken.objects.filter(owner=owner, public_id=public_id, oauth_client__isnull=True).first()
    if token is None:
        raise NotFound(f"No token with id {public_id}.")
    return _revoke(token, request=request, actor_token=actor_token)


@transaction.atomic
def token_revoke_by_prefix(*, prefix: str) -> ApiToken:
    """Revoke the active token with this lookup prefix (the first 16 characters of a token, as the
    command line takes it), whoever owns it; NotFound when there is none."""
    token = (
        ApiToken.objects.select_related("owner")
        .filter(prefix=prefix[:LOOKUP_PREFIX_CHARS], revoked_at__isnull=True)
        .first()
    )
    if token is None:
        raise NotFound("No active token with that prefix.")
    return _revoke(token, request=None, actor_token=None)


def token_list(*, owner: Owner) -> QuerySet[ApiToken]:
    """The owner's tokens as the tokens page and `revoketoken --list` show them: the active ones
    first, newest first, then the revoked ones, most recently revoked first."""
    return (
        ApiToken.objects.filter(owner=owner, oauth_client__isnull=True)
        .select_related("default_space")
        .prefetch_related("spaces")
        .order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    )


def _bearer_token(secret: str) -> ApiToken | None:
    if not TOKEN_SHAPE.fullmatch(secret) or len(secret) < LOOKUP_PREFIX_CHARS + 8:
        return None
    token = ApiToken.objects.active_with_owner("prefix", secret[:LOOKUP_PREFIX_CHARS])
    if token is None or not hmac.compare_digest(token.digest, _digest(secret)):
        return None
    return token


def token_authenticate(secret: str | None, *, resource: str | None = None) -> ApiToken | None:
    """The active token matching `secret` (with its owner loaded), or None: a `gno_` token, or an
    OAuth access token issued for `resource` (this server's MCP resource, which the callers pass;
    without it no OAuth token authenticates). Expired, revoked and other-audience tokens are None."""
    if not secret:
        return None
    if secret.startswith(TOKEN_PREFIX):
        token = _bearer_token(secret)
    else:
        token = connection_authenticate(secret, resource=resource) if resource else None
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
        token.last_used_at = now
    return token


def bearer_secret(authorization_header: str | None) -> str | None:
    """The token from an `Authorization: Bearer ...` header value."""
    if not authorization_header:
        return None
    scheme, _, value = authorization_header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None
