"""API tokens: creation, revocation and the one authentication function used by MCP and REST.

A token is `gno_` + 43 URL-safe characters. The database keeps its first 16 characters as an
indexed lookup prefix and an HMAC-SHA256 digest of the whole token under GNOSEM_TOKEN_SECRET,
so a leaked database reveals no usable token.
"""

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiToken, TokenScope
from memories.exceptions import NotFound, ValidationError

TOKEN_PREFIX = "gno_"
LOOKUP_PREFIX_CHARS = 16
# What any token we issued looks like; anything else (NUL bytes, non-ASCII) never reaches the database.
TOKEN_SHAPE = re.compile(r"gno_[A-Za-z0-9_-]+")
# last_used_at is refreshed at most this often, so authentication does not write on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token: `secret` is the only copy there will ever be."""

    token: ApiToken
    secret: str


def _digest(secret: str) -> str:
    return hmac.new(settings.GNOSEM_TOKEN_SECRET.encode(), secret.encode(), hashlib.sha256).hexdigest()


@transaction.atomic
def token_create(*, owner, name: str, scope: str) -> IssuedToken:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise ValidationError("name", "give the token a name of 1-100 characters, like 'laptop claude code'.")
    if scope not in TokenScope.values:
        raise ValidationError("scope", f"must be one of {', '.join(TokenScope.values)}.")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        owner=owner, name=name, scope=scope, prefix=secret[:LOOKUP_PREFIX_CHARS], digest=_digest(secret)
    )
    return IssuedToken(token=token, secret=secret)


def token_revoke(*, owner, token_id: int) -> ApiToken:
    """Revoke one of the owner's tokens; it stops working on the next request."""
    token = ApiToken.objects.filter(owner=owner, pk=token_id).first()
    if token is None:
        raise NotFound(f"No token with id {token_id}.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(secret: str | None) -> ApiToken | None:
    """The active token matching `secret` (with its owner loaded), or None."""
    if not secret or not TOKEN_SHAPE.fullmatch(secret) or len(secret) < LOOKUP_PREFIX_CHARS + 8:
        return None
    token = (
        ApiToken.objects.select_related("owner")
        .filter(prefix=secret[:LOOKUP_PREFIX_CHARS], revoked_at__isnull=True, owner__is_active=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.digest, _digest(secret)):
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
