"""semantic_search: the notes (and memories) of the spaces a caller reaches best matching a query. A
note is searched passage by passage, by meaning (cosine of the passage's vector, exact over those
spaces' passages) and by words (BM25 over those spaces' passages). A passage scores its cosine plus KEYWORD_WEIGHT
times its BM25 over the best passage's (the cosine of a passage only the words found is computed
too), and each note answers once, with its best passage. Memories come from search_hybrid; with
both kinds, results are merged by score (each kind's best scores 1.0)."""

from dataclasses import dataclass, field

import numpy as np
from django.db import connection
from django.db.backends.utils import CursorWrapper
from pgvector import Vector

from accounts.reach import Actor, Reach, reach_of
from gnosem.errors import ValidationError
from memories.encryption.blind_index import BLIND_TERMS_SQL, BlindQuery, blind_query
from memories.encryption.derived import tag_variants
from memories.indexing.vectors import serving_model_name
from memories.models import Note, NoteChunk
from memories.search.exclusion import Excluded, judge_note
from memories.search.negation import read_query
from memories.search.pipeline import EXCLUSION_POOL, SearchHit, query_embedding, search_hybrid
from memories.search.signals import BM25_B, BM25_K1
from memories.selectors import MemoryFilters
from memories.validation import clean_exclude, clean_tags, clean_top_k

KINDS = ("notes", "memories")
# Passages each signal contributes per requested note: a note may hold several of the best.
PASSAGES_PER_RESULT = 5
# What the best word match adds to a passage's cosine (docs/benchmarks.md, "Notes").
KEYWORD_WEIGHT = 0.6
# A passage holding less than this share of the query's words (by IDF) counts proportionally less.
FULL_COVERAGE = 0.8

_VECTOR_SQL = """
    SELECT c.id, c.note_id, 1 - (c.embedding <=> %(vector)s::halfvec) AS similarity
    FROM memories_note_chunk c {join}
    WHERE c.space_id = ANY(%(spaces)s) AND c.model = %(model)s {filters}
    ORDER BY c.embedding <=> %(vector)s::halfvec, c.id
    LIMIT %(limit)s
"""
# BM25 over the searched spaces' passages (of the serving model), the document frequencies counted from the
# full-text index for the query's few terms. A passage's index holds its lexemes as digests under its
# space's key (memories.encryption.blind_index): each term is looked up by its variants, one per
# space and key version, and a passage matches a term through the variants of its own space.
_KEYWORD_SQL = """
    WITH variants AS MATERIALIZED (
        SELECT * FROM {blind_terms}
    ),
    term_queries AS MATERIALIZED (
        SELECT term, space_id, string_agg(quote_literal(lexeme), ' | ')::tsquery AS words
        FROM variants GROUP BY term, space_id
    ),
    space_queries AS MATERIALIZED (
        SELECT space_id, string_agg(quote_literal(lexeme), ' | ')::tsquery AS words FROM variants GROUP BY space_id
    ),
    corpus AS MATERIALIZED (
        SELECT count(*)::float8 AS n, greatest(avg(length(c.search_vector)), 1) AS avgdl
        FROM memories_note_chunk c WHERE c.space_id = ANY(%(spaces)s) AND c.model = %(model)s
    ),
    statistics AS MATERIALIZED (
        -- A term's document frequency, summed over the spaces (a passage lies in one).
        SELECT q.term, ln(1 + (corpus.n - sum(d.df) + 0.5) / (sum(d.df) + 0.5)) AS idf
        FROM term_queries q CROSS JOIN corpus
        CROSS JOIN LATERAL (
            SELECT count(*)::float8 AS df FROM memories_note_chunk c
            WHERE c.space_id = q.space_id AND c.model = %(model)s AND c.search_vector @@ q.words
        ) d
        GROUP BY q.term, corpus.n
    ),
    matching AS (
        SELECT c.id, c.note_id, c.space_id, c.search_vector, {similarity} AS similarity
        FROM space_queries q
        JOIN memories_note_chunk c ON c.space_id = q.space_id AND c.search_vector @@ q.words {join}
        WHERE c.model = %(model)s {filters}
    )
    SELECT m.id, m.note_id, sum(
        s.idf * (cardinality(u.positions) * ({k1} + 1))
        / (cardinality(u.positions) + {k1} * (1 - {b} + {b} * length(m.search_vector) / corpus.avgdl))
    ) AS rank, m.similarity, sum(s.idf) / (SELECT sum(idf) FROM statistics) AS coverage
    FROM matching m
    CROSS JOIN LATERAL unnest(m.search_vector) AS u (lexeme, positions, weights)
    JOIN variants v ON v.space_id = m.space_id AND v.lexeme = u.lexeme
    JOIN statistics s ON s.term = v.term
    CROSS JOIN corpus
    GROUP BY m.id, m.note_id, m.similarity
    ORDER BY rank DESC, m.id
    LIMIT %(limit)s
"""
_TAGS_JOIN = "JOIN memories_note n ON n.id = c.note_id"
# One per tag, matched by its digests under the searched spaces' keys.
_TAG_FILTER = "AND n.tag_digests && %(tag_{number})s::varchar[]"


@dataclass(frozen=True)
class NoteHit:
    note: Note
    score: float
    # The best passage: its span in the note and the headings it sits under.
    start: int
    end: int
    heading: str
    # Per signal that found the passage: {"rank", "score"}.
    signals: dict[str, dict] = field(default_factory=dict)

    @property
    def passage(self) -> str:
        return self.note.content[self.start : self.end]


def clean_kinds(kinds: object) -> tuple[str, ...]:
    if kinds is None:
        return KINDS
    if not isinstance(kinds, list) or not kinds or any(kind not in KINDS for kind in kinds):
        raise ValidationError("kinds", f'a non-empty list of "notes" and/or "memories"; default both: {list(KINDS)}.')
    return tuple(dict.fromkeys(kinds))


def note_search(
    *,
    owner: Actor,
    query: object,
    top_k: object = None,
    tags: object = None,
    exclude: object = None,
    signals: tuple[str, ...] = ("vector", "keyword"),
) -> list[NoteHit]:
    """The indexed notes of the spaces the caller reaches best matching `query`, best first, each with its best passage.
    Notes tagged with or titled after a thing `exclude` or the query's negations name are left
    out (memories.search.exclusion). `signals` leaves one out (the benchmark measures each alone)."""
    reading = read_query(query, clean_exclude(exclude))
    query, top_k, tags = reading.searched, clean_top_k(top_k), clean_tags(tags)
    reach = reach_of(owner)
    params: dict[str, int | str | list[str] | list[int]] = {
        "spaces": reach.space_ids,
        "limit": top_k * PASSAGES_PER_RESULT * (EXCLUSION_POOL if reading.excluded else 1),
    }
    for number, tag in enumerate(tags):
        params[f"tag_{number}"] = tag_variants(tag, reach.space_ids)
    join = _TAGS_JOIN if tags else ""
    filters = " ".join(_TAG_FILTER.format(number=number) for number in range(len(tags)))
    model_name, vector = query_embedding(query)
    model_name = model_name or serving_model_name()
    use_vector = "vector" in signals and vector is not None
    params["model"] = model_name
    if use_vector:
        params["vector"] = Vector(np.asarray(vector)).to_text()
    rankings: dict[str, list[tuple]] = {}
    with connection.cursor() as cursor:
        if use_vector:
            cursor.execute(_VECTOR_SQL.format(join=join, filters=filters), params)
            rankings["vector"] = cursor.fetchall()
        if "keyword" in signals:
            terms = blind_query(query, reach.space_ids)
            rankings["keyword"] = _keyword_passages(cursor, terms, params, join, filters, use_vector=use_vector)
    return _fused(reach, rankings, top_k, [Excluded.of(thing) for thing in reading.excluded])


def _keyword_passages(
    cursor: CursorWrapper, terms: BlindQuery, params: dict, join: str, filters: str, *, use_vector: bool
) -> list[tuple]:
    """(passage, note, BM25, cosine or None, coverage) of the passages best matching the query's
    terms, best first; none for a query without terms (stop words only)."""
    if not terms:
        return []
    similarity = "1 - (c.embedding <=> %(vector)s::halfvec)" if use_vector else "NULL::float8"
    statement = _KEYWORD_SQL.format(
        blind_terms=BLIND_TERMS_SQL, join=join, filters=filters, similarity=similarity, k1=BM25_K1, b=BM25_B
    )
    cursor.execute(statement, params | terms.params())
    return cursor.fetchall()


@dataclass
class _Passage:
    """A passage either signal found: its cosine, its BM25 over the best passage's (discounted
    below FULL_COVERAGE of the query's words), and each signal's rank and raw score."""

    chunk_id: int
    note_id: int
    similarity: float | None
    words: float = 0.0
    signals: dict[str, dict] = field(default_factory=dict)

    def score(self, with_vector: bool) -> float:
        if not with_vector:
            return self.words
        return (self.similarity or 0.0) + KEYWORD_WEIGHT * self.words


def _fused(reach: Reach, rankings: dict[str, list[tuple]], top_k: int, excluded: list[Excluded]) -> list[NoteHit]:
    """The passages' scores (one signal alone: its own), each note as its best passage (the notes
    about a left-out thing left out), the scores over the best note's."""
    passages: dict[int, _Passage] = {}
    for rank, (chunk_id, note_id, similarity) in enumerate(rankings.get("vector", []), start=1):
        passages[chunk_id] = _Passage(chunk_id, note_id, float(similarity))
        passages[chunk_id].signals["vector"] = {"rank": rank, "score": round(float(similarity), 6)}
    keyword = rankings.get("keyword", [])
    best_words = max((float(row[2]) for row in keyword), default=0.0) or 1.0
    for rank, (chunk_id, note_id, words, similarity, coverage) in enumerate(keyword, start=1):
        passage = passages.setdefault(
            chunk_id, _Passage(chunk_id, note_id, None if similarity is None else float(similarity))
        )
        passage.words = float(words) / best_words * min(float(coverage) / FULL_COVERAGE, 1.0)
        passage.signals["keyword"] = {"rank": rank, "score": round(float(words), 6)}
    with_vector = "vector" in rankings
    scores = {chunk_id: passage.score(with_vector) for chunk_id, passage in passages.items()}
    best: dict[int, _Passage] = {}
    for chunk_id in sorted(passages, key=lambda chunk_id: (-scores[chunk_id], chunk_id)):
        best.setdefault(passages[chunk_id].note_id, passages[chunk_id])
    chosen = list(best.values())
    if excluded:
        judged = Note.objects.filter(space_id__in=reach.space_ids).only("id", "space_id", "public_id", "title", "tags")
        about = judged.in_bulk([passage.note_id for passage in chosen])
        chosen = [
            passage
            for passage in chosen
            if passage.note_id in about and not judge_note(about[passage.note_id], excluded).left_out
        ]
    chosen = chosen[:top_k]
    notes = Note.objects.filter(space_id__in=reach.space_ids).in_bulk([passage.note_id for passage in chosen])
    chunks = NoteChunk.objects.filter(id__in=[passage.chunk_id for passage in chosen])
    spans = chunks.defer("text", "embedding", "search_vector").in_bulk()
    top = max(scores[chosen[0].chunk_id], 0.0) if chosen else 0.0
    return [
        NoteHit(
            note=notes[passage.note_id],
            score=round(max(scores[passage.chunk_id], 0.0) / top, 6) if top else 0.0,
            start=spans[passage.chunk_id].start,
            end=spans[passage.chunk_id].end,
            heading=spans[passage.chunk_id].heading,
            signals=passage.signals,
        )
        for passage in chosen
        if passage.note_id in notes and passage.chunk_id in spans  # deleted meanwhile
    ]


def semantic_search(
    *,
    owner: Actor,
    query: object,
    kinds: object = None,
    top_k: object = None,
    tags: object = None,
    exclude: object = None,
) -> list[NoteHit | SearchHit]:
    """Notes and/or memories best matching `query`, best first by score (each kind's best scores
    1.0), at most `top_k` in all, those about what `exclude` or the query's negations name left out."""
    kinds, top_k = clean_kinds(kinds), clean_top_k(top_k)
    owner = reach_of(owner)
    results: list[NoteHit | SearchHit] = []
    if "notes" in kinds:
        results += note_search(owner=owner, query=query, top_k=top_k, tags=tags, exclude=exclude)
    if "memories" in kinds:
        filters = MemoryFilters(tags=tuple(clean_tags(tags)))
        results += search_hybrid(owner=owner, query=query, top_k=top_k, filters=filters, exclude=exclude)
    results.sort(key=lambda hit: -hit.score)
    return results[:top_k]
