"""session_start: what an assistant should know at the start of a conversation, in one text block
within a token budget (docs/design.md §6).

Sections, each newest or best first: the pinned memories (the standing context), one section per
space when the session reaches several; what the user's assistants wrote since this client last
wrote a memory (the newest when it never wrote); what teammates wrote in the team spaces since
then; and with a query, the best search results not listed already. Superseded memories are left
out. Tokens are estimated as ceil(characters / 4), and the whole block (headings included) stays
within the budget; what does not fit is counted as left out. When the session reaches several
spaces, a team space's memory says which space and which user wrote it.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection

from accounts.models import SpaceKind
from accounts.reach import Actor, Reach, reach_of
from memories.encryption.derived import client_variants
from memories.models import Memory
from memories.search.pipeline import search_hybrid
from memories.selectors import memories_by_id
from memories.validation import DEFAULT_SESSION_MAX_TOKENS, clean_max_tokens, clean_query, clean_written_by

# At most this many memories are considered per section.
PINNED_LIMIT = 100
RECENT_LIMIT = 50
RELEVANT_LIMIT = 10
CHARACTERS_PER_TOKEN = 4
# The kinds of lines, in the order they come, each counted in the result.
SECTIONS = ("pinned", "recent", "teammates", "relevant")
# Room kept for the closing line that counts what was left out.
_FOOTER_RESERVE = 120


@dataclass
class SessionContext:
    """The block of text and the memories behind its numbered lines (in order)."""

    text: str = ""
    memories: list[Memory] = field(default_factory=list)
    sections: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SECTIONS, 0))
    left_out: int = 0
    since: datetime | None = None
    total: int = 0

    @property
    def tokens(self) -> int:
        return -(-len(self.text) // CHARACTERS_PER_TOKEN)

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "ids": [str(memory.public_id) for memory in self.memories],
            **self.sections,
            "left_out": self.left_out,
            "since": self.since.isoformat() if self.since else None,
            "memories_total": self.total,
            "tokens": self.tokens,
        }


def session_start(*, owner: Actor, client: str, query: object = None, max_tokens: object = None) -> SessionContext:
    """The context for a new conversation of `client` (its `written_by` name), within `max_tokens`
    (default DEFAULT_SESSION_MAX_TOKENS)."""
    budget = clean_max_tokens(max_tokens, default=DEFAULT_SESSION_MAX_TOKENS) * CHARACTERS_PER_TOKEN
    query = None if query is None else clean_query(query)
    client = clean_written_by(client)
    owner = reach_of(owner)
    overview = _overview(owner, client_variants(client, owner.space_ids) if client else [])
    context = SessionContext(total=overview.total, since=overview.since)
    listed = _listed(owner, context.since)
    recent, teammates = listed["recent"], listed["teammates"]
    several = len(owner.spaces) > 1
    pinned_by_space: dict[int, list[Memory]] = defaultdict(list)
    for pinned_memory in listed["pinned"]:
        pinned_by_space[pinned_memory.space_id].append(pinned_memory)
    sections: list[tuple[str, str, list[Memory], bool]] = [
        ("pinned", f"Pinned in {space.name}:" if several else "Pinned (standing context):", memories, False)
        for space in owner.spaces
        if (memories := pinned_by_space[space.id])
    ]
    listed_ids = {memory.pk for memories in listed.values() for memory in memories}
    relevant = []
    if query is not None:
        hits = search_hybrid(owner=owner, query=query, top_k=RELEVANT_LIMIT)
        relevant = [hit.memory for hit in hits if hit.memory.pk not in listed_ids]

    noun = "memory" if context.total == 1 else "memories"
    lines = [f"Gnosem memory: {context.total:,} {noun}, {overview.pinned:,} pinned."]
    spent = len(lines[0]) + 1
    since_text = f"{context.since:%Y-%m-%d %H:%M} UTC" if context.since else None
    sections += [
        (
            "recent",
            f"New since this client's last memory ({since_text}):" if since_text else "Newest memories:",
            recent,
            True,
        ),
        (
            "teammates",
            f"Teammates wrote since this client's last memory ({since_text}):"
            if since_text
            else "Teammates' newest memories:",
            teammates,
            True,
        ),
        ("relevant", f"Relevant to {query!r}:", relevant, True),
    ]
    for name, heading, memories, dated in sections:
        shown = 0
        for memory in memories:
            line = f"{len(context.memories) + 1}. {_line(memory, dated, labelled=several)}"
            cost = len(line) + 1 + (0 if shown else len(heading) + 1)
            if spent + cost > budget - _FOOTER_RESERVE:
                continue
            if not shown:
                lines.append(heading)
            lines.append(line)
            spent += cost
            shown += 1
            context.memories.append(memory)
        context.sections[name] += shown
        context.left_out += len(memories) - shown
    for by_user, listed_here in ((True, recent), (False, teammates)):
        if len(listed_here) == RECENT_LIMIT:
            context.left_out += _newer_count(owner, context.since, by_user=by_user) - RECENT_LIMIT
    if context.left_out:
        lines.append(f"({context.left_out:,} more left out for the token budget; memory_search finds them.)")
    context.text = "\n".join(lines)
    return context


# Session start runs once per conversation, before the assistant answers: its reads are a few
# statements written out, the memories listed then loaded in one query.
_CURRENT = "FROM memories_memory WHERE space_id = ANY(%(spaces)s) AND superseded_by_id IS NULL"
_OVERVIEW_SQL = f"""
    SELECT (SELECT count(*) {_CURRENT}), (SELECT count(*) {_CURRENT} AND pinned), (
        SELECT max(created_at) {_CURRENT}
        AND (written_by_digest = ANY(%(clients)s) OR also_written_by_digests::text[] && %(clients)s::text[])
    )
"""


def _newer(*, by_user: bool) -> str:
    """FROM and WHERE of the unpinned current memories newer than `since` (all of them when None),
    by the user or else by teammates: anyone else, a former member whose account is gone included."""
    return f"""
        {_CURRENT} AND NOT pinned AND (%(since)s::timestamptz IS NULL OR created_at > %(since)s::timestamptz)
        AND (author_id IS NOT DISTINCT FROM %(user)s) = {"true" if by_user else "false"}
    """


_LISTED_SQL = f"""
    SELECT 'pinned', id FROM (
        SELECT id, row_number() OVER (PARTITION BY space_id ORDER BY updated_at DESC, id DESC) AS place
        {_CURRENT} AND pinned
    ) pinned WHERE place <= {PINNED_LIMIT}
    UNION ALL (SELECT 'recent', id {_newer(by_user=True)} ORDER BY created_at DESC, id DESC LIMIT {RECENT_LIMIT})
    UNION ALL (SELECT 'teammates', id {_newer(by_user=False)} ORDER BY created_at DESC, id DESC LIMIT {RECENT_LIMIT})
"""


@dataclass(frozen=True)
class _Overview:
    total: int
    pinned: int
    since: datetime | None


def _overview(owner: Reach, client_digests: list[str]) -> _Overview:
    """How many current memories the reach holds, how many are pinned, and when the client (by its
    digests) last wrote one of them."""
    with connection.cursor() as cursor:
        cursor.execute(_OVERVIEW_SQL, {"spaces": owner.space_ids, "clients": client_digests})
        return _Overview(*cursor.fetchone())


def _listed(owner: Reach, since: datetime | None) -> dict[str, list[Memory]]:
    """Each space's newest PINNED_LIMIT pinned memories, the user's and the teammates' newest
    RECENT_LIMIT newer than `since`, each list newest first."""
    with connection.cursor() as cursor:
        cursor.execute(_LISTED_SQL, {"spaces": owner.space_ids, "since": since, "user": owner.user.pk})
        rows = cursor.fetchall()
    memories = memories_by_id(owner, [memory_id for _, memory_id in rows])
    listed: dict[str, list[Memory]] = {"pinned": [], "recent": [], "teammates": []}
    for section, memory_id in rows:
        if memory_id in memories:
            listed[section].append(memories[memory_id])
    for section, section_memories in listed.items():
        when = "updated_at" if section == "pinned" else "created_at"
        section_memories.sort(key=lambda memory: (getattr(memory, when), memory.id), reverse=True)
    return listed


def _newer_count(owner: Reach, since: datetime | None, *, by_user: bool) -> int:
    """How many unpinned memories newer than `since` the user (or else anyone else) wrote."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) {_newer(by_user=by_user)}",
            {"spaces": owner.space_ids, "since": since, "user": owner.user.pk},
        )
        return cursor.fetchone()[0]


def _line(memory: Memory, dated: bool, *, labelled: bool) -> str:
    """One memory on one line: its compressed form where there is one; when and by which client if
    `dated`; with `labelled` (the session reaches several spaces), a team space's memory says which
    space and which user, and where a memory shared there came from."""
    text = " ".join((memory.content_optimized or memory.content).split())
    parts = [f"{memory.created_at:%Y-%m-%d}"] if dated else []
    if dated and memory.written_by:
        parts.append(memory.written_by)
    if labelled and memory.space.kind == SpaceKind.TEAM:
        author = memory.author.get_username() if memory.author is not None else "a former member"
        parts.append(f"{memory.space.name}, by {author}")
        if memory.shared_from:
            sharer = f" by {memory.shared_by.get_username()}" if memory.shared_by is not None else ""
            parts.append(f"shared from {memory.shared_from}{sharer}")
    return f"[{', '.join(parts)}] {text}" if parts else text
