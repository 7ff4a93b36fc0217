"""Which search candidates are about a thing the search leaves out (`exclude`, or a negation read
in the query, memories.search.negation).

A memory is judged by what it is about, not by any mention:

- **Left out**, when it carries the thing as a tag; when its compressed facts name the thing as
  their topic; or when its text names the thing (by its name or a known alias: "PG" for
  Postgres) other than in passing.
- **Kept**, when it names the thing only in passing: every mention sits where something is left
  behind or compared ("moved off Postgres to MySQL", "instead of Postgres", "unlike AWS",
  "replaced Jenkins with ...", "Jenkins was too slow") and it names something else besides.
- **Pushed down** (its score times EXCLUDED_BY_MEANING_FACTOR, not left out: a guess must not
  hide an answer), when it names neither the thing nor anything else, and its meaning lies nearer
  the thing than the question ("autovacuum on the invoices table" when leaving out Postgres).

A note is judged by its title and tags the same way (its passages are not judged one by one). A
thing with no letter or digit in it ("'") matches nothing.
"""

import re
from dataclasses import dataclass

import numpy as np

from memories.entities.extraction import entity_key, extract_entities
from memories.entities.words import ALIASES
from memories.models import Memory, Note

# A memory near the left-out thing by meaning only keeps this share of its score.
EXCLUDED_BY_MEANING_FACTOR = 0.5
# ... when its similarity to the thing is at least this, and above its similarity to the question.
EXCLUDED_BY_MEANING_MIN_SIMILARITY = 0.3

# Words before a mention that leave the thing behind or compare against it (within three words).
_LEFT_BEHIND_BEFORE = re.compile(
    r"\b(?:off|away\s+from|instead\s+of|rather\s+than|unlike|than|replac(?:e|ed|es|ing)|over|versus|vs\.?|without|"
    r"besides|except|considered|considering|dropp(?:ed|ing)|ditch(?:ed|ing)|retir(?:ed|ing)|abandon(?:ed|ing)|"
    r"leaving|left|migrat(?:ed|ing)|switch(?:ed|ing)|mov(?:ed|ing)|formerly|previously|no\s+longer|not|"
    r"outgrew|outgrown|sunset(?:ted)?|decommission(?:ed|ing))"
    r"(?:\s+\S+){0,3}\s*\Z",
    re.IGNORECASE,
)
# Words after a mention that leave it behind ("Jenkins was too slow", "Stripe's former owner").
_LEFT_BEHIND_AFTER = re.compile(
    r"\A(?:['\u2019]s)?\s*(?:(?:was|were|is|got|had\s+been|has\s+been)\s+(?:\w+\s+)?"
    r"(?:replaced|retired|dropped|removed|deprecated|too|abandoned|phased|decommissioned|migrated|moved|"
    r"sunset|gone|turned\s+off|shut\s+down)|former|old|legacy)\b",
    re.IGNORECASE,
)
_FACT = re.compile(r"([A-Z][A-Z0-9_]*)\s*[=:]\s*([^|]*)")


@dataclass(frozen=True)
class Excluded:
    """One thing to leave out, as given and as matched: its entity key and the forms it is
    written in (its name and the aliases of its key)."""

    name: str
    key: str
    forms: tuple[str, ...]
    pattern: re.Pattern

    @classmethod
    def of(cls, name: str) -> "Excluded":
        key = entity_key(name)
        forms = {" ".join(name.casefold().split()), key, *(alias for alias, target in ALIASES.items() if target == key)}
        forms = {form for form in forms if any(character.isalnum() for character in form)}
        if not forms:
            return cls(name=name, key=key, forms=(), pattern=re.compile(r"(?!)"))
        alternatives = "|".join(
            r"\s+".join(re.escape(word) for word in form.split()) for form in sorted(forms, key=len, reverse=True)
        )
        pattern = re.compile(rf"(?<![\w-])(?:{alternatives})(?:['\u2019]?s|es)?(?![\w-])", re.IGNORECASE)
        return cls(name=name, key=key, forms=tuple(sorted(forms)), pattern=pattern)

    def as_tags(self) -> set[str]:
        return {variant for form in self.forms for variant in (form.replace(" ", "-"), form.replace(" ", "_"))}


@dataclass(frozen=True)
class Verdict:
    """What becomes of one candidate: left out, or its score times `factor`, and why."""

    left_out: bool
    factor: float = 1.0
    why: dict | None = None


def judge_memory(
    memory: Memory,
    excluded: list[Excluded],
    *,
    memory_vector: np.ndarray | None = None,
    thing_vectors: dict[str, np.ndarray] | None = None,
    question_vector: np.ndarray | None = None,
) -> Verdict:
    """The verdict on one memory for these left-out things (see the module's docstring); the
    vectors, when given, judge a memory that names none of them by meaning. A sealed field that
    does not open counts as empty."""
    return judge(
        text=memory.content if isinstance(memory.content, str) else "",
        tags=memory.tags if isinstance(memory.tags, list) else [],
        facts=memory.content_optimized if isinstance(memory.content_optimized, str) else "",
        excluded=excluded,
        memory_vector=memory_vector,
        thing_vectors=thing_vectors,
        question_vector=question_vector,
    )


def judge_note(note: Note, excluded: list[Excluded]) -> Verdict:
    """The verdict on a note by its title and tags (its passages are not judged one by one)."""
    return judge(
        text=note.title if isinstance(note.title, str) else "",
        tags=note.tags if isinstance(note.tags, list) else [],
        facts="",
        excluded=excluded,
    )


def judge(
    *,
    text: str,
    tags: list[str],
    facts: str,
    excluded: list[Excluded],
    memory_vector: np.ndarray | None = None,
    thing_vectors: dict[str, np.ndarray] | None = None,
    question_vector: np.ndarray | None = None,
) -> Verdict:
    """The verdict on a text with its tags and compressed facts (a memory's, or a note's title)."""
    topics = _topics(facts)
    named: set[str] | None = None  # the text's entity keys, read when needed

    def names_other_things() -> bool:
        nonlocal named
        if named is None:
            named = {mention.key for mention in extract_entities(text)}
        return bool(named - {thing.key for thing in excluded})

    kept_in_passing: list[str] = []
    for thing in excluded:
        if set(tags) & thing.as_tags():
            return Verdict(True, why={"thing": thing.name, "read": "tagged"})
        if any(thing.pattern.search(topic) for topic in topics):
            return Verdict(True, why={"thing": thing.name, "read": "its topic"})
        mentions = list(thing.pattern.finditer(text))
        if not mentions:
            continue
        if not (all(_left_behind(text, mention) for mention in mentions) and names_other_things()):
            return Verdict(True, why={"thing": thing.name, "read": "named as its subject"})
        kept_in_passing.append(thing.name)
    if kept_in_passing:
        return Verdict(False, why={"things": kept_in_passing, "read": "named in passing"})
    if memory_vector is None or not thing_vectors or question_vector is None:
        return Verdict(False)
    question_similarity = float(memory_vector @ question_vector)
    for thing in excluded:
        vector = thing_vectors.get(thing.name)
        if vector is None:
            continue
        similarity = float(memory_vector @ vector)
        near = similarity >= EXCLUDED_BY_MEANING_MIN_SIMILARITY and similarity > question_similarity
        if near and not names_other_things():
            return Verdict(
                False,
                EXCLUDED_BY_MEANING_FACTOR,
                why={"thing": thing.name, "read": "near it by meaning", "similarity": round(similarity, 3)},
            )
    return Verdict(False)


def _left_behind(text: str, mention: re.Match) -> bool:
    """Whether this mention of a thing leaves it behind or compares against it."""
    before = text[max(0, mention.start() - 60) : mention.start()]
    after = text[mention.end() : mention.end() + 60]
    return bool(_LEFT_BEHIND_BEFORE.search(before) or _LEFT_BEHIND_AFTER.match(after))


def _topics(facts: str) -> list[str]:
    """The TOPIC values of a compressed form (`KEY=value|...`)."""
    return [value.strip() for key, value in _FACT.findall(facts) if key == "TOPIC" and value.strip()]
