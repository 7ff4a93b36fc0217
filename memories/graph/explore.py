"""Reads of the graphs of the spaces a caller reaches (memories.graph.linking): explore_graph (the
entities around one entity, or around what a query finds, with what is known about them, the edges
between them and the memories behind each edge), and the entity list and entity page of the
dashboard; for MCP, REST and the dashboard alike. Entities are named to callers by their
`public_id`; the row ids stay inside the queries."""

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from accounts.reach import Actor, Reach, reach_of
from gnosem.errors import NotFound, ValidationError
from memories.encryption.derived import digests_under_every_key, entity_digest
from memories.entities.extraction import entity_key
from memories.models import Entity, EntityMention, Memory, Note, NoteMention
from memories.reading.budget import fit_to_budget, reading_tokens
from memories.search.pipeline import search_hybrid
from memories.selectors import memories_by_id
from memories.vocabulary import MAX_ENTITY_NAME_CHARS

MAX_DEPTH = 2
DEFAULT_ENTITY_LIMIT = 20
MAX_ENTITY_LIMIT = 50
# A query's entry points: the entities of its best few results.
QUERY_RESULTS = 5
QUERY_ENTRY_POINTS = 3
# Memories named per edge (the newest that mention both entities), found among the newest
# RECENT_MENTIONS mentions of each: what an edge names costs the same at any size. An id costs an
# assistant about 25 tokens to read, as much as a short memory: an edge names one, and its count.
MEMORIES_PER_EDGE = 1
RECENT_MENTIONS = 200
# Edges returned: EDGES_PER_ENTITY for each entity returned, MAX_EDGES at most (room enough for the
# edge that joins each entity to the view), strongest first.
# Memories read out in full, within the token budget (DEFAULT_MAX_TOKENS unless the caller gives
# one): the entry points' own first, at most MAX_ENTRY_MEMORIES of them so the edges keep room,
# then those of the strongest edges.
EDGES_PER_ENTITY = 2
MAX_EDGES = 60
MAX_MEMORIES = 25
MAX_ENTRY_MEMORIES = 10
# Notes mentioning the entry points named (by id and title) before those behind the edges.
MAX_ENTRY_NOTES = 10
DEFAULT_MAX_TOKENS = 2_000
# Names suggested when an entity is unknown.
SUGGESTIONS = 5
# Entities on the dashboard's list.
MAX_LISTED_ENTITIES = 200


class EntityNotFound(NotFound):
    """No entity of that name among the reached ones (the message names the closest there are)."""


@dataclass(frozen=True)
class EntityNode:
    entity: Entity
    # Steps from the entry points (0 for an entry point).
    depth: int
    memories: int
    notes: int
    first_seen: datetime | None
    last_seen: datetime | None


@dataclass(frozen=True)
class Edge:
    source: Entity
    target: Entity
    # Summed over the memories and notes mentioning both: the smaller of the two mentions' weights.
    weight: float
    memories: int
    notes: int
    # How the two were named where they were mentioned together lately (in the memories among
    # each one's RECENT_MENTIONS newest, and in notes): fact keys ("PERSON"), "tag" or "text".
    via: list[str]
    # The newest of those memories, and the newest notes, mentioning both, by public id.
    memory_ids: list[uuid.UUID]
    note_ids: list[uuid.UUID]


@dataclass(frozen=True)
class GraphView:
    entry: list[Entity]
    nodes: list[EntityNode]
    edges: list[Edge]
    # The entry points' own memories, then those behind the edges, within the token budget; the
    # notes mentioning the entry points, then those behind the edges (by title).
    memories: list[Memory]
    notes: list[Note] = field(default_factory=list)
    cut_for_budget: list[Memory] = field(default_factory=list)


def clean_depth(value: object) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEPTH:
        raise ValidationError("depth", f"must be 1 or {MAX_DEPTH}: how many steps from the entry points to explore.")
    return value


def clean_entity_limit(value: object) -> int:
    if value is None:
        return DEFAULT_ENTITY_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ENTITY_LIMIT:
        raise ValidationError("limit", f"must be a whole number of entities from 1 to {MAX_ENTITY_LIMIT}.")
    return value


def clean_entity_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("entity", "must be a non-empty name, such as a person, project or error code.")
    if len(value) > MAX_ENTITY_NAME_CHARS or "\x00" in value:
        raise ValidationError("entity", f"at most {MAX_ENTITY_NAME_CHARS} characters, without NUL characters.")
    return value.strip()


def _mentions_of_outer_entity() -> tuple[QuerySet[EntityMention], QuerySet[NoteMention]]:
    """The mentions of the entity of the outer query (OuterRef "pk") by current memories, and by notes."""
    return (
        EntityMention.objects.filter(entity=OuterRef("pk"), memory_current=True),
        NoteMention.objects.filter(entity=OuterRef("pk")),
    )


def entities_of(owner: Actor) -> QuerySet[Entity]:
    """The entities of the spaces the caller reaches that some current memory or some note
    mentions; those of the default write space first."""
    by_memory, by_note = _mentions_of_outer_entity()
    reach = reach_of(owner)
    return Entity.objects.filter(Q(Exists(by_memory)) | Q(Exists(by_note)), space_id__in=reach.space_ids).order_by(
        *reach.default_space_first()
    )


def entity_list(*, owner: Actor, name: str = "", kind: str = "", limit: int = MAX_LISTED_ENTITIES) -> list[Entity]:
    """The entities of the spaces the caller reaches, most mentioned first, each with `memories`
    (current memories mentioning it), `notes` and `last_seen` (its newest memory); `name` keeps
    those whose name contains it, `kind` those of that kind."""
    entities = Entity.objects.filter(space_id__in=reach_of(owner).space_ids)
    if name:
        entities = entities.filter(pk__in=_named(entities, name))
    if kind:
        entities = entities.filter(kind=kind)
    by_memory, by_note = _mentions_of_outer_entity()
    return list(
        entities.annotate(
            memories=Coalesce(Subquery(by_memory.values("entity").annotate(n=Count("*")).values("n")), 0),
            notes=Coalesce(Subquery(by_note.values("entity").annotate(n=Count("*")).values("n")), 0),
            last_seen=Subquery(by_memory.order_by("-memory_created_at").values("memory_created_at")[:1]),
        )
        .filter(Q(memories__gt=0) | Q(notes__gt=0))
        .order_by(F("memories") + F("notes"), "id")
        .reverse()[:limit]
    )


def _named(entities: QuerySet[Entity], name: str) -> list[int]:
    """The ids of those of `entities` whose name contains `name`, case aside, or whose key
    contains its key: compared here, since the database holds both sealed."""
    needle, key = name.casefold(), entity_key(name) or name.casefold()
    return [
        entity.pk
        for entity in entities.only("id", "space_id", "key_digest", "key", "name")
        if needle in entity.name.casefold() or key in entity.key
    ]


def clean_entity_id(value: object) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value).strip())
    except ValueError:
        raise ValidationError("entity_id", "must be an entity id (a UUID, as explore_graph returns it).") from None


def entity_get(*, owner: Actor, public_id: object) -> Entity:
    """The reached entity by its public id; one of another space is NotFound exactly like an unknown one."""
    public_id = clean_entity_id(public_id)
    entity = entities_of(owner).filter(public_id=public_id).first()
    if entity is None:
        raise EntityNotFound(f"No entity with id {public_id}. Explore by name or query to see your entities' ids.")
    return entity


# The entities of the spaces reached among those asked for: every read of mentions starts from them.
_REACHED_ENTITIES = "SELECT id FROM memories_entity WHERE space_id = ANY(%(spaces)s) AND id = ANY({ids})"
_ENTITY_MEMORIES_SQL = f"""
    SELECT memory_id FROM memories_entity_mention
    WHERE entity_id IN ({_REACHED_ENTITIES.format(ids="%(entities)s")}) AND memory_current
    GROUP BY memory_id, memory_created_at
    ORDER BY max(weight) DESC, memory_created_at DESC, memory_id DESC
    LIMIT %(limit)s
"""


def entity_memories(*, owner: Actor, entities: list[Entity], limit: int) -> list[Memory]:
    """The current memories mentioning any of `entities`, the firmest mention first (a compressed
    fact, then a tag, then the text), newest first among equals."""
    with connection.cursor() as cursor:
        cursor.execute(
            _ENTITY_MEMORIES_SQL,
            {"spaces": reach_of(owner).space_ids, "entities": [entity.pk for entity in entities], "limit": limit},
        )
        memory_ids = [row[0] for row in cursor.fetchall()]
    memories = memories_by_id(owner, memory_ids)
    return [memories[memory_id] for memory_id in memory_ids if memory_id in memories]


def entity_notes(*, owner: Actor, entities: list[Entity], limit: int) -> list[Note]:
    """The notes mentioning any of `entities` (without their text), most recently changed first."""
    mentioning = NoteMention.objects.filter(note=OuterRef("pk"), entity__in=entities)
    return list(
        Note.objects.filter(Exists(mentioning), space_id__in=reach_of(owner).space_ids)
        .defer("content")
        .order_by("-updated_at", "-id")[:limit]
    )


def entity_find(*, owner: Actor, name: object) -> Entity:
    """The reached entity by name (compared by its normalised key; the default write space's
    first); NotFound naming the closest names when there is none."""
    name = clean_entity_name(name)
    owner = reach_of(owner)
    key = entity_key(name)
    if key:
        digests = digests_under_every_key(entity_digest, key, owner.space_ids)
        found = entities_of(owner).filter(key_digest__in=digests).first()
        if found is not None:
            return found
    similar = (
        [
            entity.name
            for entity in entities_of(owner)
            .filter(pk__in=_named(entities_of(owner), name[:40]))
            .annotate(count=Count("mentions"))
            .order_by("-count", "id")[:SUGGESTIONS]
        ]
        if key
        else []
    )
    hint = f" Similar names: {', '.join(similar)}." if similar else " Give a `query` to start from what it finds."
    raise EntityNotFound(f"No entity named {name!r} in your memories.{hint}")


# Links are read from memories_entity_link (models.EntityLink), summing each link's rows; a link
# joins entities of one space, so the graph reads links alone, starting from entities of the spaces
# reached.
_NEIGHBOURS_SQL = f"""
    SELECT target_id FROM memories_entity_link
    WHERE source_id IN ({_REACHED_ENTITIES.format(ids="%(frontier)s")}) AND target_id <> ALL(%(seen)s)
    GROUP BY target_id HAVING sum(memories) > 0 OR sum(notes) > 0
    ORDER BY sum(weight) DESC, target_id LIMIT %(room)s
"""
# The edges among the chosen entities (`nodes`), each one's counts and the notes mentioning the
# entry points (`entry`), in one statement: rows ('edge', source, target, weight, memories, notes,
# how, memory ids, note ids, NULL, NULL, memory public ids), ('node', entity, NULL, NULL, memories,
# notes, NULL, NULL, NULL, first seen, last seen, NULL) and ('note', NULL, ..., NULL, note ids
# newest first, NULL, NULL, NULL). Weights and counts are the links' (an entity's link to itself
# counts its own); what names an edge (how, memory and note ids) is read from the RECENT_MENTIONS
# newest mentions of each entity by current memories, and from its notes' mentions. The edges
# kept (`edges` of them) are first the one joining each entity to the nearer entity (by `depths`,
# steps from the entry points) it is most strongly linked to, so no entity is shown without what
# brought it in, then the strongest of the rest.
_GRAPH_SQL = f"""
    WITH nodes AS MATERIALIZED (
        SELECT d.id, d.depth FROM unnest(%(nodes)s::bigint[], %(depths)s::int[]) d (id, depth)
        WHERE d.id IN ({_REACHED_ENTITIES.format(ids="%(nodes)s")})
    ),
    links AS MATERIALIZED (
        SELECT s.id AS source, t.id AS target, s.depth AS source_depth, t.depth AS target_depth,
               l.weight, l.memories, l.notes
        FROM nodes s JOIN nodes t ON t.id >= s.id
        CROSS JOIN LATERAL (
            SELECT round(sum(weight)::numeric, 6)::float8 AS weight, sum(memories) AS memories, sum(notes) AS notes
            FROM memories_entity_link WHERE source_id = s.id AND target_id = t.id
        ) l
        WHERE l.memories > 0 OR l.notes > 0
    ),
    edges AS MATERIALIZED (
        SELECT source, target, weight, memories, notes FROM (
            SELECT *, source_depth <> target_depth AND row_number() OVER (
                PARTITION BY CASE WHEN source_depth > target_depth THEN source ELSE target END,
                             source_depth <> target_depth
                ORDER BY weight DESC, source, target
            ) = 1 AS joining
            FROM links WHERE source <> target
        ) ranked
        ORDER BY joining DESC, weight DESC, source, target LIMIT %(edges)s
    ),
    recent AS MATERIALIZED (
        SELECT r.* FROM nodes n CROSS JOIN LATERAL (
            SELECT entity_id, memory_id, weight, source, memory_created_at AS created_at
            FROM memories_entity_mention
            WHERE entity_id = n.id AND memory_current
            ORDER BY memory_created_at DESC LIMIT %(recent)s
        ) r
    ),
    note_mentions AS MATERIALIZED (
        SELECT a.entity_id, a.note_id, a.source, t.updated_at
        FROM memories_note_mention a
        JOIN memories_note t ON t.id = a.note_id AND t.space_id = ANY(%(spaces)s)
        WHERE a.entity_id IN (SELECT id FROM nodes)
    ),
    together AS (
        SELECT a.entity_id AS source, b.entity_id AS target, a.source AS source_how, b.source AS target_how,
               a.memory_id, NULL::bigint AS note_id, a.created_at AS at
        FROM recent a JOIN recent b ON b.memory_id = a.memory_id AND b.entity_id > a.entity_id
        UNION ALL
        SELECT a.entity_id, b.entity_id, a.source, b.source, NULL, a.note_id, a.updated_at
        FROM note_mentions a JOIN note_mentions b ON b.note_id = a.note_id AND b.entity_id > a.entity_id
    ),
    named AS MATERIALIZED (
        SELECT source, target, array_agg(DISTINCT source_how) || array_agg(DISTINCT target_how) AS how,
               (array_agg(memory_id ORDER BY at DESC, memory_id DESC)
                    FILTER (WHERE memory_id IS NOT NULL))[1:%(per_edge)s] AS memory_ids,
               (array_agg(note_id ORDER BY at DESC, note_id DESC)
                    FILTER (WHERE note_id IS NOT NULL))[1:%(per_edge)s] AS note_ids
        FROM together WHERE (source, target) IN (SELECT source, target FROM edges)
        GROUP BY source, target
    )
    SELECT 'edge', e.source, e.target, e.weight, e.memories, e.notes, n.how, n.memory_ids, n.note_ids,
           NULL::timestamptz, NULL::timestamptz,
           ARRAY(
               SELECT m.public_id FROM unnest(n.memory_ids) WITH ORDINALITY AS i (id, n)
               JOIN memories_memory m ON m.id = i.id AND m.space_id = ANY(%(spaces)s)
               ORDER BY i.n
           )
    FROM edges e LEFT JOIN named n ON n.source = e.source AND n.target = e.target
    UNION ALL
    SELECT 'node', s.id, NULL, NULL, coalesce(l.memories, 0), coalesce(l.notes, 0), NULL, NULL, NULL,
           (SELECT min(memory_created_at) FROM memories_entity_mention WHERE entity_id = s.id AND memory_current),
           (SELECT max(memory_created_at) FROM memories_entity_mention WHERE entity_id = s.id AND memory_current),
           NULL
    FROM nodes s LEFT JOIN links l ON l.source = s.id AND l.target = s.id
    UNION ALL
    SELECT 'note', NULL, NULL, NULL, NULL, NULL, NULL, NULL, array_agg(note_id ORDER BY updated_at DESC, note_id DESC),
           NULL, NULL, NULL
    FROM (
        SELECT note_id, updated_at FROM note_mentions WHERE entity_id = ANY(%(entry)s)
        GROUP BY note_id, updated_at ORDER BY updated_at DESC, note_id DESC LIMIT %(entry_notes)s
    ) entry_notes
"""


def graph_explore(
    *,
    owner: Actor,
    entity: object = None,
    entity_id: object = None,
    query: object = None,
    depth: object = None,
    limit: object = None,
    max_tokens: int | None = None,
) -> GraphView:
    """The entities within `depth` steps of the entry points (the entity named `entity`, the one
    whose id is `entity_id`, or those of the best results for `query`), at most `limit` of them,
    strongest links first; the edges among them (EDGES_PER_ENTITY per entity, MAX_EDGES at most:
    the one that brought each entity in, then the strongest), each naming its newest memory and
    note; and, within `max_tokens` (DEFAULT_MAX_TOKENS when not given), the entry points' own
    memories (from a query, its results mentioning them, best first) and then those behind the
    strongest edges (MAX_MEMORIES in all)."""
    if [entity, entity_id, query].count(None) != 2:
        raise ValidationError(
            "entity",
            "give either `entity` (a name), `entity_id` (an id explore_graph returned) or `query` "
            "(to start from what it finds).",
        )
    depth, limit = clean_depth(depth), clean_entity_limit(limit)
    owner = reach_of(owner)
    entry_memories = None
    if entity is not None:
        entry = [entity_find(owner=owner, name=entity).pk]
    elif entity_id is not None:
        entry = [entity_get(owner=owner, public_id=entity_id).pk]
    else:
        entry, entry_memories = _entry_points(owner, query)
    return _explore(owner, entry, depth=depth, limit=limit, max_tokens=max_tokens, entry_memories=entry_memories)


def graph_explore_from(
    *,
    owner: Actor,
    entry: list[Entity],
    depth: int = 1,
    limit: int = DEFAULT_ENTITY_LIMIT,
    max_tokens: int | None = None,
) -> GraphView:
    """As `graph_explore`, from these reached entities (the entity page starts from its own); their
    own memories are those mentioning them most firmly, newest first."""
    return _explore(reach_of(owner), [node.pk for node in entry], depth=depth, limit=limit, max_tokens=max_tokens)


def _explore(
    owner: Reach,
    entry: list[int],
    *,
    depth: int,
    limit: int,
    max_tokens: int | None,
    entry_memories: list[Memory] | None = None,
) -> GraphView:
    """`graph_explore` from the entities with these row ids (those of unreached spaces are left
    out), `entry_memories` their own memories, best first (by default those mentioning them most
    firmly, newest first)."""
    depths = dict.fromkeys(entry[:limit], 0)
    frontier = list(depths)
    for step in range(1, depth + 1):
        if not frontier or len(depths) >= limit:
            break
        frontier = _strongest_neighbours(owner, frontier, list(depths), limit - len(depths))
        depths.update({node_id: step for node_id in frontier})
    entities = Entity.objects.filter(space_id__in=owner.space_ids, pk__in=depths).in_bulk()
    starts = [entities[node_id] for node_id in entry if node_id in entities]
    if entry_memories is None:
        entry_memories = entity_memories(owner=owner, entities=starts, limit=MAX_ENTRY_MEMORIES) if starts else []
    own = entry_memories[:MAX_ENTRY_MEMORIES]
    graph = _graph(owner, depths, entities, starts, max_edges=min(EDGES_PER_ENTITY * len(entities), MAX_EDGES))
    known = {memory.pk for memory in own}
    more = [memory_id for memory_id in graph.memory_ids if memory_id not in known][: MAX_MEMORIES - len(own)]
    read = memories_by_id(owner, more)
    memories = own + [read[memory_id] for memory_id in more if memory_id in read]
    budget = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    memories, cut = fit_to_budget(memories, lambda memory: reading_tokens(memory, raw=False), budget)
    return GraphView(
        entry=starts,
        nodes=_nodes(entities, depths, graph.counts),
        edges=graph.edges,
        memories=memories,
        notes=graph.notes,
        cut_for_budget=cut,
    )


def _entry_points(owner: Reach, query: object) -> tuple[list[int], list[Memory]]:
    """The entities (row ids) mentioned most strongly by the best results for `query`, and those
    results mentioning them, best first."""
    hits = search_hybrid(owner=owner, query=query, top_k=QUERY_RESULTS, diversity=0)
    scores = {hit.memory.pk: hit.score for hit in hits}
    with connection.cursor() as cursor:
        cursor.execute(_HIT_MENTIONS_SQL, {"spaces": owner.space_ids, "memories": list(scores)})
        mentions = cursor.fetchall()
    strength: dict[int, float] = {}
    for entity_id, memory_id, weight in mentions:
        strength[entity_id] = strength.get(entity_id, 0.0) + scores[memory_id] * weight
    best = sorted(strength, key=lambda entity_id: (-strength[entity_id], entity_id))[:QUERY_ENTRY_POINTS]
    mentioning = {memory_id for entity_id, memory_id, _ in mentions if entity_id in best}
    return best, [hit.memory for hit in hits if hit.memory.pk in mentioning]


# The mentions (entity, memory, weight) of entities of the spaces reached by the given memories.
_HIT_MENTIONS_SQL = """
    SELECT m.entity_id, m.memory_id, m.weight FROM memories_entity_mention m
    JOIN memories_entity e ON e.id = m.entity_id AND e.space_id = ANY(%(spaces)s)
    WHERE m.memory_id = ANY(%(memories)s)
"""


def _strongest_neighbours(owner: Reach, frontier: list[int], seen: list[int], room: int) -> list[int]:
    """Up to `room` entities not yet `seen`, linked most strongly to the frontier."""
    with connection.cursor() as cursor:
        cursor.execute(_NEIGHBOURS_SQL, {"spaces": owner.space_ids, "frontier": frontier, "seen": seen, "room": room})
        return [row[0] for row in cursor.fetchall()]


class _Counts(NamedTuple):
    memories: int
    notes: int
    first_seen: datetime | None
    last_seen: datetime | None


class _Graph(NamedTuple):
    edges: list[Edge]
    # The memories (by row id) behind the edges, each once, in the order the edges name them.
    memory_ids: list[int]
    # The notes mentioning the entry points, newest first, then those behind the edges.
    notes: list[Note]
    counts: dict[int, _Counts]


def _graph(
    owner: Reach, depths: dict[int, int], entities: dict[int, Entity], entry: list[Entity], *, max_edges: int
) -> _Graph:
    """`max_edges` edges among `entities` (`depths` steps from the `entry` points): the one joining
    each to the view, then the strongest; what is behind them, the notes mentioning the `entry`
    points, and each entity's counts: one statement, and one more for the notes' titles."""
    parameters: dict[str, int | list[int]] = {
        "spaces": owner.space_ids,
        "nodes": list(depths),
        "depths": list(depths.values()),
        "entry": [entity.pk for entity in entry],
        "per_edge": MEMORIES_PER_EDGE,
        "recent": RECENT_MENTIONS,
        "edges": max_edges,
        "entry_notes": MAX_ENTRY_NOTES,
    }
    with connection.cursor() as cursor:
        cursor.execute(_GRAPH_SQL, parameters)
        rows = cursor.fetchall()
    edge_rows = sorted(
        (row[1:9] + row[11:] for row in rows if row[0] == "edge"), key=lambda row: (-row[2], row[0], row[1])
    )
    counts = {row[1]: _Counts(*row[4:6], *row[9:11]) for row in rows if row[0] == "node"}
    entry_note_ids = next((row[8] or [] for row in rows if row[0] == "note"), [])
    memory_order = list(
        dict.fromkeys(memory_id for *_, memory_ids, _, _ in edge_rows for memory_id in memory_ids or [])
    )
    note_order = list(
        dict.fromkeys([*entry_note_ids, *(note_id for *_, note_ids, _ in edge_rows for note_id in note_ids or [])])
    )
    notes = Note.objects.filter(space_id__in=owner.space_ids).defer("content").in_bulk(note_order)
    edges = [
        Edge(
            entities[source],
            entities[target],
            round(weight, 3),
            memory_count,
            note_count,
            _how_named(how or []),
            public_ids,
            [notes[note_id].public_id for note_id in edge_notes or [] if note_id in notes],
        )
        for source, target, weight, memory_count, note_count, how, _, edge_notes, public_ids in edge_rows
    ]
    return _Graph(edges, memory_order, [notes[note_id] for note_id in note_order if note_id in notes], counts)


def _how_named(sources: list[str]) -> list[str]:
    """Mention sources as an edge's `via`: a fact's key ("PERSON"), "tag" or "text"."""
    return sorted({source.partition(":")[2] or source for source in sources})


_NO_COUNTS = _Counts(0, 0, None, None)


def _nodes(entities: dict[int, Entity], depths: dict[int, int], counts: dict[int, _Counts]) -> list[EntityNode]:
    """The entities in exploration order, with their current memories' count and first/last dates,
    and their notes' count."""
    return [
        EntityNode(entities[entity_id], depth, *counts.get(entity_id, _NO_COUNTS))
        for entity_id, depth in depths.items()
        if entity_id in entities
    ]
