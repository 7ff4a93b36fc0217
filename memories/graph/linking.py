"""Each space's graph: entities its memories mention, linked through the memories they share.

Entities are extracted by rules (memories.entities.extraction) from a memory's text, its tags and its
compressed facts, and stored per space (`Entity`, one row per normalised key, sealed, found by
the key's keyed digest) with one `EntityMention` per memory and entity. Two entities are linked by
the memories (and notes) that mention both, weighted by how each mention came about (a fact key
counts more than a word in the text). The database keeps the links (`EntityLink`) from the
mentions in the same transaction, so the graph is current the moment a memory's mentions are;
`links_merge`, run by the minute sweep, merges each link's rows.

A memory's mentions name entities of the memory's own space (a memory moved to another space is
linked again there, in the same transaction), and each carries a copy of whether its memory is
current and when it was written, which the database keeps (models.EntityMention).

Mentions are written when the worker indexes a memory, when its compressed facts arrive and when
an update changes it, and when a note is indexed or its tags change (`NoteMention`); a deleted
memory's or note's mentions go with it. `graph_rebuild` relinks every memory
(`manage.py rebuildgraph`), and `entities_prune` drops entities no memory or note mentions any more.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memories.encryption.derived import entity_digest
from memories.encryption.fields import seal_as
from memories.encryption.keys import current_key, readable_keys
from memories.entities.extraction import Mention, extract_entities
from memories.models import Entity, EntityMention, Memory, Note, NoteMention

# A mention's weight by where it came from: a fact the model named, a tag the writer chose, a word
# the rules found in the text.
SOURCE_WEIGHTS = {"fact": 1.0, "tag": 0.8, "text": 0.5}
# An entity no memory or note mentions is pruned once it has not been linked for this long (a worker linking
# it meanwhile refreshes its time at most once an hour, so the two never race).
PRUNE_AFTER = timedelta(days=1)
LINKED_AT_REFRESH = timedelta(hours=1)
# Memories (and notes, each up to a megabyte) relinked per transaction by graph_rebuild.
REBUILD_BATCH = 500
REBUILD_NOTE_BATCH = 10


def mention_weight(source: str) -> float:
    """The weight of a mention from `source` ("fact:PERSON", "tag", "text")."""
    return SOURCE_WEIGHTS[source.partition(":")[0]]


_FIND_ENTITIES_SQL = """
    SELECT key_digest, id, kind, linked_at FROM memories_entity WHERE space_id = %s AND key_digest = ANY(%s)
"""
_LOCK_ENTITIES_SQL = "SELECT FROM memories_entity WHERE id = ANY(%s) ORDER BY id FOR UPDATE"
# Refreshes found entities' time (and a bare name's kind).
_REFRESH_ENTITIES_SQL = """
    UPDATE memories_entity e SET linked_at = greatest(e.linked_at, %(now)s),
        kind = CASE WHEN e.kind = 'name' THEN found.kind ELSE e.kind END
    FROM unnest(%(ids)s::bigint[], %(kinds)s::text[]) AS found (id, kind)
    WHERE e.id = found.id
"""
_CREATE_ENTITIES_SQL = """
    INSERT INTO memories_entity (space_id, key_digest, key_version, key, name, kind, linked_at)
    SELECT %(space)s, digest, %(version)s, key, name, kind, %(now)s
    FROM unnest(%(digests)s::text[], %(keys)s::bytea[], %(names)s::bytea[], %(kinds)s::text[])
        AS found (digest, key, name, kind)
    ORDER BY digest
    ON CONFLICT (space_id, key_digest) DO UPDATE SET linked_at = greatest(memories_entity.linked_at, excluded.linked_at)
    RETURNING key_digest, id
"""
_INSERT_MENTIONS_SQL = """
    INSERT INTO memories_entity_mention (entity_id, memory_id, source, weight)
    SELECT * FROM unnest(%(entities)s::bigint[], %(memories)s::bigint[], %(sources)s::text[], %(weights)s::float8[])
"""


def _entity_ids(cursor: CursorWrapper, space_id: int, mentions: list[Mention], now: datetime) -> dict[str, int]:
    """The ids of the space's entities these mentions name, by normalised key: found by their
    keys' digests under each of the space's key versions, created (sealed, under the current one,
    in digest order so that concurrent linkers lock them in one order) where none is found. A
    found entity's `linked_at` is refreshed at most hourly."""
    entities = {mention.key: mention for mention in reversed(mentions)}  # the first one's name
    if not entities:
        return {}
    space_keys = readable_keys([space_id])[space_id] or [current_key(space_id)]
    by_digest = {entity_digest(key, normal): normal for key in space_keys for normal in entities}
    cursor.execute(_FIND_ENTITIES_SQL, [space_id, list(by_digest)])
    ids: dict[str, int] = {}
    stale: dict[int, str] = {}
    for digest, entity_id, kind, linked_at in cursor.fetchall():
        normal = by_digest[digest]
        ids.setdefault(normal, entity_id)
        wanted = entities[normal].kind
        if linked_at < now - LINKED_AT_REFRESH or (kind == "name" and wanted != "name"):
            stale[entity_id] = wanted
    if stale:
        cursor.execute(_LOCK_ENTITIES_SQL, [sorted(stale)])
        cursor.execute(_REFRESH_ENTITIES_SQL, {"now": now, "ids": list(stale), "kinds": list(stale.values())})
    missing = [entities[normal] for normal in entities if normal not in ids]
    if missing:
        key = space_keys[0]
        rows = [Entity(space_id=space_id, key_digest=entity_digest(key, mention.key)) for mention in missing]
        cursor.execute(
            _CREATE_ENTITIES_SQL,
            {
                "space": space_id,
                "version": key.version,
                "now": now,
                "digests": [row.key_digest for row in rows],
                "keys": [seal_as(row, "key", mention.key, key) for row, mention in zip(rows, missing, strict=True)],
                "names": [seal_as(row, "name", mention.name, key) for row, mention in zip(rows, missing, strict=True)],
                "kinds": [mention.kind for mention in missing],
            },
        )
        created = dict(cursor.fetchall())
        ids.update({mention.key: created[row.key_digest] for mention, row in zip(missing, rows, strict=True)})
    return ids


@transaction.atomic
def entities_link(memory_ids: Iterable[int]) -> int:
    """Replace these memories' mentions with what they mention now (their text, tags and
    compressed facts as committed, read under their row locks). Returns how many mentions were
    written. Memories deleted meanwhile are skipped."""
    memory_ids = sorted(set(memory_ids))
    if not memory_ids:
        return 0
    memories = list(
        Memory.objects.select_for_update()
        .filter(pk__in=memory_ids)
        .order_by("pk")
        .only("id", "space_id", "public_id", "content", "content_optimized", "tags")
    )
    found: dict[int, list[tuple[int, Mention]]] = defaultdict(list)
    for memory in memories:
        for mention in extract_entities(memory.content, facts=memory.content_optimized, tags=memory.tags):
            found[memory.space_id].append((memory.pk, mention))
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_entity_mention WHERE memory_id = ANY(%s)", [memory_ids])
        for space_id, mentions in found.items():
            ids = _entity_ids(cursor, space_id, [mention for _, mention in mentions], now)
            cursor.execute(
                _INSERT_MENTIONS_SQL,
                {
                    "entities": [ids[mention.key] for _, mention in mentions],
                    "memories": [memory_id for memory_id, _ in mentions],
                    "sources": [mention.source for _, mention in mentions],
                    "weights": [mention_weight(mention.source) for _, mention in mentions],
                },
            )
    return sum(len(mentions) for mentions in found.values())


# A note's text is read in pieces of this many characters (the extractor keeps MAX_ENTITIES per
# piece); the note keeps the NOTE_MAX_ENTITIES its pieces mention most often.
NOTE_PIECE_CHARS = 5_000
NOTE_MAX_ENTITIES = 100

_INSERT_NOTE_MENTIONS_SQL = """
    INSERT INTO memories_note_mention (entity_id, note_id, source, weight)
    SELECT * FROM unnest(%(entities)s::bigint[], %(notes)s::bigint[], %(sources)s::text[], %(weights)s::float8[])
"""


@transaction.atomic
def notes_link(note_ids: Iterable[int]) -> int:
    """Replace these notes' mentions with the entities of their text and tags (read under their
    row locks). Returns how many mentions were written."""
    note_ids = sorted(set(note_ids))
    if not note_ids:
        return 0
    notes = list(Note.objects.select_for_update().filter(pk__in=note_ids).order_by("pk"))
    now, written = timezone.now(), 0
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_note_mention WHERE note_id = ANY(%s)", [note_ids])
        for note in notes:
            mentions = _note_mentions(note)
            ids = _entity_ids(cursor, note.space_id, mentions, now)
            cursor.execute(
                _INSERT_NOTE_MENTIONS_SQL,
                {
                    "entities": [ids[mention.key] for mention in mentions],
                    "notes": [note.pk] * len(mentions),
                    "sources": [mention.source for mention in mentions],
                    "weights": [mention_weight(mention.source) for mention in mentions],
                },
            )
            written += len(mentions)
    return written


def _note_mentions(note: Note) -> list[Mention]:
    """The note's entities: its tags', then those its pieces mention most often (ties by first seen)."""
    counts: dict[str, int] = {}
    first: dict[str, Mention] = {}
    for start in range(0, len(note.content), NOTE_PIECE_CHARS):
        piece = note.content[start : start + NOTE_PIECE_CHARS]
        for mention in extract_entities(piece, tags=note.tags if start == 0 else ()):
            first.setdefault(mention.key, mention)
            counts[mention.key] = counts.get(mention.key, 0) + 1
    tagged = [key for key, mention in first.items() if mention.source == "tag"]
    ranked = tagged + sorted((key for key in first if key not in tagged), key=lambda key: -counts[key])
    return [first[key] for key in ranked[:NOTE_MAX_ENTITIES]]


# Links merged per transaction by links_merge; the advisory lock keeps two sweeps from merging at once.
MERGE_BATCH = 20_000
MERGE_LOCK = 0x6C696E6B  # "link"
_MERGE_LINKS_SQL = """
    WITH changed AS (
        SELECT DISTINCT source_id, target_id FROM memories_entity_link WHERE NOT merged LIMIT %(limit)s
    ),
    gone AS (
        DELETE FROM memories_entity_link l USING changed c
        WHERE l.source_id = c.source_id AND l.target_id = c.target_id
        RETURNING l.source_id, l.target_id, l.weight, l.memories, l.notes
    ),
    merged AS (
        INSERT INTO memories_entity_link (source_id, target_id, weight, memories, notes, merged)
        SELECT source_id, target_id, sum(weight), sum(memories), sum(notes), true FROM gone
        GROUP BY source_id, target_id HAVING sum(memories) <> 0 OR sum(notes) <> 0
    )
    SELECT count(*) FROM changed
"""


def links_merge() -> int:
    """Merge the rows of each link that changed into one, and drop the links no memory or note
    makes any more (models.EntityLink), MERGE_BATCH links per transaction; returns how many
    links were merged (none while another process merges). Reads sum a link's rows, so they never
    depend on this having run."""
    merged = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [MERGE_LOCK])
            if not cursor.fetchone()[0]:
                return merged
            cursor.execute(_MERGE_LINKS_SQL, {"limit": MERGE_BATCH})
            changed = cursor.fetchone()[0]
        merged += changed
        if changed < MERGE_BATCH:
            return merged


def entities_prune() -> int:
    """Delete the entities no memory and no note mentions and none has linked for PRUNE_AFTER;
    returns how many."""
    unmentioned = Entity.objects.filter(linked_at__lt=timezone.now() - PRUNE_AFTER).exclude(
        Exists(EntityMention.objects.filter(entity=OuterRef("pk")))
    )
    deleted, _ = unmentioned.exclude(Exists(NoteMention.objects.filter(entity=OuterRef("pk")))).delete()
    return deleted


def graph_rebuild(*, space_ids: list[int] | None = None, progress: Callable[[int, int], None] | None = None) -> int:
    """Relink every memory and note (of these spaces, or all), REBUILD_BATCH memories or
    REBUILD_NOTE_BATCH notes per transaction, in id order; `progress(done, total)` after each
    batch. Returns how many memories and notes were relinked."""
    memories, notes = Memory.objects.order_by("pk"), Note.objects.order_by("pk")
    if space_ids is not None:
        memories, notes = memories.filter(space_id__in=space_ids), notes.filter(space_id__in=space_ids)
    total, done = memories.count() + notes.count(), 0
    for rows, link, size in ((memories, entities_link, REBUILD_BATCH), (notes, notes_link, REBUILD_NOTE_BATCH)):
        after = 0
        while batch := list(rows.filter(pk__gt=after).values_list("pk", flat=True)[:size]):
            link(batch)
            done, after = done + len(batch), batch[-1]
            if progress:
                progress(done, total)
    return done
