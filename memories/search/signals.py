"""The retrieval signals, each filtered to the spaces searched (and the request's filters) before
ranking. Searching several spaces ranks as one search over their union would: the keyword
statistics are summed over them, and each space's nearest chunks (from its own HNSW index, where
it has one) compete for the vector signal's places.

Every signal returns memory ids best first with its own score; fusion combines them.
"""

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection
from pgvector import Vector
from psycopg import sql

from memories.encryption.blind_index import BLIND_TERMS_SQL, blind_query
from memories.encryption.derived import client_variants, tag_variants
from memories.indexing.sequences import CONTEXT_WINDOW, neighbours_sql, predecessor_sql
from memories.models import Entity
from memories.selectors import MemoryFilters

# BM25 parameters (Robertson & Zaragoza's usual values).
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True)
class Ranked:
    memory_id: int
    score: float
    # When the memory was written (for recency and time windows; saves the pipeline a query).
    created_at: datetime
    # Keyword: the share of the query's terms (weighted by IDF) the memory contains; 1.0 otherwise.
    coverage: float = 1.0
    # Vector: the score is a successor's in-context reading, already counted for that successor.
    lent: bool = False
    # The memory's length in search terms, and whether it ends with a question mark (priors of fusion).
    search_length: int = 0
    is_question: bool = False
    # Its group of near-duplicates (memories.hygiene.near_duplicates): the original it restates, or itself
    # when others restate it; None outside any group.
    group: int | None = None
    # The previous and the next memory of its sequence (memories.indexing.sequences), None where there is none.
    neighbours: tuple[int | None, int | None] = (None, None)
    # Graph: the names of the entities it was reached through, strongest first.
    via: tuple[str, ...] = ()


# The vector query, in parts. A short memory's in-context reading (its predecessor's tail + itself,
# memories.indexing.sequences; a chunk at position > 0 from offset 0) matches what either memory says, so
# when it is a memory's best match it counts for the predecessor too, which goes first: without
# that, a fact an assistant wrote right after another one outranks it on the other one's topic.

# The searched spaces' chunks (`c`), passing the filters: `spaces` is a condition on `c.space_id`.
_SPACE_CHUNKS_SQL = sql.SQL("""FROM memories_chunk c {join}
    WHERE {spaces} AND c.model = %(model)s {filters}""")
# Those whose signatures (memories.models.VectorSignature) are nearest the query's, read from the
# covering index alone: Hamming distance over a few hundred bytes costs a fraction of a cosine.
_SHORTLISTED_CHUNKS_SQL = sql.SQL("""FROM memories_chunk c
    WHERE c.id = ANY(ARRAY(
        SELECT c.id {space_chunks}
        ORDER BY c.signature <~> gnosem_vector_signature(%(vector)s::halfvec)
        LIMIT %(shortlist)s))""")
# The nearest of those chunks by cosine; the distance is computed once per chunk and sorted by name
# (ordering by the expression again would compute it a second time).
_NEAREST_COLUMNS_SQL = sql.SQL("""c.memory_id, c.embedding <=> %(vector)s::halfvec AS distance,
    (c.position > 0 AND c.start = 0) AS borrowed""")
_NEAREST_SQL = sql.SQL("""
    SELECT {columns}
    {source}
    ORDER BY distance
    LIMIT %(chunks)s""")
# One space's nearest chunks as its HNSW index finds them (memories.indexing.vector_indexes; the
# expression and the predicate, the space's id as a constant, are the index's), when it has a ready
# one, else as `scanned` finds them.
_INDEXED_NEAREST_SQL = sql.SQL("""
    SELECT * FROM (
        SELECT {columns}
        FROM memories_chunk c
        WHERE c.space_id = {space} AND c.model = %(model)s
        ORDER BY c.embedding::halfvec({dimensions}) <=> %(vector)s::halfvec({dimensions})
        LIMIT %(chunks)s
    ) indexed WHERE {ready}
    UNION ALL
    SELECT * FROM ({scanned}
    ) scanned WHERE NOT {ready}""")
_INDEX_READY_SQL = sql.SQL("""EXISTS (
        SELECT FROM memories_vectorindex WHERE space_id = {space} AND model = %(model)s AND ready)""")
# Several spaces: the nearest of each space's nearest.
_SPACES_NEAREST_SQL = sql.SQL("""
    SELECT * FROM ({parts}
    ) per_space
    ORDER BY distance
    LIMIT %(chunks)s""")
# Joined only when filtering on the memories: hashing every memory costs more than the scan.
_FILTERED_MEMORY_JOIN_SQL = sql.SQL("JOIN memories_memory m ON m.id = c.memory_id AND m.space_id = ANY(%(spaces)s)")
_IN_SPACES_SQL = sql.SQL("c.space_id = ANY(%(spaces)s)")
# A memory scores as its best chunk; its best own chunk (2, beyond any cosine distance, when there
# is none) tells whether that is its in-context reading, and its place whether it makes the limit.
_BEST_SQL = sql.SQL("""
    SELECT memory_id, min(distance) AS distance, coalesce(min(distance) FILTER (WHERE NOT borrowed), 2) AS own_distance,
           row_number() OVER (ORDER BY min(distance)) AS place
    FROM nearest GROUP BY memory_id""")
# The predecessor of `s`, the memory whose in-context reading matched.
_PREDECESSOR_OF_S_SQL = predecessor_sql("s", "id")
# The predecessor of each memory best matched by its in-context reading borrows that distance,
# when it passes the filters too.
_LENT_SQL = sql.SQL("""
    SELECT m.id AS memory_id, b.distance
    FROM best b
    JOIN memories_memory s ON s.id = b.memory_id
    CROSS JOIN LATERAL ({predecessor}) predecessor
    JOIN memories_memory m ON m.id = predecessor.id
    WHERE b.distance < b.own_distance AND b.place <= %(limit)s {filters}""")
# Each memory's best reading, its own or a lent one; an own in-context reading yields to the
# predecessor it lends to.
_SCORED_SQL = sql.SQL("""
    SELECT memory_id, min(distance) AS distance, (array_agg(lent ORDER BY distance))[1] AS lent
    FROM (
        SELECT memory_id, distance + CASE WHEN distance < own_distance THEN %(yield)s ELSE 0 END AS distance,
               false AS lent
        FROM best
        UNION ALL
        SELECT memory_id, distance, true FROM lent
    ) readings
    GROUP BY memory_id""")
# Best first, ties to the higher id; `created_at` saves the pipeline a query.
_VECTOR_SQL = sql.SQL("""
WITH nearest AS ({nearest}
),
best AS ({best}
),
lent AS ({lent}
),
scored AS ({scored}
)
SELECT scored.memory_id, 1 - scored.distance AS similarity, found.created_at, scored.lent,
       found.search_length, found.is_question, {group} AS near_duplicate_group, {neighbours}
FROM scored
JOIN memories_memory found ON found.id = scored.memory_id {current}
ORDER BY similarity DESC, scored.memory_id DESC
LIMIT %(limit)s
""")
# The memory's group of near-duplicates (see `Ranked.group`).
_GROUP_SQL = sql.SQL("""coalesce({table}.duplicate_of_id, CASE WHEN EXISTS (
    SELECT 1 FROM memories_memory d WHERE d.duplicate_of_id = {table}.id AND d.superseded_by_id IS NULL
) THEN {table}.id END)""")
# Nearest chunks fetched per wanted memory: a long memory may hold several of the nearest chunks.
CHUNKS_PER_MEMORY = 3
# Chunks shortlisted by signature per wanted memory, to be compared by cosine: at 10 the vector
# signal returns 99.5 % of the exact scan's memories at 10,000 memories (docs/benchmarks.md,
# "Vector first pass").
SHORTLIST_PER_MEMORY = 10
# How far below its predecessor a memory ranks when both score by the same in-context reading.
BORROWED_YIELD = 0.001


def vector_ranking(
    *,
    space_ids: list[int],
    query_vector: np.ndarray,
    model: str,
    filters: MemoryFilters,
    limit: int,
    exact: bool = False,
) -> list[Ranked]:
    """Cosine similarity of the query to each chunk of these spaces; a memory scores as its best
    chunk, or as its successor's in-context reading when that is better (see `_VECTOR_SQL`).

    Unless the search is filtered, each space's nearest chunks come from its HNSW index when it
    has one (a large space, memories.indexing.vector_indexes), and otherwise from the cosine
    computed for the chunks shortlisted by signature (`_SHORTLISTED_CHUNKS_SQL`); the nearest of
    those win. A filtered search shortlists over all the spaces at once (an index's nearest would
    hold too few of its memories). With `exact` the cosine is computed for every chunk of the
    spaces: the reference both are measured against.
    """
    if not space_ids:
        return []
    filters_sql, filter_params = _filters_sql(filters, space_ids)
    if exact or filter_params:
        # Superseded memories are dropped from the nearest memories, not before: a join on every
        # chunk's memory would cost more than the scan (so a superseded memory may take a place).
        space_chunks = _SPACE_CHUNKS_SQL.format(
            spaces=_IN_SPACES_SQL, join=_FILTERED_MEMORY_JOIN_SQL if filter_params else sql.SQL(""), filters=filters_sql
        )
        nearest = _NEAREST_SQL.format(
            columns=_NEAREST_COLUMNS_SQL,
            source=space_chunks if exact else _SHORTLISTED_CHUNKS_SQL.format(space_chunks=space_chunks),
        )
    else:
        parts = [_space_nearest_sql(space_id, len(query_vector)) for space_id in space_ids]
        nearest = (
            parts[0]
            if len(parts) == 1
            else _SPACES_NEAREST_SQL.format(
                parts=sql.SQL("\n    UNION ALL").join(sql.SQL("(") + part + sql.SQL(")") for part in parts)
            )
        )
    query = _VECTOR_SQL.format(
        nearest=nearest,
        best=_BEST_SQL,
        lent=_LENT_SQL.format(predecessor=_PREDECESSOR_OF_S_SQL, filters=filters_sql + _current_sql(filters, "m")),
        scored=_SCORED_SQL,
        group=_GROUP_SQL.format(table=sql.Identifier("found")),
        neighbours=neighbours_sql("found"),
        current=_current_sql(filters, "found"),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            query,
            {
                "vector": Vector(query_vector).to_text(),
                "spaces": space_ids,
                "model": model,
                "shortlist": limit * SHORTLIST_PER_MEMORY,
                "chunks": limit * CHUNKS_PER_MEMORY,
                "limit": limit,
                "window": CONTEXT_WINDOW,  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
                "yield": BORROWED_YIELD,
                **filter_params,
            },
        )
        return [
            Ranked(
                memory_id,
                float(score),
                created_at,
                lent=lent,
                search_length=length,
                is_question=question,
                group=group,
                neighbours=tuple(neighbours),
            )
            for memory_id, score, created_at, lent, length, question, group, *neighbours in cursor.fetchall()
        ]


def _space_nearest_sql(space_id: int, dimensions: int) -> sql.Composed:
    """One space's nearest chunks: from its HNSW index once ready, else shortlisted by signature."""
    space = sql.Literal(space_id)
    space_chunks = _SPACE_CHUNKS_SQL.format(
        spaces=sql.SQL("c.space_id = {}").format(space), join=sql.SQL(""), filters=sql.SQL("")
    )
    scanned = _NEAREST_SQL.format(
        columns=_NEAREST_COLUMNS_SQL, source=_SHORTLISTED_CHUNKS_SQL.format(space_chunks=space_chunks)
    )
    return _INDEXED_NEAREST_SQL.format(
        columns=_NEAREST_COLUMNS_SQL,
        space=space,
        dimensions=sql.Literal(dimensions),
        ready=_INDEX_READY_SQL.format(space=space),
        scanned=scanned,
    )


def _current_sql(filters: MemoryFilters, table: str) -> sql.Composable:
    """` AND <table> is not superseded`, unless the filters include superseded memories."""
    if filters.include_superseded:
        return sql.SQL("")
    return sql.SQL(" AND {table}.superseded_by_id IS NULL").format(table=sql.Identifier(table))


def _filters_sql(
    filters: MemoryFilters, space_ids: list[int]
) -> tuple[sql.Composed, dict[str, list[str] | str | datetime]]:
    """The filters as SQL on `m` (memories_memory) of these spaces, each clause after an AND,
    with named parameters (one per clause; a tag or a client is matched by its digests under the
    spaces' keys)."""
    clauses: list[sql.Composable] = []
    params: dict[str, list[str] | str | datetime] = {}
    for number, tag in enumerate(filters.tags):
        clauses.append(sql.SQL(" AND m.tag_digests && {}::varchar[]").format(sql.Placeholder(f"tag_{number}")))
        params[f"tag_{number}"] = tag_variants(tag, space_ids)
    if filters.written_by:
        clauses.append(sql.SQL(" AND m.written_by_digest = ANY(%(written_by)s::varchar[])"))
        params["written_by"] = client_variants(filters.written_by, space_ids)
    if filters.created_after:
        clauses.append(sql.SQL(" AND m.created_at >= %(created_after)s"))
        params["created_after"] = filters.created_after
    if filters.created_before:
        clauses.append(sql.SQL(" AND m.created_at < %(created_before)s"))
        params["created_before"] = filters.created_before
    return sql.Composed(clauses), params


_BM25_SQL = sql.SQL("""
WITH variants AS MATERIALIZED (
    SELECT * FROM {blind_terms}
),
corpus AS MATERIALIZED (
    SELECT sum(documents)::float8 AS n, greatest(sum(total_length)::float8 / greatest(sum(documents), 1), 1) AS avgdl
    FROM memories_space_corpus WHERE space_id = ANY(%(spaces)s)
    HAVING count(*) > 0
),
statistics AS MATERIALIZED (
    -- A term's document frequency, summed over the spaces (and their keys) it is indexed under.
    SELECT v.term, ln(1 + (corpus.n - coalesce(sum(s.df), 0) + 0.5) / (coalesce(sum(s.df), 0) + 0.5)) AS idf
    FROM variants v CROSS JOIN corpus
    LEFT JOIN memories_space_terms s ON s.space_id = v.space_id AND s.lexeme = v.lexeme
    GROUP BY v.term, corpus.n
),
ranked AS (
    -- Summed over the query's postings, read from their key alone (memories.models.TermPosting).
    SELECT p.memory_id AS id, sum(
        f.idf * (p.tf * ({k1} + 1)) / (p.tf + {k1} * (1 - {b} + {b} * p.length / corpus.avgdl))
    ) AS score,
        sum(f.idf) / (SELECT sum(idf) FROM statistics) AS coverage
    FROM statistics f
    JOIN variants v ON v.term = f.term
    JOIN memories_term_posting p ON p.space_id = v.space_id AND p.lexeme = v.lexeme {current}
    {filtered}
    CROSS JOIN corpus
    GROUP BY p.memory_id
    ORDER BY score DESC, p.memory_id DESC
    LIMIT %(limit)s
)
-- Only the ranked few have their memory read (a long one's content is stored out of line).
SELECT r.id, m.created_at, m.search_length, m.is_question, r.score, r.coverage,
       {group} AS near_duplicate_group, {neighbours}
FROM ranked r JOIN memories_memory m ON m.id = r.id
ORDER BY r.score DESC, r.id DESC
""")
# Joined only when filtering on the memories: most searches read the postings alone.
_FILTERED_POSTINGS_JOIN_SQL = sql.SQL("JOIN memories_memory m ON m.id = p.memory_id AND m.space_id = ANY(%(spaces)s)")


def keyword_ranking(*, space_ids: list[int], query: str, filters: MemoryFilters, limit: int) -> list[Ranked]:
    """BM25 over these spaces' memories, summed in PostgreSQL over the postings of the query's terms.

    Document frequencies and average length come from these spaces' memories only (the
    trigger-maintained memories_space_terms / memories_space_corpus tables, summed over the
    spaces), so what other spaces hold never shifts the scores. The query's terms are looked up
    by their digests under each space's keys (memories.encryption.blind_index).
    """
    terms = blind_query(query, space_ids)
    if not terms:
        return []
    filters_sql, filter_params = _filters_sql(filters, space_ids)
    statement = _BM25_SQL.format(
        blind_terms=sql.SQL(BLIND_TERMS_SQL),
        current=sql.SQL("") if filters.include_superseded else sql.SQL("AND p.current"),
        filtered=_FILTERED_POSTINGS_JOIN_SQL + filters_sql if filter_params else sql.SQL(""),
        k1=sql.Literal(BM25_K1),
        b=sql.Literal(BM25_B),
        group=_GROUP_SQL.format(table=sql.Identifier("m")),
        neighbours=neighbours_sql("m"),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            statement,
            {"spaces": space_ids, "limit": limit, "window": CONTEXT_WINDOW, **terms.params(), **filter_params},  # type: ignore[dict-item]  # psycopg adapts a timedelta; the stubs omit it
        )
        return [
            Ranked(
                memory_id,
                float(score),
                created_at,
                float(coverage),
                search_length=length,
                is_question=question,
                group=group,
                neighbours=tuple(neighbours),
            )
            for memory_id, created_at, length, question, score, coverage, group, *neighbours in cursor.fetchall()
        ]


# Graph expansion: from the seeds (the best fused candidates, with their scores), through the
# entities they mention, to the other memories mentioning them. An entity counts by the seed's score,
# both mentions' weights and its rarity among the searched memories (ln N / df); one mentioned by more
# than GRAPH_MAX_SHARE of them (a speaker's name in every turn) links too much to say anything, and
# one mentioned by its seed alone links nothing. A seed reached from another seed scores too (but never
# through its own mentions).
_GRAPH_SQL = sql.SQL("""
WITH seed (memory_id, score) AS (
    SELECT * FROM unnest(%(seeds)s::bigint[], %(scores)s::float8[])
),
corpus AS MATERIALIZED (
    SELECT greatest(sum(documents), 1)::float8 AS n,
           least(%(max_df)s, greatest(%(min_df)s, sum(documents) * %(share)s)) AS max_df
    FROM memories_space_corpus WHERE space_id = ANY(%(spaces)s)
    HAVING count(*) > 0
),
linked AS MATERIALIZED (
    SELECT n.entity_id, seed.memory_id AS seed_id, seed.score * n.weight * ln(corpus.n / d.df) AS strength
    FROM seed
    JOIN memories_entity_mention n ON n.memory_id = seed.memory_id
    CROSS JOIN corpus
    CROSS JOIN LATERAL (
        SELECT count(*)::float8 AS df FROM (
            SELECT FROM memories_entity_mention d WHERE d.entity_id = n.entity_id LIMIT %(max_df)s + 1
        ) capped
    ) d
    WHERE d.df BETWEEN 2 AND corpus.max_df AND d.df < corpus.n
),
reached AS (
    SELECT n.memory_id, sum(l.strength * n.weight) AS score
    FROM linked l
    JOIN memories_entity_mention n ON n.entity_id = l.entity_id AND n.memory_id <> l.seed_id
    GROUP BY n.memory_id
)
SELECT r.memory_id, r.score, m.created_at, {group} AS near_duplicate_group,
       ARRAY(
           SELECT l.entity_id FROM linked l
           JOIN memories_entity_mention n ON n.entity_id = l.entity_id AND n.memory_id = r.memory_id
           WHERE l.seed_id <> r.memory_id
           GROUP BY l.entity_id ORDER BY max(l.strength) DESC, l.entity_id LIMIT %(via)s
       ) AS via
FROM reached r
JOIN memories_memory m ON m.id = r.memory_id AND m.space_id = ANY(%(spaces)s) {current} {filters}
ORDER BY r.score DESC, r.memory_id DESC
LIMIT %(limit)s
""")
# An entity counts in graph expansion when mentioned by at most this share of the searched memories,
# but never fewer than GRAPH_MIN_MAX_DF nor more than GRAPH_MAX_DF of them.
GRAPH_MAX_SHARE = 0.05
GRAPH_MIN_MAX_DF = 5
GRAPH_MAX_DF = 500
# Entities named per memory reached through the graph (in `explain`).
GRAPH_VIA = 3


def graph_ranking(*, space_ids: list[int], seeds: dict[int, float], filters: MemoryFilters, limit: int) -> list[Ranked]:
    """These spaces' memories sharing entities with the `seeds` ({memory id: score}), best first
    (see `_GRAPH_SQL`): the graph expansion signal (memories.graph.linking)."""
    if not seeds:
        return []
    filters_sql, filter_params = _filters_sql(filters, space_ids)
    statement = _GRAPH_SQL.format(
        group=_GROUP_SQL.format(table=sql.Identifier("m")),
        current=_current_sql(filters, "m"),
        filters=filters_sql,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            statement,
            {
                "spaces": space_ids,
                "seeds": list(seeds),
                "scores": list(seeds.values()),
                "share": GRAPH_MAX_SHARE,
                "min_df": GRAPH_MIN_MAX_DF,
                "max_df": GRAPH_MAX_DF,
                "via": GRAPH_VIA,
                "limit": limit,
                **filter_params,
            },
        )
        rows = cursor.fetchall()
    # The names, sealed in the database, opened here.
    names = Entity.objects.only("id", "space_id", "key_digest", "name").in_bulk({i for row in rows for i in row[4]})
    return [
        Ranked(memory_id, float(score), created_at, group=group, via=tuple(names[i].name for i in via if i in names))
        for memory_id, score, created_at, group, via in rows
    ]


_MEMORY_VECTORS_SQL = """
SELECT memory_id, halfvec_send(embedding) FROM memories_chunk
WHERE space_id = ANY(%(spaces)s) AND memory_id = ANY(%(ids)s) AND model = %(model)s
"""


def halfvec_from_binary(raw: bytes | memoryview) -> np.ndarray:
    """A float32 vector from pgvector's binary form of a halfvec (`halfvec_send`: 2-byte dimension,
    2 unused bytes, big-endian half-precision floats): parsing the text form, number by number in
    Python, is far slower."""
    return np.frombuffer(bytes(raw), dtype=">f2", offset=4).astype(np.float32)


def memory_vectors(*, space_ids: list[int], memory_ids: list[int], model: str) -> dict[int, np.ndarray]:
    """One unit vector per embedded memory of these spaces (the mean direction of its chunks), for MMR."""
    sums: dict[int, np.ndarray] = {}
    with connection.cursor() as cursor:
        cursor.execute(_MEMORY_VECTORS_SQL, {"spaces": space_ids, "ids": memory_ids, "model": model})
        for memory_id, raw in cursor.fetchall():
            vector = halfvec_from_binary(raw)
            sums[memory_id] = sums[memory_id] + vector if memory_id in sums else vector
    return {memory_id: total / (np.linalg.norm(total) or 1.0) for memory_id, total in sums.items()}
