"""Near-duplicates: memories that say the same as an older one in other words, found by meaning
once they are embedded, and what their space's writers do with them (docs/api.md, "Keeping the memory clean").

After indexing, each current memory's first chunk is compared with the other current memories'
first chunks of its space (shortlisted by signature, like the vector signal); the most similar older
one that reaches NEAR_DUPLICATE_MIN_SIMILARITY, shares at least NEAR_DUPLICATE_MIN_WORD_OVERLAP of
the shorter one's search terms and has the same numbers (a restatement keeps its names, numbers
and nouns; two remarks on one subject, or a fact and its correction to another value, do not)
becomes its original (`duplicate_of`; that one's original when it is a duplicate itself, so a
group has one original; no link is made that others would lead back from to the memory, which
imported links naming newer memories could). Search shows a group once. A writer merges a
duplicate into its original (it is hidden behind it, as a superseded memory is; undone by making
it current again; refused when the duplicate already supersedes that original, directly or
through others, since each would hide the other) or keeps the two apart (the pair is never linked
again).
"""

import logging
import uuid

from django.db import connection, transaction
from psycopg import sql

from accounts.reach import Actor
from gnosem.errors import ValidationError
from memories.hygiene.links import links_lock, loop_closers
from memories.indexing.vectors import serving_model_name
from memories.models import KeptApart, Memory, VectorIndex
from memories.selectors import memory_get_to_change

logger = logging.getLogger(__name__)

# The similarity of two memories' first chunks from which they are near-duplicates: fitted by
# bench/hygiene.py on restatements against corrections and unrelated memories (docs/benchmarks.md,
# "Memory hygiene").
NEAR_DUPLICATE_MIN_SIMILARITY = 0.85
# The share of the shorter memory's distinct search terms the other must hold too (same benchmark,
# and the links it made between LoCoMo's conversation turns).
NEAR_DUPLICATE_MIN_WORD_OVERLAP = 0.5
# Chunks shortlisted per memory before cosine: first chunks, by signature, in a space without an
# HNSW index; any chunks (in-context readings among them), from the index, in a space with one.
SHORTLIST = 30
# Candidates a space's HNSW index keeps for that shortlist, far fewer than a search needs
# (docs/benchmarks.md, "Scale": the near-duplicate check through the index).
INDEXED_EF_SEARCH = 100

# The fresh memory's nearest chunks of its space: the first chunks (only a first chunk can be an
# original) by signature, read from their own index (models.Chunk), or, for a space with an HNSW
# index (memories.indexing.vector_indexes), from that index, which its predicate (the space's id as
# a constant) and its expression let the planner read.
_SIGNATURE_SHORTLIST_SQL = sql.SQL("""
            SELECT s.id FROM memories_chunk s
            WHERE s.space_id = f.space_id AND s.model = %(model)s AND s.position = 0 AND s.memory_id <> f.id
            ORDER BY s.signature <~> f.signature
            LIMIT %(shortlist)s""")
_INDEXED_SHORTLIST_SQL = sql.SQL("""
            SELECT s.id FROM memories_chunk s
            WHERE s.space_id = %(space)s AND s.model = %(model)s AND s.memory_id <> f.id
            ORDER BY s.embedding::halfvec({dimensions}) <=> f.embedding::halfvec({dimensions})
            LIMIT %(shortlist)s""")
_NEAREST_OLDER_SQL = sql.SQL("""
WITH fresh AS (
    SELECT m.id, m.space_id, m.created_at, m.search_vector, c.embedding, c.signature
    FROM memories_memory m
    JOIN memories_chunk c ON c.memory_id = m.id AND c.position = 0 AND c.model = %(model)s
    WHERE m.id = ANY(%(ids)s) AND m.superseded_by_id IS NULL
)
SELECT f.id, coalesce(best.duplicate_of_id, best.id)
FROM fresh f
CROSS JOIN LATERAL (
    SELECT o.id, o.duplicate_of_id, 1 - (c.embedding <=> f.embedding) AS similarity
    FROM memories_chunk c
    JOIN memories_memory o ON o.id = c.memory_id
    WHERE c.id = ANY(ARRAY({shortlist}))
      AND c.position = 0
      AND o.superseded_by_id IS NULL
      AND (o.created_at, o.id) < (f.created_at, f.id)
      AND 1 - (c.embedding <=> f.embedding) >= %(threshold)s
      AND (
          SELECT count(*) FROM unnest(tsvector_to_array(o.search_vector)) AS lexeme
          WHERE lexeme = ANY(tsvector_to_array(f.search_vector))
      ) >= %(overlap)s * least(length(o.search_vector), length(f.search_vector))
      AND ARRAY(SELECT n FROM unnest(tsvector_to_array(o.search_vector)) AS n WHERE n LIKE '#%%' ORDER BY n)
        = ARRAY(SELECT n FROM unnest(tsvector_to_array(f.search_vector)) AS n WHERE n LIKE '#%%' ORDER BY n)
      AND NOT EXISTS (
          SELECT 1 FROM memories_kept_apart k
          WHERE k.first_id = least(f.id, o.id) AND k.second_id = greatest(f.id, o.id)
      )
    ORDER BY similarity DESC
    LIMIT 1
) best
""")


def near_duplicates_link(memory_ids: list[int]) -> int:
    """Link each of these (just embedded) memories to the older memory it restates, if any;
    a link from an earlier text is dropped first. Returns how many were linked."""
    if not memory_ids:
        return 0
    model = serving_model_name()
    spaces = dict(Memory.objects.filter(pk__in=memory_ids).values_list("pk", "space_id"))
    indexes = dict(
        VectorIndex.objects.filter(space_id__in=set(spaces.values()), model=model, ready=True).values_list(
            "space_id", "dimensions"
        )
    )
    # Memories of spaces without an index in one query; each indexed space's in one of its own.
    batches: dict[int | None, list[int]] = {}
    for memory_id, space_id in spaces.items():
        batches.setdefault(space_id if space_id in indexes else None, []).append(memory_id)
    links = []
    with transaction.atomic():
        Memory.objects.filter(pk__in=memory_ids, superseded_by__isnull=True).update(duplicate_of=None)
        with connection.cursor() as cursor:
            if indexes:
                cursor.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(INDEXED_EF_SEARCH)))
            for indexed_space_id, ids in batches.items():
                shortlist = (
                    _SIGNATURE_SHORTLIST_SQL
                    if indexed_space_id is None
                    else _INDEXED_SHORTLIST_SQL.format(dimensions=sql.Literal(indexes[indexed_space_id]))
                )
                cursor.execute(
                    _NEAREST_OLDER_SQL.format(shortlist=shortlist),
                    {
                        "ids": ids,
                        "space": indexed_space_id,
                        "model": model,
                        "shortlist": SHORTLIST,
                        "threshold": NEAR_DUPLICATE_MIN_SIMILARITY,
                        "overlap": NEAR_DUPLICATE_MIN_WORD_OVERLAP,
                    },
                )
                links += cursor.fetchall()
        linked = 0
        for memory_id, original_id in links:
            # The links made here name older memories and cannot loop, but an imported one may name
            # a newer memory, and following it could lead back here: then no link is made.
            if not loop_closers("duplicate_of", original_id, [memory_id]):
                Memory.objects.filter(pk=memory_id).update(duplicate_of=original_id)
                linked += 1
    return linked


def _linked_duplicate(memory: Memory) -> tuple[Memory, int]:
    """The memory, locked, and the id of the memory it is linked to as a near-duplicate; refused
    when it is linked to none."""
    public_id = memory.public_id
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.duplicate_of_id is None:
        raise ValidationError("id", f"memory {public_id} is not linked as a near-duplicate of another memory.")
    return memory, memory.duplicate_of_id


@transaction.atomic
def memory_merge(*, owner: Actor, public_id: uuid.UUID) -> Memory:
    """Merge a near-duplicate into its original: it leaves search, lists, counts and session_start
    (superseded by the original), stays stored, and comes back with memory_reinstate. Refused when
    the original is superseded by it, directly or through others (a loop of corrections)."""
    memory = memory_get_to_change(owner=owner, public_id=public_id)
    links_lock(memory.space_id)
    memory, original_id = _linked_duplicate(memory)
    if loop_closers("superseded_by", original_id, [memory.pk]):
        original = Memory.objects.get(pk=original_id)
        raise ValidationError(
            "id",
            f"memory {public_id} already supersedes {original.public_id}, the memory it restates (directly or "
            "through others), so that one is hidden behind it: merging would hide each behind the other. Nothing "
            f"was changed. To keep {original.public_id} instead, make it current again (reinstate) and merge then; "
            "or keep the two apart.",
        )
    Memory.objects.filter(pk=memory.pk).update(superseded_by=original_id)
    memory.refresh_from_db()
    return memory


@transaction.atomic
def memory_keep_apart(*, owner: Actor, public_id: uuid.UUID) -> Memory:
    """A writer judged the memory different from the one it was linked to: the link goes (a merge
    with it is undone) and the pair is never linked again."""
    memory, original_id = _linked_duplicate(memory_get_to_change(owner=owner, public_id=public_id))
    first, second = sorted((memory.pk, original_id))
    KeptApart.objects.get_or_create(first_id=first, second_id=second)
    merged = memory.superseded_by_id == original_id
    Memory.objects.filter(pk=memory.pk).update(duplicate_of=None, **({"superseded_by": None} if merged else {}))
    memory.refresh_from_db()
    return memory
