"""Per-user quotas: how many memories, characters and estimated tokens a user may store (notes'
characters and tokens count too).

A user without a Quota row (every account the operator creates) is unlimited and pays nothing
for the check. A user with one has their row locked (SELECT ... FOR UPDATE) inside the writing
transaction before their usage is summed, so two concurrent writes cannot both take the last
slot: the second waits for the first to commit, then sums again and sees it.
"""

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce, Length

from gnosem.errors import QuotaExceeded
from gnosem.types import Owner
from memories.models import Note, Quota
from memories.selectors import memories_of


def token_estimate(text: str) -> int:
    """ceil(characters / 4), as the database computes Memory.tokens_raw."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class Allowance:
    """One dimension of a quota: what is used and the limit (None: unlimited)."""

    used: int
    limit: int | None

    @property
    def share(self) -> float | None:
        """Used share of the limit, 0-1 (None when unlimited)."""
        return None if not self.limit else min(1.0, self.used / self.limit)

    def as_dict(self) -> dict[str, int | None]:
        return {"used": self.used, "limit": self.limit}


@dataclass(frozen=True)
class QuotaUsage:
    memories: Allowance
    characters: Allowance
    tokens: Allowance

    @property
    def limited(self) -> bool:
        return any(allowance.limit is not None for allowance in (self.memories, self.characters, self.tokens))

    def as_dict(self) -> dict[str, dict[str, int | None]]:
        return {
            "memories": self.memories.as_dict(),
            "characters": self.characters.as_dict(),
            "tokens": self.tokens.as_dict(),
        }


def _used(owner: Owner) -> dict[str, int]:
    """The owner's memories, and the characters and tokens of their memories and notes together."""
    memories = memories_of(owner).aggregate(
        memories=Count("id"),
        characters=Coalesce(Sum(Length("content")), 0),
        tokens=Coalesce(Sum("tokens_raw"), 0),
    )
    notes = Note.objects.filter(owner=owner).aggregate(
        characters=Coalesce(Sum(Length("content")), 0), tokens=Coalesce(Sum("tokens"), 0)
    )
    return {
        "memories": memories["memories"],
        "characters": memories["characters"] + notes["characters"],
        "tokens": memories["tokens"] + notes["tokens"],
    }


def quota_usage(owner: Owner) -> QuotaUsage:
    """The owner's usage next to their limits (None where unlimited)."""
    quota = Quota.objects.filter(user=owner).first() or Quota(user=owner)
    used = _used(owner)
    return QuotaUsage(
        memories=Allowance(used["memories"], quota.max_memories),
        characters=Allowance(used["characters"], quota.max_chars),
        tokens=Allowance(used["tokens"], quota.max_tokens),
    )


def quota_check(*, owner: Owner, memories: int = 0, characters: int = 0, tokens: int = 0) -> None:
    """Refuse (QuotaExceeded) a write that would add this much to the owner's usage past a limit.
    Call it inside the writing transaction: it locks the owner's quota row until the commit."""
    quota = Quota.objects.select_for_update().filter(user=owner).first()
    if quota is None or (quota.max_memories is None and quota.max_chars is None and quota.max_tokens is None):
        return
    used = _used(owner)
    for label, limit, have, adding in (
        ("memories", quota.max_memories, used["memories"], memories),
        ("characters", quota.max_chars, used["characters"], characters),
        ("tokens", quota.max_tokens, used["tokens"], tokens),
    ):
        if limit is not None and adding > 0 and have + adding > limit:
            raise QuotaExceeded(_refusal(label, limit, have, adding))


def _refusal(label: str, limit: int, have: int, adding: int) -> str:
    what = "estimated tokens (characters / 4)" if label == "tokens" else label
    adds = "" if label == "memories" and adding == 1 else f" and this would add {adding:,}"
    return (
        f"Quota reached: {limit:,} {what}; you have {have:,}{adds}. Nothing was saved: delete some "
        "memories or notes, or ask the operator to raise your quota."
    )


def quota_create_for_signup(*, user: Owner) -> Quota:
    """Give a newly signed-up user the quota configured for sign-ups (GNOSEM_SIGNUP_MAX_*; 0 = unlimited)."""
    quota, _ = Quota.objects.get_or_create(
        user=user,
        defaults={
            "max_memories": settings.GNOSEM_SIGNUP_MAX_MEMORIES or None,
            "max_chars": settings.GNOSEM_SIGNUP_MAX_CHARS or None,
            "max_tokens": settings.GNOSEM_SIGNUP_MAX_TOKENS or None,
        },
    )
    return quota
