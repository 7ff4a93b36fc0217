"""The keyword signal's blind index: full-text vectors whose lexemes are keyed digests.

PostgreSQL's full-text analysis (`gnosem_search_vector`: English stemming, stop words) turns a
text into lexemes with their positions; each lexeme is then replaced by a truncated HMAC under a
key derived for this purpose from its space's data key. The stored vector keeps every position,
so BM25's term frequencies and lengths, the postings and the statistics the database keeps from
it (memories.models.TermPosting) are those of the plain text, and a query finds the same memories
with the same scores: its lexemes go through the same digest under each searched space's keys.
The text itself passes to the database for the analysis only, as a query parameter; no row holds
it. A lexeme holding a digit keeps that one fact (`DIGIT_MARK` first): near-duplicate detection
compares the numbers two memories hold (memories.hygiene.near_duplicates).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import connection

from memories.encryption.keys import SPACE_KEYS_SQL, DataKey, keys_of_rows

# Hex digits of HMAC-SHA256 kept per lexeme: 64 bits, so that two of a space's distinct terms
# share a digest with odds below one in a billion at a million terms.
LEXEME_DIGEST_CHARS = 16
DIGIT_MARK = "#"

_ANALYSE_SQL = """
SELECT t.n, u.lexeme, array_to_string(u.positions, ',')
FROM unnest(%s::text[]) WITH ORDINALITY AS t (text, n)
CROSS JOIN LATERAL unnest(gnosem_search_vector(t.text)) AS u
"""
# The query's lexemes (space NULL) and the searched spaces' keys, in one round trip.
_QUERY_TERMS_AND_KEYS_SQL = f"""
SELECT NULL::bigint, NULL::integer, NULL::bytea, NULL::text, lexeme
FROM (SELECT DISTINCT lexeme FROM unnest(tsvector_to_array(gnosem_search_vector(%(query)s))) AS lexeme) AS lexemes
UNION ALL
SELECT *, NULL FROM ({SPACE_KEYS_SQL}) AS space_keys
"""


@dataclass(frozen=True)
class Analysis:
    """A text's lexemes with their positions (as PostgreSQL writes them: "1,5,9")."""

    positions: dict[str, str]

    @property
    def length(self) -> int:
        """Token occurrences: BM25's document length."""
        return sum(positions.count(",") + 1 for positions in self.positions.values())


def analyse(texts: Sequence[str]) -> list[Analysis]:
    """Each text's lexemes and positions, in one query."""
    found: list[dict[str, str]] = [{} for _ in texts]
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_ANALYSE_SQL, [list(texts)])
        for number, lexeme, positions in cursor.fetchall():
            found[number - 1][lexeme] = positions
    return [Analysis(positions) for positions in found]


def blind_lexeme(key: DataKey, lexeme: str) -> str:
    """A lexeme's digest under a space key: what the index and the postings hold for it."""
    digest = key.mac("term", lexeme).hex()[:LEXEME_DIGEST_CHARS]
    return DIGIT_MARK + digest if any(character.isdigit() for character in lexeme) else digest


def blind_vector(key: DataKey, analysis: Analysis) -> str:
    """The analysis as a tsvector literal over digests, positions kept."""
    return " ".join(
        f"'{blind_lexeme(key, lexeme)}':{positions}" for lexeme, positions in sorted(analysis.positions.items())
    )


@dataclass(frozen=True)
class BlindQuery:
    """A query's terms as the searched spaces index them: term number, space and digest, one
    entry per term, space and key version (a space being re-keyed indexes under two)."""

    terms: list[int]
    spaces: list[int]
    versions: list[int]
    lexemes: list[str]

    def __bool__(self) -> bool:
        return bool(self.terms)

    def params(self) -> dict[str, list]:
        return {"term_numbers": self.terms, "term_spaces": self.spaces, "term_lexemes": self.lexemes}


def blind_query(query: str, space_ids: Iterable[int]) -> BlindQuery:
    """The query's terms under every key of the searched spaces (read with the query's analysis,
    in one round trip)."""
    space_ids = list(space_ids)
    with connection.cursor() as cursor:
        cursor.execute(_QUERY_TERMS_AND_KEYS_SQL, {"query": query, "key_spaces": space_ids})
        rows = cursor.fetchall()
    lexemes = sorted(row[4] for row in rows if row[0] is None)
    keys = keys_of_rows(space_ids, [row[:4] for row in rows if row[0] is not None]) if lexemes else {}
    entries = [
        (number, key.space_id, key.version, blind_lexeme(key, lexeme))
        for number, lexeme in enumerate(lexemes)
        for space_keys in keys.values()
        for key in space_keys
    ]
    return (
        BlindQuery(*(list(column) for column in zip(*entries, strict=True))) if entries else BlindQuery([], [], [], [])
    )


# The query's terms as rows (term, space_id, lexeme) in the keyword signal's SQL.
BLIND_TERMS_SQL = (
    "unnest(%(term_numbers)s::int[], %(term_spaces)s::bigint[], %(term_lexemes)s::text[]) AS v (term, space_id, lexeme)"
)
