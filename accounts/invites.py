"""Invitations: single-use sign-up links made by staff when GNOSEM_SIGNUP=invite.

A link carries `inv_` + a random secret; the database keeps only its HMAC digest (as for API
tokens), so a leaked database holds no usable link. A sign-up claims its invitation with a
conditional UPDATE, so two sign-ups racing on one link cannot both succeed.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Invite
from gnosem.types import Owner

INVITE_PREFIX = "inv_"
DEFAULT_DAYS = 7
MAX_DAYS = 365


@dataclass(frozen=True)
class IssuedInvite:
    """A new invitation: `secret` goes into the link and is never stored."""

    invite: Invite
    secret: str

    def url(self, base_url: str) -> str:
        """The sign-up link under `base_url` (the server's address, like https://memory.example.org)."""
        return f"{base_url.rstrip('/')}/accounts/signup/?invite={self.secret}"


def _digest(secret: str) -> str:
    return hmac.new(settings.GNOSEM_TOKEN_SECRET.encode(), f"invite:{secret}".encode(), hashlib.sha256).hexdigest()


def invite_save_new(invite: Invite) -> str:
    """Give an unsaved invitation (from `invite_create` or the admin's form) its secret and save it;
    returns the secret, the only copy there will be."""
    secret = INVITE_PREFIX + secrets.token_urlsafe(32)
    invite.digest = _digest(secret)
    invite.email = (invite.email or "").strip()
    invite.save()
    return secret


@transaction.atomic
def invite_create(*, created_by: Owner | None, email: str = "", days: int = DEFAULT_DAYS) -> IssuedInvite:
    """A sign-up link valid for `days` days; with `email`, it signs up only that address."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"An invitation lasts 1 to {MAX_DAYS} days, not {days}.")
    invite = Invite(created_by=created_by, email=email, expires_at=timezone.now() + timedelta(days=days))
    return IssuedInvite(invite=invite, secret=invite_save_new(invite))


def invite_find(secret: object) -> Invite | None:
    """The unused, unexpired invitation with this secret, else None."""
    if not isinstance(secret, str) or not secret.startswith(INVITE_PREFIX) or len(secret) > 100:
        return None
    return Invite.objects.filter(digest=_digest(secret), used_at__isnull=True, expires_at__gt=timezone.now()).first()


def invite_claim(*, secret: object, user: Owner) -> bool:
    """Mark the invitation used by `user`; False when it is no longer valid (used meanwhile,
    expired). Call inside the transaction that creates the user, and roll back on False."""
    invite = invite_find(secret)
    if invite is None:
        return False
    now = timezone.now()
    return bool(
        Invite.objects.filter(pk=invite.pk, used_at__isnull=True, expires_at__gt=now).update(used_by=user, used_at=now)
    )
