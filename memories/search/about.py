"""Which memories are about a topic: the relevance test behind memory_count's `query`.

A memory is about the topic when one of its own chunks (not its in-context reading, which holds
its predecessor's words too) lies within cosine similarity ABOUT_MIN_SIMILARITY of the topic, or
when it contains every word of the topic. Both thresholds' evidence is bench/count.py's table
(docs/benchmarks.md, "Counting"). A memory not yet embedded is counted by its words only.
"""

from dataclasses import dataclass

from django.db.models import Q
from django.db.models.expressions import RawSQL
from pgvector import Vector

from memories.encryption.blind_index import blind_query
from memories.search.pipeline import query_embedding

# Fitted by bench/count.py on LoCoMo's questions (their evidence turns) and bench/recall.py's
# sets (their relevant memories): the similarity that gives the best F1 over both.
ABOUT_MIN_SIMILARITY = 0.4

_BY_MEANING_SQL = """
    SELECT c.memory_id FROM memories_chunk c
    WHERE c.space_id = ANY(%s) AND c.model = %s AND NOT (c.position > 0 AND c.start = 0)
      AND c.embedding <=> %s::halfvec <= %s
"""
# Each space's memories holding every term under one of its keys.
_BY_WORDS_SQL = """
    SELECT m.id FROM memories_memory m
    JOIN (
        SELECT v.space_id, string_agg(quote_literal(v.lexeme), ' & ')::tsquery AS every_term
        FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS v (space_id, lexeme, version)
        GROUP BY v.space_id, v.version
    ) q ON q.space_id = m.space_id
    WHERE m.search_vector @@ q.every_term
"""


@dataclass(frozen=True)
class About:
    """The condition on memories, and whether it could use meaning (the model answered)."""

    condition: Q
    by_meaning: bool


def holding_every_word(*, space_ids: list[int], topic: str) -> Q:
    """The memories of these spaces holding every word of `topic`, as a condition on memories."""
    terms = blind_query(topic, space_ids)
    return Q(id__in=RawSQL(_BY_WORDS_SQL, [terms.spaces, terms.lexemes, terms.versions]))


def about(*, space_ids: list[int], topic: str, min_similarity: float = ABOUT_MIN_SIMILARITY) -> About:
    """The memories of these spaces about `topic`, as a condition on memories."""
    by_words = holding_every_word(space_ids=space_ids, topic=topic)
    model_name, vector = query_embedding(topic)
    if vector is None:
        return About(by_words, by_meaning=False)
    by_meaning = Q(
        id__in=RawSQL(_BY_MEANING_SQL, [space_ids, model_name, Vector(vector).to_text(), 1 - min_similarity])
    )
    return About(by_meaning | by_words, by_meaning=True)
