"""Quotas: how many memories and notes, and how many characters and estimated tokens, a user may
store, and a team space may hold.

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

A team space with a SpaceQuota row (new ones get GNOSEM_TEAM_SPACE_MAX_*) is bounded the same way
by everything it holds, whoever wrote it, so members within their own quotas cannot together grow
it past what the operator allows. A write checks the writer's quota, then the space's, locking the
rows in that order every time.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db.models import Count, Expression, F, Sum
from django.db.models.functions import Coalesce

from gnosem.errors import QuotaExceeded
from gnosem.types import Owner
from memories.models import Memory, MemoryRevision, Note, Quota, SpaceQuota, StorageLimits, TokensOfLength

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


def _sums(
    kind: str, length: str | Expression, token_column: str | Expression, *, characters: bool, tokens: bool
) -> dict:
    """Aggregates of one kind's characters and estimated tokens, those asked for."""
    sums = {}
    if characters:
        sums[f"{kind}_characters"] = Coalesce(Sum(length), 0)
    if tokens:
        sums[f"{kind}_tokens"] = Coalesce(Sum(token_column), 0)
    return sums


def _stored(*, characters: bool = True, tokens: bool = True, **whose: object) -> dict[str, Stored]:
    """What is stored by kind, of the memories and notes matching `whose` (`author=` a user, or
    `space_id=` a space), in three queries; characters or tokens not asked for are not summed: 0."""
    wanted = {"characters": characters, "tokens": tokens}
    totals = Memory.objects.filter(**whose).aggregate(
        memories_count=Count("id"),
        compressed_count=Count("content_optimized"),
        **_sums("memories", "content_chars", "tokens_raw", **wanted),
        **_sums("compressed", "optimized_chars", "tokens_optimized", **wanted),
    )
    totals |= Note.objects.filter(**whose).aggregate(
        notes_count=Count("id"), **_sums("notes", "content_chars", "tokens", **wanted)
    )
    if characters or tokens:  # a memory's earlier versions never count as items
        of_memory = {f"memory__{field}": value for field, value in whose.items()}
        totals |= MemoryRevision.objects.filter(**of_memory).aggregate(
            revisions_count=Count("id"),
            **_sums("revisions", "content_chars", TokensOfLength(F("content_chars")), **wanted),
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


def _usage(limits: StorageLimits, stored: dict[str, Stored]) -> QuotaUsage:
    used = _totals(stored)
    return QuotaUsage(
        memories=Allowance(used["memories"], limits.max_memories),
        characters=Allowance(used["characters"], limits.max_chars),
        tokens=Allowance(used["tokens"], limits.max_tokens),
        stored=stored,
    )


def quota_usage(owner: Owner) -> QuotaUsage:
    """The owner's usage next to their limits (None where unlimited), and what makes it up."""
    return _usage(Quota.objects.filter(user=owner).first() or Quota(user=owner), _stored(author=owner))


def space_quota_usage(quota: SpaceQuota) -> QuotaUsage:
    """What the quota's space holds next to its limits (None where unlimited), and what makes it up."""
    return _usage(quota, _stored(space_id=quota.space_id))


def quota_check(*, owner: Owner, space_id: int, items: int = 0, characters: int = 0, tokens: int = 0) -> None:
    """Refuse (QuotaExceeded) a write by `owner` into the space `space_id` that would add this much
    past a limit of the owner's quota or the space's: `items` memories and notes, `characters` and
    estimated `tokens` of stored text (text_growth). Call it inside the writing transaction: it
    locks the quota rows until the commit."""
    growth = {"memories": items, "characters": characters, "tokens": tokens}
    quota = Quota.objects.select_for_update().filter(user=owner).first()
    if quota is not None:
        _check(quota, growth, lambda **wanted: _stored(author=owner, **wanted), _refusal)
    space_check(space_id=space_id, items=items, characters=characters, tokens=tokens)


def space_check(*, space_id: int, items: int = 0, characters: int = 0, tokens: int = 0) -> None:
    """Refuse (QuotaExceeded) adding this much to what the space `space_id` holds past its quota
    (a memory moved there, or any write: quota_check calls it). Locks the space's quota row."""
    quota = SpaceQuota.objects.select_for_update().filter(space_id=space_id).select_related("space").first()
    if quota is not None:
        growth = {"memories": items, "characters": characters, "tokens": tokens}
        refusal = partial(_space_refusal, quota.space.name)
        _check(quota, growth, lambda **wanted: _stored(space_id=space_id, **wanted), refusal)


def _check(
    limits: StorageLimits,
    growth: dict[str, int],
    stored_of: Callable[..., dict[str, Stored]],
    refusal: Callable[..., str],
) -> None:
    """Only the limits this write could pass are summed."""
    limited = [
        (label, limit, growth[label])
        for label, limit in (
            ("memories", limits.max_memories),
            ("characters", limits.max_chars),
            ("tokens", limits.max_tokens),
        )
        if limit is not None and growth[label] > 0
    ]
    if not limited:
        return
    labels = {label for label, _, _ in limited}
    stored = stored_of(characters="characters" in labels, tokens="tokens" in labels)
    used = _totals(stored)
    for label, limit, adding in limited:
        if used[label] + adding > limit:
            raise QuotaExceeded(refusal(label, limit, used[label], adding, stored))


def _described(label: str, limit: int, have: int, adding: int, stored: dict[str, Stored]) -> tuple[str, str, str]:
    """What a refusal says: the limit's unit, what is held, and what is left and added."""
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
    return what, held, f"{left}{adds}"


def _refusal(label: str, limit: int, have: int, adding: int, stored: dict[str, Stored]) -> str:
    what, held, rest = _described(label, limit, have, adding, stored)
    return (
        f"Quota reached: {limit:,} {what}; you have {held}{rest}. Nothing was saved: delete some memories "
        "(their earlier versions go with them) or notes, or ask the operator to raise your quota."
    )


def _space_refusal(space: str, label: str, limit: int, have: int, adding: int, stored: dict[str, Stored]) -> str:
    what, held, rest = _described(label, limit, have, adding, stored)
    return (
        f"The space {space!r} is full: its quota is {limit:,} {what}, and it holds {held}{rest}. Nothing was "
        "saved: delete some of its memories or notes, write to another space, or ask the operator to raise "
        "the space's quota."
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


def space_quota_create(*, space_id: int) -> SpaceQuota | None:
    """Give a new team space the quota configured for team spaces (GNOSEM_TEAM_SPACE_MAX_*; 0 =
    unlimited); none when all three are unlimited."""
    limits = {
        "max_memories": settings.GNOSEM_TEAM_SPACE_MAX_MEMORIES or None,
        "max_chars": settings.GNOSEM_TEAM_SPACE_MAX_CHARS or None,
        "max_tokens": settings.GNOSEM_TEAM_SPACE_MAX_TOKENS or None,
    }
    if not any(limits.values()):
        return None
    quota, _ = SpaceQuota.objects.get_or_create(space_id=space_id, defaults=limits)
    return quota
