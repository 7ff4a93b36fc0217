"""Per-user quotas: how many memories and notes, and how many characters and estimated tokens, a
user may store.

What counts is what the user wrote, in whichever space: the text of the memories they authored,
the earlier versions kept of them (memory_history), their compressed forms, and their notes; memories and
notes together count as items. A compressed form the worker writes counts too, but is never
refused: it is the server's doing, not the user's, and shorter in bytes than the text it condenses,
so it can take a user past a limit by no more than that text's size. Their next write is then
refused, and the usage page shows why.

A user without a Quota row (every account the operator creates) is unlimited and pays nothing
for the check. A user with one has their row locked (SELECT ... FOR UPDATE) inside the writing
transaction before their usage is summed, so two concurrent writes cannot both take the last
slot: the second waits for the first to commit, then sums again and sees it. It sums only the
limits the write could pass, over the user's rows alone; the texts' lengths are read only under a
limit on characters or tokens, which bounds how much text there is to read. What a user wrote
into a team space stays theirs to count while it is there.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Expression, F, Sum
from django.db.models.functions import Coalesce, Length

from gnosem.errors import QuotaExceeded
from gnosem.types import Owner
from memories.models import Memory, MemoryRevision, Note, Quota, TokenEstimate

# What a user stores, by kind, and how each is named to people (usage page, refusals).
STORED_KINDS = {
    "memories": "memories",
    "revisions": "earlier versions",
    "compressed": "compressed forms",
    "notes": "notes",
}


def token_estimate(text: str) -> int:
    """ceil(characters / 4), as the database computes Memory.tokens_raw."""
    return (len(text) + 3) // 4


def text_growth(*, added: Iterable[str | None], removed: Iterable[str | None] = ()) -> dict[str, int]:
    """The characters and estimated tokens stored texts grow by when `added` are stored and
    `removed` go (None stands for no text): quota_check's `characters` and `tokens`."""
    stored, gone = [text for text in added if text], [text for text in removed if text]
    return {
        "characters": sum(map(len, stored)) - sum(map(len, gone)),
        "tokens": sum(map(token_estimate, stored)) - sum(map(token_estimate, gone)),
    }


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
class Stored:
    """One kind of stored text (STORED_KINDS): how many, their characters, their estimated tokens."""

    count: int
    characters: int
    tokens: int

    def as_dict(self) -> dict[str, int]:
        return {"count": self.count, "characters": self.characters, "tokens": self.tokens}


@dataclass(frozen=True)
class QuotaUsage:
    """The quota's three dimensions (`memories`: memories and notes together), and what is
    stored by kind (`stored`, keyed as STORED_KINDS)."""

    memories: Allowance
    characters: Allowance
    tokens: Allowance
    stored: dict[str, Stored]

    @property
    def limited(self) -> bool:
        return any(allowance.limit is not None for allowance in (self.memories, self.characters, self.tokens))

    def as_dict(self) -> dict[str, dict]:
        return {
            "memories": self.memories.as_dict(),
            "characters": self.characters.as_dict(),
            "tokens": self.tokens.as_dict(),
            "stored": {kind: stored.as_dict() for kind, stored in self.stored.items()},
        }


def _sums(kind: str, text: str, token_column: str | Expression, *, characters: bool, tokens: bool) -> dict:
    """Aggregates of one kind's characters and estimated tokens, those asked for."""
    sums = {}
    if characters:
        sums[f"{kind}_characters"] = Coalesce(Sum(Length(text)), 0)
    if tokens:
        sums[f"{kind}_tokens"] = Coalesce(Sum(token_column), 0)
    return sums


def _stored(owner: Owner, *, characters: bool = True, tokens: bool = True) -> dict[str, Stored]:
    """What the user wrote by kind, in three queries; characters or tokens not asked for are 0
    (summing a text's length reads all of it, and a note may hold megabytes)."""
    wanted = {"characters": characters, "tokens": tokens}
    totals = Memory.objects.filter(author=owner).aggregate(
        memories_count=Count("id"),
        compressed_count=Count("content_optimized"),
        **_sums("memories", "content", "tokens_raw", **wanted),
        **_sums("compressed", "content_optimized", "tokens_optimized", **wanted),
    )
    totals |= Note.objects.filter(author=owner).aggregate(
        notes_count=Count("id"), **_sums("notes", "content", "tokens", **wanted)
    )
    if characters or tokens:  # a memory's earlier versions never count as items
        totals |= MemoryRevision.objects.filter(memory__author=owner).aggregate(
            revisions_count=Count("id"), **_sums("revisions", "content", TokenEstimate(F("content")), **wanted)
        )
    return {
        kind: Stored(
            count=totals.get(f"{kind}_count", 0),
            characters=totals.get(f"{kind}_characters", 0),
            tokens=totals.get(f"{kind}_tokens", 0),
        )
        for kind in STORED_KINDS
    }


def _totals(stored: dict[str, Stored]) -> dict[str, int]:
    """The quota's three dimensions summed over what is stored."""
    return {
        "memories": stored["memories"].count + stored["notes"].count,
        "characters": sum(kind.characters for kind in stored.values()),
        "tokens": sum(kind.tokens for kind in stored.values()),
    }


def quota_usage(owner: Owner) -> QuotaUsage:
    """The owner's usage next to their limits (None where unlimited), and what makes it up."""
    quota = Quota.objects.filter(user=owner).first() or Quota(user=owner)
    stored = _stored(owner)
    used = _totals(stored)
    return QuotaUsage(
        memories=Allowance(used["memories"], quota.max_memories),
        characters=Allowance(used["characters"], quota.max_chars),
        tokens=Allowance(used["tokens"], quota.max_tokens),
        stored=stored,
    )


def quota_check(*, owner: Owner, items: int = 0, characters: int = 0, tokens: int = 0) -> None:
    """Refuse (QuotaExceeded) a write that would add this much to the owner's usage past a limit:
    `items` memories and notes, `characters` and estimated `tokens` of stored text (text_growth).
    Call it inside the writing transaction: it locks the owner's quota row until the commit."""
    quota = Quota.objects.select_for_update().filter(user=owner).first()
    if quota is None:
        return
    # Only the limits this write could pass are summed.
    limited = [
        (label, limit, adding)
        for label, limit, adding in (
            ("memories", quota.max_memories, items),
            ("characters", quota.max_chars, characters),
            ("tokens", quota.max_tokens, tokens),
        )
        if limit is not None and adding > 0
    ]
    if not limited:
        return
    labels = {label for label, _, _ in limited}
    stored = _stored(owner, characters="characters" in labels, tokens="tokens" in labels)
    used = _totals(stored)
    for label, limit, adding in limited:
        if used[label] + adding > limit:
            raise QuotaExceeded(_refusal(label, limit, used[label], adding, stored))


def _refusal(label: str, limit: int, have: int, adding: int, stored: dict[str, Stored]) -> str:
    if label == "memories":
        what = "memories and notes"
        memories, notes = stored["memories"].count, stored["notes"].count
        held = f"{memories:,} memor{'y' if memories == 1 else 'ies'} and {notes:,} note{'' if notes == 1 else 's'}"
    else:
        what = "estimated tokens (characters / 4)" if label == "tokens" else label
        parts = [
            f"{getattr(stored[kind], label):,} in {name}"
            for kind, name in STORED_KINDS.items()
            if getattr(stored[kind], label)
        ]
        held = f"{have:,}" + (f" ({', '.join(parts)})" if parts else "")
    left = f", {limit - have:,} left," if have < limit else ""
    adds = "" if label == "memories" and adding == 1 else f" and this would add {adding:,}"
    return (
        f"Quota reached: {limit:,} {what}; you have {held}{left}{adds}. Nothing was saved: delete some memories "
        "(their earlier versions go with them) or notes, or ask the operator to raise your quota."
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
