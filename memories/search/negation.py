"""How a search query is read: the part to search for and the things to leave out.

Negation in the query itself is read for the common English forms ("databases that are not
Postgres", "other than X", "except X", "besides X", "apart from X", "excluding X", "without X",
"non-X", "anything but X", and a leading `-X` for an identifier): the negated part becomes an
exclusion and the rest is searched. The reader would rather miss a negation than invent one:
"not" after an auxiliary ("does not work", "can't find"), before a verb form ("not working",
"404 Not Found") or inside quotes is left as it is, and so are "non-" and "without" before an
ordinary word ("non-profit", "merged without review": a condition, not a thing). A query it
reads no negation in is searched exactly as written, and so is every query when
GNOSEM_READ_NEGATION is off.
"""

import re
from dataclasses import dataclass

from django.conf import settings

from gnosem.errors import ValidationError
from memories.entities.words import ALIASES, TECHNOLOGIES
from memories.validation import clean_query
from memories.vocabulary import MAX_ENTITY_NAME_CHARS

# Words that end a negated phrase: what follows belongs to the rest of the question.
_PHRASE_ENDS = frozenset(
    """
    that which who whom whose where when while whereas so because since though although if unless
    in on at for with to from by into onto during about after before until via per like as than
    do does did is are was were be been being have has had can could will would shall should may
    might must i we you they he she it me us them my our your their his her its
    please then also but
    """.split()
)
# Words that join negated things ("not Postgres or MySQL": both left out).
_JOINERS = frozenset({"and", "or", "nor", "&"})
# Leading words dropped from a negated thing.
_LEADING = frozenset("the a an any our my your their his her its some".split())
# "not" right after one of these negates a verb ("does not work"), not a thing; after "is" or
# "are" it may name one ("databases that are not Postgres").
_AUXILIARIES = frozenset("do does did have has had can could will would shall should may might must need".split())
# "not" before one of these negates a state or an action ("not found", "not sure").
_NOT_A_THING = frozenset(
    """
    found available allowed supported working responding loading running sure yet enough only just
    even always ever really very so too much many all every quite able possible necessary needed
    required set defined related connected sent received ready done finished started complete
    correct right wrong valid invalid empty null reachable accessible to be
    """.split()
)
# "but not X", and "not" before a preposition: "not in Lisbon" (before a name only).
_NOT_CUES = (
    r"but\s+not",
    r"not\s+(?:to|in|at|from|on|for|by)",
    r"not",
)
# Cues read only before a name ("without Docker", "not in Lisbon"), not an ordinary word.
_NAMES_ONLY_CUES = frozenset({"without", *(f"not {word}" for word in ("to", "in", "at", "from", "on", "for", "by"))})
# Cues that introduce the negated thing, longest first ("not about X", "without counting X" first).
_CUES = (
    r"(?:not|without)\s+(?:related\s+to|about|involving|including|mentioning|using|counting|concerning)",
    r"any(?:thing|where|one|body)\s+(?:but|except|other\s+than)",
    r"other\s+than",
    r"apart\s+from",
    r"aside\s+from",
    r"except\s+for",
    r"except",
    r"excluding",
    r"besides",
    r"without",
)
_WORD = re.compile(r"[\w][\w.'\u2019+#/:-]*|&")
_NEXT_WORD = re.compile(r"\s*(?P<word>[\w][\w.'\u2019+#/:-]*|&|[,;.?!()\[\]])")
_NEGATION = re.compile(rf"\b(?P<cue>{'|'.join(_CUES + _NOT_CUES)})\b\s+(?=\S)", re.IGNORECASE)
# "non-Python": the thing is the word after the hyphen.
_NON = re.compile(r"\bnon-(?P<thing>[A-Za-z][\w.+#]*)")
# "-E503": an identifier after a space (or at the start) with a minus before it.
_MINUS = re.compile(r"(?:(?<=\s)|\A)-(?P<thing>[A-Za-z0-9_][\w.:/-]*)")
_QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d")
# Left behind at the end once a negation is taken out: "databases that are" reads as "databases";
# and at the start, a joiner ("and MySQL ...").
_DANGLING = frozenset("that which who whose are is was were be been but and or nor & - that's".split())
_DANGLING_FIRST = frozenset("but and or nor & -".split())
# A query reads at most this many negated things (an `exclude` argument's own limit is separate).
MAX_READ_EXCLUSIONS = 10


@dataclass(frozen=True)
class QueryReading:
    """The query as given, what is searched, what is left out and the negations read in it."""

    query: str
    searched: str
    excluded: tuple[str, ...] = ()
    # The phrases of the query read as negations ("not Postgres"), in their order.
    negations: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"searched": self.searched, "excluded": list(self.excluded), "negations": list(self.negations)}


def read_query(query: object, exclude: tuple[str, ...] = ()) -> QueryReading:
    """The query's reading: its negations taken out as exclusions beside `exclude` (already cleaned).
    A query that says only what to leave out is refused: there would be nothing to search for."""
    text = clean_query(query)
    searched, read, negations = _take_negations(text) if settings.GNOSEM_READ_NEGATION else (text, (), ())
    if not searched:
        raise ValidationError(
            "query",
            f"says only what to leave out ({'; '.join(negations)}); say what to look for as well, e.g. "
            "'which databases do we run, other than Postgres'.",
        )
    excluded = _distinct(read + exclude)
    return QueryReading(query=text, searched=searched if negations else text, excluded=excluded, negations=negations)


def _take_negations(text: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(the text with its negations taken out, the negated things, the negation phrases)."""
    quoted = [match.span() for match in _QUOTED.finditer(text)]
    spans: list[tuple[int, int, list[str]]] = []
    for match in _NEGATION.finditer(text):
        if _inside(match.start(), quoted) or any(start <= match.start() < end for start, end, _ in spans):
            continue
        cue = " ".join(match.group("cue").lower().split())
        if cue == "not" and _negates_a_verb(text, match.start(), match.end()):
            continue
        things, end = _things_after(text, match.end())
        if cue in _NAMES_ONLY_CUES and not all(_is_a_name(thing.split()[0]) for thing in things):
            continue  # "without review", "not in a hurry": a condition, not a thing to leave out
        if things:
            spans.append((match.start(), end, things))
    for pattern in (_NON, _MINUS):
        for match in pattern.finditer(text):
            thing = match.group("thing").rstrip(".:")
            if _inside(match.start(), quoted) or any(start <= match.start() < end for start, end, _ in spans):
                continue
            if pattern is _NON and not _is_a_name(thing):
                continue
            if pattern is _MINUS and not _is_identifier(thing):
                continue
            # "non-Python services": the prefix goes, the thing's name goes, "services" stays.
            spans.append((match.start(), match.start() + len("non-" if pattern is _NON else "-") + len(thing), [thing]))
    if not spans:
        return text, (), ()
    spans.sort()
    kept, cursor = [], 0
    for start, end, _ in spans:
        kept.append(text[cursor:start])
        cursor = end
    kept.append(text[cursor:])
    searched = _tidy(" ".join(kept))
    negated = tuple(thing for _, _, found in spans for thing in found)[:MAX_READ_EXCLUSIONS]
    negations = tuple(" ".join(text[start:end].split()) for start, end, _ in spans)
    return searched, negated, negations


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _negates_a_verb(text: str, start: int, end: int) -> bool:
    """Whether the "not" at text[start:end] negates a verb or a state rather than naming a thing."""
    before = _WORD.findall(text[:start].lower())[-2:]
    if any(word in _AUXILIARIES for word in before) or any(word.endswith(("n't", "n\u2019t")) for word in before):
        return True
    after = _WORD.findall(text[end:].lower())[:1]
    if not after:
        return True
    word = after[0]
    return word in _NOT_A_THING or (word.endswith(("ing", "ed")) and word not in TECHNOLOGIES)


def _things_after(text: str, start: int) -> tuple[list[str], int]:
    """The negated things starting at text[start:] ("Postgres or MySQL": two) and where they end."""
    things: list[str] = []
    current: list[str] = []
    end = start
    position = start
    while True:
        match = _NEXT_WORD.match(text, position)
        if not match:
            break
        word = match.group("word")
        lowered = word.lower().rstrip(".")
        if word in ",;.?!()[]" or lowered in _PHRASE_ENDS:
            break
        if lowered in _JOINERS:
            if current:
                things.append(" ".join(current))
                current = []
            position = match.end()
            continue
        if not current and not things and lowered == "not":
            return [], start  # "besides not being able to": a state, not a thing
        if not current and lowered in _LEADING:
            position = match.end()
            continue
        if current and _is_a_name(current[-1]) and word[:1].islower():
            # A name ends where a lower-case word follows: "besides Marco handles reviews". Its head
            # noun goes with it when the phrase ends right after ("other than Italian food", "the
            # E503 ones"), but names no thing of its own.
            end = _head_noun_end(text, match) or end
            break
        if len(current) >= 4:
            break
        word = word.rstrip(":")
        current.append(word.rstrip(".") if word.endswith(".") and not _is_identifier(word[:-1]) else word)
        position = match.end()
        end = position
        if match.group("word").endswith(":"):
            break  # "anything but Python: what else ..."
    if current:
        things.append(" ".join(current))
    things = [thing for thing in things if len(thing) <= MAX_ENTITY_NAME_CHARS]
    return things, end


def _head_noun_end(text: str, match: re.Match) -> int | None:
    """Where the lower-case word `match` found ends, if the phrase ends right after it (at a
    punctuation mark, a phrase-ending word or the end of the text); None otherwise."""
    following = _NEXT_WORD.match(text, match.end())
    if following is None:
        return match.end()
    word = following.group("word")
    return match.end() if word in ",;.?!()[]" or word.lower() in _PHRASE_ENDS else None


def _is_a_name(word: str) -> bool:
    """Whether "non-<word>" negates a thing: a capitalised name, a known technology or an identifier."""
    lowered = word.lower()
    return word[:1].isupper() or lowered in TECHNOLOGIES or lowered in ALIASES or _is_identifier(word)


def _is_identifier(word: str) -> bool:
    """Whether a word after a minus reads as an identifier or a name ("-E503", "-Redis"), not a
    number ("-5") or a command-line flag ("-la")."""
    if not any(character.isalpha() for character in word):
        return False
    return (
        any(character.isdigit() for character in word)
        or any(character.isupper() for character in word)
        or "_" in word
        or word.lower() in TECHNOLOGIES
    )


def _tidy(text: str) -> str:
    """The searched part without the connectors a taken-out negation left dangling."""
    text = re.sub(r"\s+([,;:?.!])", r"\1", " ".join(text.split()))
    body, ending = re.fullmatch(r"(.*?)([?.!]*)", text, re.S).groups()  # type: ignore[union-attr]
    words = body.split()
    while words and words[-1].lower().strip(",;:") in _DANGLING | {""}:
        words.pop()
    while words and words[0].lower().strip(",;:") in _DANGLING_FIRST | {""}:
        words.pop(0)
    tidied = re.sub(r"([,;:])(?=[,;:]|\Z)", "", " ".join(words)).strip(" ,;:")
    return tidied + ending if tidied else ""


def _distinct(things: tuple[str, ...]) -> tuple[str, ...]:
    seen: set[str] = set()
    kept = []
    for thing in things:
        key = " ".join(thing.casefold().split())
        if key and key not in seen:
            seen.add(key)
            kept.append(thing)
    return tuple(kept)
