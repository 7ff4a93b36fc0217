"""Rule-based entity extraction: the people, projects, technologies, identifiers, hosts and paths one
memory mentions, read from its compressed facts, its tags and its text.

The graph links memories that share an entity and search expands its top results through them, so
a false entity ("The", "Monday", "Thanks") joins unrelated memories: every rule here would rather
miss a name than invent one. Pure Python, no model and no database; it runs for every memory
written, so the patterns are compiled once and the text is scanned a fixed number of times.

Choices worth knowing:

- A version is attached to the word just before it when that word names a product, so
  "api v2.3.1" and "PostgreSQL 16" are one entity each (key "api 2.3.1", "postgresql 16"); the
  product itself is still found on its own ("PostgreSQL"). A version with no product is kept only
  when it is clearly one ("v2.3.1", "2.3.1"); "3.5" and "v2" alone are not.
- A capitalised word that opens a sentence is capitalised by grammar, not because it is a name: on
  its own it counts only if the same word is capitalised mid-sentence elsewhere in the memory, or
  is a speaker label ("Caroline: ..."). Pronouns, days, months, greetings and discourse words
  ("Yesterday", "Thanks", "However") never count, wherever they stand.
- Known technologies (Redis, postgres, Kubernetes) are found in any case, as kind "technology";
  other mixed-case words and acronyms (OAuth, LGBTQ) are kind "name".
"""

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from memories.entities.words import (
    ABBREVIATIONS,
    ALIASES,
    COMMON_INITIAL,
    CONNECTORS,
    FACT_KINDS,
    FILE_EXTENSIONS,
    IE_PLURALS,
    NOT_HANDLES,
    NOT_IDENTIFIERS,
    NOT_NAMES,
    NOT_PLURAL,
    NOT_PRODUCTS,
    NOT_SPEAKERS,
    STOPWORDS,
    TAG_NAMESPACES,
    TECHNOLOGIES,
    TLDS,
    UNITS,
)
from memories.vocabulary import MAX_ENTITY_KEY_CHARS, MAX_ENTITY_NAME_CHARS

MAX_ENTITIES = 24

_MAX_ITEM_CHARS = 60
_MAX_ITEM_WORDS = 5


@dataclass(frozen=True)
class Mention:
    """One entity of a memory: its key (identity within an owner), how to show it, its kind and
    where it was read ("fact:PERSON", "tag" or "text")."""

    key: str
    name: str
    kind: str
    source: str


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_SURROUNDING = " \"'\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a()[]{}<>,;:!?*`\u2026"
_POSSESSIVE = re.compile(r"(?:['\u2019]s|(?<=s)['\u2019])\Z", re.I)
_VERSION_TOKEN = r"[0-9]+(?:\.[0-9]+){0,3}(?:-?(?:alpha|beta|rc|dev|pre|post)\.?[0-9]*)?"
_VERSION_KEY = re.compile(rf"v?{_VERSION_TOKEN}")
_HOST_KEY = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}")

_FACT_PAIR = re.compile(r"([A-Z][A-Z0-9_]*)\s*[=:]\s*(.*)", re.S)
_PARENTHETICAL = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\])")
_ITEM_SEPARATOR = re.compile(r",\s+|;\s*|\s+(?:and|&)\s+")
_ITEM_LEAD = re.compile(r"\A(?:and|or|&|the|a|an)\s+", re.I)
_NUMERIC_ITEM = re.compile(r"[0-9\s.,:/+-]*")
_ITEM_VERSION = re.compile(rf"(?P<product>\S+(?:\s\S+){{0,3}}?)\s+(?P<version>[vV]?{_VERSION_TOKEN})")


def _prefix_tree(words: frozenset[str]) -> str:
    """A pattern matching exactly `words`, factored by common prefix: the regex engine tries the
    branches of an alternation one by one, so a flat list of words costs its length at every
    position of the text."""
    tree: dict = {}
    for word in words:
        node = tree
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(character) + pattern(child) for character, child in sorted(node.items()) if character]
        if not branches:
            return ""
        if len(branches) == 1 and "" not in node:
            return branches[0]
        return "(?:" + "|".join(branches) + ")" + ("?" if "" in node else "")

    return pattern(tree)


# The patterns searched over the whole text open with a look-ahead for the class of their first
# character: the regex engine then skips to the next candidate in C, where a look-behind first would
# run at every position.
_URL = re.compile(r"\b(?:https?|ftp|wss?)://(?:[^\s/?#@<>\"'`]*@)?(?P<host>[^\s/?#:<>\"'`()\[\]|]+)[^\s<>\"'`|]*", re.I)
_URL_TAIL = ".,;:!?)]}'\""
_DNS_NAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")
_UUID = re.compile(r"(?=[0-9a-fA-F])(?<![\w-])[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?![\w-])")
_PATH_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.~+@%=-")
_PATH = re.compile(
    r"(?<![\w.~/\\:@%+=-])(?:(?:~|\.{1,2})?/?[\w.+@%=~-]+(?:/[\w.+@%=~-]+)+/?|(?:~|\.{1,2})?/[\w.+@%=~-]+/?)"
)
_WINDOWS_PATH = re.compile(r"(?=[A-Za-z])(?<![\w\\])[A-Za-z]:\\[^\s\\:*?\"<>|]+(?:\\[^\s\\:*?\"<>|]+)*\\?")
_EXTENSION = re.compile(r"[^./]+\.[A-Za-z][A-Za-z0-9]{0,7}")
_HOST_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
_TOP_LEVEL_DOMAIN = re.compile(rf"\.(?=[A-Za-z])(?i:{_prefix_tree(TLDS)})(?![\w-]|\.[a-z0-9])")
_HOST = re.compile(r"(?<![\w.@/:-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]+\Z", re.I)
_MAX_HOST_CHARS = 253
_FILE_NAME_CHARACTERS = _HOST_CHARACTERS | {"_"}
_FILE_EXTENSION = re.compile(rf"\.(?=[A-Za-z])(?i:{_prefix_tree(FILE_EXTENSIONS)})(?![\w-]|\.\w)")
_FILE_NAME = re.compile(r"(?<![\w./@-])[\w-]+(?:\.[\w-]+)*\Z")
_HANDLE = re.compile(
    r"(?=@)(?<![\w@.+-])@(?P<handle>[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,38}[A-Za-z0-9_])?)(?![\w@(-]|[./:]\w)"
)
_IDENTIFIER = re.compile(r"(?=[A-Z])(?<![\w./@#-])[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)*-[0-9]+(?![\w-]|\.[0-9])")
_SHA = re.compile(r"(?=[0-9a-f])(?<![\w./@#:-])[0-9a-f]{7,40}(?![\w-]|\.\w)")
_SCIENTIFIC = re.compile(r"[0-9]+e[0-9]+")
_RETINA_SUFFIX = re.compile(r"[0-9]+x")  # image@2x.png
_VERSION = re.compile(
    r"(?=[0-9vV])(?<![\w.@/#:$€£-])(?:[vV][0-9]+(?:\.[0-9]+){0,3}|[0-9]+(?:\.[0-9]+){1,3})"
    r"(?:-?(?:alpha|beta|rc|dev|pre|post)\.?[0-9]*)?(?![\w%-]|[.,:][0-9])"
)
_BARE_VERSION = re.compile(
    r"(?=[A-Za-z])(?<![\w.@/#-])(?P<product>[A-Za-z][A-Za-z0-9+#]*)[ \t]+(?P<number>[0-9]{1,4})"
    r"(?![\w%]|[.,:/-][0-9A-Za-z])"
)
_VERSION_NUMBERS = re.compile(r"[0-9]+(?:\.[0-9]+)*")
_PRODUCT_BEFORE = re.compile(r"(?=[A-Za-z])(?<![\w.@/#-])[A-Za-z][A-Za-z0-9+#]*(?=[ \t]+\Z)")
_NEXT_WORD = re.compile(r"[ \t]+([A-Za-z%]+)")
_SPEAKER = re.compile(
    r"^[ \t]*(?:[-*\u2022>]+[ \t]*)?(?:\[[^\]\n]{0,30}\][ \t]*)?"
    r"(?P<label>[^\W\d_][\w'\u2019-]*(?:[ \t]+[^\W\d_][\w'\u2019-]*){0,2})[ \t]*:(?=[ \t]|$)",
    re.M,
)
_TECHNOLOGY = re.compile(
    rf"(?=[{''.join(sorted({word[0] for word in TECHNOLOGIES}))}])(?<![\w@#./-])"
    rf"{_prefix_tree(TECHNOLOGIES)}(?:['\u2019]s)?(?![\w-]|\.\w)",
    re.I,
)
_CAPITALISED = r"[^\W\d_a-z][\w'\u2019-]*"
_CHUNK = re.compile(
    rf"(?=[^\W\d_a-z])(?<![\w@#./\\-])(?<!\w['\u2019]){_CAPITALISED}"
    rf"(?:[ \t]+(?:(?:{'|'.join(sorted(CONNECTORS))})[ \t]+){{0,2}}{_CAPITALISED})*"
)
_LOWER_MIXED = re.compile(r"(?=[a-z])(?<![\w@#./\\-])(?<!\w['\u2019])[a-z]+[A-Z][A-Za-z0-9]*(?![\w'\u2019-]|\.\w)")
_CHUNK_WORD = re.compile(r"\S+")
_WORD_PARTS = re.compile(r"[-'\u2019]")
_ACRONYM = re.compile(r"[A-Z]{2,6}[0-9]{0,2}")
_SENTENCE_OPENERS = " \t([{*_\u2022>#-"
_OPENING_QUOTES = frozenset("\"'\u201c\u2018\u00ab")
_ABBREVIATION_BEFORE = re.compile(r"(?:\A|[^\w.])((?:\w\.)*\w+)\.\Z")


def entity_key(name: str) -> str:
    """The key a name is looked up by (what a user types into explore_graph): NFKC, case-folded,
    white space collapsed, surrounding punctuation and a possessive dropped, a few common spellings
    merged (postgres -> postgresql), and a plural last word made singular. Handles, paths, hosts
    (without "www."), versions and identifiers keep their form apart from case."""
    text = _CONTROL.sub("", unicodedata.normalize("NFKC", name)).casefold()
    text = " ".join(text.split()).lstrip(_SURROUNDING).rstrip(_SURROUNDING + ".")
    if not text:
        return ""
    if text in ALIASES:
        return ALIASES[text]
    if " " not in text:
        if text.startswith(("@", "~")) or "/" in text or "\\" in text:
            return text.rstrip("/\\") or text
        if _VERSION_KEY.fullmatch(text):
            return _version_key(text)
        if _HOST_KEY.fullmatch(text):
            return text.removeprefix("www.")
        if any(character.isdigit() for character in text):
            return text
    else:
        product, _, last = text.rpartition(" ")
        if " " not in product and _VERSION_KEY.fullmatch(last):
            return f"{ALIASES.get(product, product)} {_version_key(last)}"
    text = _POSSESSIVE.sub("", text).rstrip(_SURROUNDING + ".")
    if text in ALIASES:
        return ALIASES[text]
    head, space, last = text.rpartition(" ")
    return head + space + _singular(last)


def _version_key(version: str) -> str:
    # "v2.3.1" is "2.3.1"; "v2" stays "v2", since "2" alone would be any number.
    return version[1:] if version.startswith("v") and "." in version else version


def _singular(word: str) -> str:
    if (
        len(word) <= 3
        or not word.endswith("s")
        or not word.isalpha()
        or word in NOT_PLURAL
        or word.endswith(("ss", "us", "is", "as", "js"))
    ):
        return word
    if word.endswith("ies"):
        return word[:-1] if word in IE_PLURALS else word[:-3] + "y"
    if word.endswith(("sses", "xes", "zzes", "shes", "tches", "nches", "rches")):
        return word[:-2]
    return word[:-1]


def extract_entities(text: str, *, facts: str | None = None, tags: Sequence[str] = ()) -> list[Mention]:
    """The distinct entities of one memory (one Mention per key), most reliable source first: the
    facts' named items, then the tags, then what the text rules find in the facts' sentences and in
    the text, by first position; at most MAX_ENTITIES."""
    sentences: list[tuple[str, str]] = []
    found = _fact_mentions(facts or "", sentences)
    found += _tag_mentions(tags)
    found += _TextScan(sentences, text).mentions()
    return _distinct(found)[:MAX_ENTITIES]


# Names and words recur within a text and across memories; only short ones are cached, so that the
# caches stay small whatever the texts.
_MAX_CACHED_CHARS = 200


@lru_cache(maxsize=8192)
def _cached_key(name: str) -> str:
    return entity_key(name)


def _mention(name: str, kind: str, source: str) -> Mention | None:
    name = " ".join(name.split())
    key = _cached_key(name) if len(name) <= _MAX_CACHED_CHARS else entity_key(name)
    if not key or len(key) > MAX_ENTITY_KEY_CHARS or len(name) > MAX_ENTITY_NAME_CHARS:
        return None
    return Mention(key=key, name=name, kind=kind, source=source)


def _distinct(found: list[Mention | None]) -> list[Mention]:
    """One mention per key: the first one's kind and source. A tag's name is how it was stored
    (lower case), so a later fact or text mention of the same key lends its name as written."""
    kept: dict[str, Mention] = {}
    for mention in found:
        if mention is None:
            continue
        first = kept.get(mention.key)
        if first is None:
            kept[mention.key] = mention
        elif first.source == "tag" and mention.source != "tag" and first.name == first.name.lower():
            kept[mention.key] = replace(first, name=mention.name)
    return list(kept.values())


def _fact_mentions(facts: str, sentences: list[tuple[str, str]]) -> list[Mention | None]:
    """The named items of the compressed form (PERSON, PROJECT, PLACE, STACK, TOPIC). Values of the
    other keys, and items too long to be names, go to `sentences` for the text rules."""
    found: list[Mention | None] = []
    for part in facts.split("|"):
        match = _FACT_PAIR.fullmatch(part.strip())
        if match is None or not match[2].strip():
            continue
        key, value = match[1], match[2].strip()
        kind = FACT_KINDS.get(key)
        if kind is None:
            sentences.append((key, value))
            continue
        source = f"fact:{key}"
        for item in _ITEM_SEPARATOR.split(_PARENTHETICAL.sub("", value)):
            item = _ITEM_LEAD.sub("", item.strip(_SURROUNDING).rstrip(".").strip(_SURROUNDING), count=1)
            if not item or _NUMERIC_ITEM.fullmatch(item) or entity_key(item) in STOPWORDS:
                continue
            if len(item) > _MAX_ITEM_CHARS or len(item.split()) > _MAX_ITEM_WORDS:
                sentences.append((key, item))
            elif kind == "technology":
                found += _stack_item(item, source)
            else:
                found.append(_mention(item, kind, source))
    return found


def _stack_item(item: str, source: str) -> list[Mention | None]:
    """A STACK item: "PostgreSQL 16" is the technology and its version; "port 5433" and
    "16 GB RAM" are settings, not technologies."""
    if item[0].isdigit():
        return []
    match = _ITEM_VERSION.fullmatch(item)
    if match is None:
        return [_mention(item, "technology", source)]
    product = match["product"]
    if product.casefold() in NOT_PRODUCTS:
        return []
    return [_mention(product, "technology", source), _mention(f"{product} {match['version']}", "version", source)]


def _tag_mentions(tags: Sequence[str]) -> list[Mention | None]:
    found: list[Mention | None] = []
    for tag in tags:
        if not isinstance(tag, str):
            continue
        namespace, colon, value = tag.partition(":")
        if colon and not value.strip():
            continue
        kind = TAG_NAMESPACES.get(namespace.strip().casefold()) if colon else None
        if kind is not None:
            found.append(_mention(value, kind, "tag"))
        else:
            found.append(_mention(tag, "tag", "tag"))
    return found


# When one key is found by two text rules, the more specific kind wins.
_TEXT_KIND_RANK = {"person": 0, "technology": 1, "name": 3}


class _TextScan:
    """The text rules over the facts' sentences (one per line, first) and the text. Each rule
    claims the characters it matched, so that later rules do not read inside a URL, a path or a
    host ("nginx" in /etc/nginx/nginx.conf)."""

    def __init__(self, sentences: list[tuple[str, str]], text: str) -> None:
        self.starts: list[int] = []
        self.sources: list[str] = []
        parts: list[str] = []
        offset = 0
        for key, sentence in sentences:
            self.starts.append(offset)
            self.sources.append(f"fact:{key}")
            parts.append(sentence.replace("\n", " ") + "\n")
            offset += len(parts[-1])
        self.starts.append(offset)
        self.sources.append("text")
        self.text = "".join(parts) + text
        self.claimed = bytearray(len(self.text))
        self.found: dict[str, tuple[int, Mention]] = {}

    def mentions(self) -> list[Mention]:
        if self.text.strip():
            self._urls()
            self._uuids()
            self._paths()
            self._hosts()
            self._file_names()
            self._handles()
            self._identifiers()
            self._versions()
            self._bare_versions()
            self._technologies()
            self._names()
        found = sorted(self.found.values(), key=lambda found: (found[0], found[1].kind == "version"))
        return [mention for _, mention in found]

    def _add(self, position: int, name: str, kind: str) -> None:
        source = self.sources[bisect_right(self.starts, position) - 1]
        mention = _mention(name, kind, source)
        if mention is None:
            return
        earlier = self.found.get(mention.key)
        if earlier is None:
            self.found[mention.key] = (position, mention)
            return
        first_position, first = earlier
        if _TEXT_KIND_RANK.get(kind, 2) < _TEXT_KIND_RANK.get(first.kind, 2):
            first = replace(first, kind=kind)
        if position < first_position:
            first = replace(first, name=mention.name, source=mention.source)
        self.found[mention.key] = (min(position, first_position), first)

    def _claim(self, start: int, end: int) -> None:
        self.claimed[start:end] = b"\x01" * (end - start)

    def _free(self, start: int, end: int) -> bool:
        return self.claimed.find(1, start, end) == -1

    def _urls(self) -> None:
        if "://" not in self.text:
            return
        for match in _URL.finditer(self.text):
            end = match.start() + len(match[0].rstrip(_URL_TAIL))
            self._claim(match.start(), end)
            host = match["host"].rstrip(".").lower()
            if _DNS_NAME.fullmatch(host) and host != "localhost":
                self._add(match.start("host"), host, "host")

    def _uuids(self) -> None:
        if "-" in self.text:
            for match in _UUID.finditer(self.text):
                if self._free(*match.span()):
                    self._claim(*match.span())
                    self._add(match.start(), match[0], "identifier")

    def _paths(self) -> None:
        """Paths, found from their slashes: most words hold none, and a pattern tried at the start
        of every word would read each of them."""
        slash = self.text.find("/")
        while slash != -1:
            start = slash
            while start > 0 and self.text[start - 1] in _PATH_CHARACTERS:
                start -= 1
            match = _PATH.match(self.text, start)
            end = slash + 1
            if match is not None:
                path = match[0]
                while len(path) > 1 and path[-1] in ".,;:!?" and not path.endswith("/.."):
                    path = path[:-1]
                end = max(end, start + len(path))
                if self._free(start, end) and _is_path(path):
                    self._claim(start, end)
                    self._add(start, path, "path")
            slash = self.text.find("/", end)
        if ":\\" in self.text:
            for match in _WINDOWS_PATH.finditer(self.text):
                if self._free(*match.span()):
                    self._claim(*match.span())
                    self._add(match.start(), match[0].rstrip(".,;:!?"), "path")

    def _hosts(self) -> None:
        """Bare host names, found from their top-level domain."""
        for match in self._ending_at(_TOP_LEVEL_DOMAIN, _HOST_CHARACTERS, _HOST):
            self._claim(*match.span())
            self._add(match.start(), match[0].lower(), "host")

    def _file_names(self) -> None:
        """Bare file names ("README.md", "models.py") are claimed, so that "README" is no acronym;
        they are no entity of their own, since most projects have one."""
        for match in self._ending_at(_FILE_EXTENSION, _FILE_NAME_CHARACTERS, _FILE_NAME):
            self._claim(*match.span())

    def _ending_at(
        self, ends: re.Pattern[str], characters: frozenset[str], whole: re.Pattern[str]
    ) -> list[re.Match[str]]:
        """The free matches of `whole` that end where `ends` matches, read back from there over
        `characters`. `run` is where the run of such characters around a match starts: it is
        read once, however many ends it holds."""
        found = []
        run = read = 0
        for end in ends.finditer(self.text):
            start = end.start()
            while start > read and self.text[start - 1] in characters:
                start -= 1
            if start > read or read == 0:
                run = start
            read = end.start()
            match = whole.match(self.text, max(run, read - _MAX_HOST_CHARS), end.end())
            if match is not None and self._free(*match.span()):
                found.append(match)
        return found

    def _handles(self) -> None:
        if "@" not in self.text:
            return
        for match in _HANDLE.finditer(self.text):
            handle = match["handle"]
            if (
                self._free(*match.span())
                and handle.lower() not in NOT_HANDLES
                and any(character.isalpha() for character in handle)
                and not _RETINA_SUFFIX.fullmatch(handle)
            ):
                self._claim(*match.span())
                self._add(match.start(), match[0], "handle")

    def _identifiers(self) -> None:
        if "-" in self.text:
            for match in _IDENTIFIER.finditer(self.text):
                if self._free(*match.span()) and match[0].lower() not in NOT_IDENTIFIERS:
                    self._claim(*match.span())
                    self._add(match.start(), match[0], "identifier")
        for match in _SHA.finditer(self.text):
            sha = match[0]
            if (
                self._free(*match.span())
                and any(character.isdigit() for character in sha)
                and any(character.isalpha() for character in sha)
                and not _SCIENTIFIC.fullmatch(sha)
            ):
                self._claim(*match.span())
                self._add(match.start(), sha, "identifier")

    def _versions(self) -> None:
        """Dotted and v-prefixed versions: x.y.z on its own or after a product word; x.y and vN
        only after one (a named product for x.y, since "3.5" alone is as likely a decimal)."""
        for match in _VERSION.finditer(self.text):
            if not self._free(*match.span()):
                continue
            version = match[0]
            prefixed = version[0] in "vV"
            numbers = _VERSION_NUMBERS.match(version.lstrip("vV"))
            parts = numbers[0].split(".") if numbers else []
            if not prefixed and _is_address_or_date(parts):
                self._claim(*match.span())
                continue
            product, product_start, named = self._product_before(match.start())
            if prefixed:
                clear = len(parts) > 1 or product is not None
            else:
                clear = len(parts) >= 3 or (named and self._no_unit_after(match.end()))
            if clear:
                self._claim(*match.span())
                if product is not None:
                    self._add(product_start, f"{product} {version}", "version")
                else:
                    self._add(match.start(), version, "version")

    def _bare_versions(self) -> None:
        """A whole number ("PostgreSQL 16", "iOS 17") is a version only right after a known
        technology or a mixed-case product name."""
        for match in _BARE_VERSION.finditer(self.text):
            product = match["product"]
            if (
                self._free(*match.span())
                and _names_product(product)
                and not _ACRONYM.fullmatch(product)
                and self._no_unit_after(match.end())
            ):
                self._claim(*match.span("number"))
                self._add(match.start(), f"{product} {match['number']}", "version")

    def _product_before(self, position: int) -> tuple[str | None, int, bool]:
        """The word right before a version, if it can be a product: (word, where, whether it is a
        named one: a known technology, a mixed-case word or an acronym)."""
        match = _PRODUCT_BEFORE.search(self.text, max(0, position - 48), position)
        if match is None or not self._free(*match.span()):
            return None, position, False
        word = match[0]
        lower = word.casefold()
        if len(word) < 2 or lower in NOT_PRODUCTS or lower in NOT_NAMES or lower in UNITS:
            return None, position, False
        return word, match.start(), _names_product(word)

    def _no_unit_after(self, end: int) -> bool:
        match = _NEXT_WORD.match(self.text, end)
        return match is None or match[1].casefold() not in UNITS

    def _technologies(self) -> None:
        for match in _TECHNOLOGY.finditer(self.text):
            if self._free(*match.span()):
                self._add(match.start(), _POSSESSIVE.sub("", match[0]), "technology")

    def _names(self) -> None:
        """Speaker labels, acronyms, mixed-case words and runs of capitalised words."""
        evidence: set[str] = set()
        speakers: dict[str, bool] = {}
        for match in _SPEAKER.finditer(self.text):
            label = match["label"]
            if label not in speakers:
                words = label.split()
                speakers[label] = all(self._speaker_word(word, len(words)) for word in words)
                if speakers[label]:
                    evidence.update(word.casefold() for word in words)
            if speakers[label] and self._free(*match.span("label")):
                self._add(match.start("label"), label, "person")
        for match in _LOWER_MIXED.finditer(self.text):
            bare, role = _word_role(match[0])
            if role == _ALONE and self._free(*match.span()):
                self._add(match.start(), bare, "name")
        runs: list[tuple[bool, list[tuple[int, str]]]] = []
        for match in _CHUNK.finditer(self.text):
            self._runs(match.start(), match[0], runs)
        for initial, run in runs:
            if not initial or len(run) > 1:
                evidence.update(word.casefold() for _, word in run)
        for initial, run in runs:
            if initial and len(run) == 1 and run[0][1].casefold() not in evidence:
                continue
            if sum(word not in CONNECTORS for _, word in run) > 4:
                continue
            start = run[0][0]
            last_start, last = run[-1]
            self._add(start, self.text[start : last_start + len(last)], "name")

    def _speaker_word(self, word: str, words: int) -> bool:
        lower = word.casefold().replace("\u2019", "'")
        if _word_role(word) != (word, _IN_RUN) or lower in COMMON_INITIAL or lower in NOT_SPEAKERS:
            return False
        # A one-word label also written in lower case ("Summary: ... the summary") is a heading.
        if words > 1:
            return True
        return not self._written_in_lower_case(word.lower())

    def _written_in_lower_case(self, word: str) -> bool:
        found = self.text.find(word)
        while found != -1:
            end = found + len(word)
            if (found == 0 or not self.text[found - 1].isalnum()) and (
                end == len(self.text) or not self.text[end].isalnum()
            ):
                return True
            found = self.text.find(word, end)
        return False

    def _runs(self, offset: int, chunk: str, runs: list[tuple[bool, list[tuple[int, str]]]]) -> None:
        """Split one chunk of capitalised words into runs of plain capitalised words (with "of",
        "van" ... inside), each with whether it opens a sentence. Acronyms and mixed-case words
        stand alone; stopwords break a run."""
        if " " not in chunk and "\t" not in chunk:
            words = [(offset, chunk)]
            shouting = False
        else:
            words = [(offset + match.start(), match[0]) for match in _CHUNK_WORD.finditer(chunk)]
            all_caps = [word for _, word in words if word.isupper()]
            shouting = len(all_caps) >= 3 and any(word.lower() in STOPWORDS for word in all_caps)
        run: list[tuple[int, str]] = []
        for start, word in [*words, (-1, "")]:
            if word in CONNECTORS:
                if run:
                    run.append((start, word))
                continue
            word = word.rstrip("-'\u2019")
            bare, role = _word_role(word) if word else ("", _BREAK)
            if role != _BREAK and not self._free(start, start + len(word)):
                role = _BREAK
            if role == _IN_RUN:
                run.append((start, bare))
                if bare == word:
                    continue
            while run and run[-1][1] in CONNECTORS:
                run.pop()
            if run:
                runs.append(self._opening(run))
                run = []
            if role == _ALONE and not shouting:
                self._add(start, bare, "name")

    def _opening(self, run: list[tuple[int, str]]) -> tuple[bool, list[tuple[int, str]]]:
        """Whether a run opens a sentence; a common verb or adverb before a name at the start of a
        sentence is dropped ("Ask Priya"), which leaves the name mid-sentence."""
        initial = self._opens_sentence(run[0][0])
        if initial and len(run) > 1 and run[0][1].casefold() in COMMON_INITIAL:
            rest = run[1:]
            while rest and rest[0][1] in CONNECTORS:
                rest = rest[1:]
            return False, rest
        return initial, list(run)

    def _opens_sentence(self, position: int) -> bool:
        before = self.text[max(0, position - 64) : position].rstrip(" \t*_")
        if before[-1:] in _OPENING_QUOTES:
            return True  # quoted speech or a quoted label ("Make current again") opens a sentence
        before = before.rstrip(_SENTENCE_OPENERS)
        if not before:
            return True
        last = before[-1]
        if last in "\n\r!?\u2026:":
            return True
        if last != ".":
            return False
        abbreviation = _ABBREVIATION_BEFORE.search(before)
        return abbreviation is None or (
            abbreviation[1].casefold() not in ABBREVIATIONS
            and not (len(abbreviation[1]) == 1 and abbreviation[1].isalpha())  # an initial: "J. R. R. Tolkien"
        )


# How a capitalised word takes part in a name: not at all, as a name of its own (an acronym or a
# mixed-case word), or as a word of a run ("Priya", "Raman" in "Priya Raman").
_BREAK, _ALONE, _IN_RUN = 0, 1, 2


def _word_role(word: str) -> tuple[str, int]:
    """The word without a possessive, and its role."""
    return _cached_word_role(word) if len(word) <= _MAX_CACHED_CHARS else _read_word_role(word)


@lru_cache(maxsize=8192)
def _cached_word_role(word: str) -> tuple[str, int]:
    return _read_word_role(word)


def _read_word_role(word: str) -> tuple[str, int]:
    bare = _POSSESSIVE.sub("", word)
    lower = bare.casefold().replace("\u2019", "'")
    if not bare or lower in TECHNOLOGIES:
        return bare, _BREAK
    if _ACRONYM.fullmatch(bare) or _is_mixed_case(bare):
        return bare, _BREAK if lower in NOT_NAMES or entity_key(bare) in NOT_NAMES else _ALONE
    if (
        len(bare) > 1
        and lower not in STOPWORDS
        and _is_capitalised(bare)
        and not any(character.isdigit() or character == "_" for character in bare)
    ):
        return bare, _IN_RUN
    return bare, _BREAK


def _is_capitalised(word: str) -> bool:
    """Capitalised like "Caroline", "O'Brien" or "Jean-Luc": upper case only where each part starts."""
    if not word[:1].isupper():
        return False
    return not any(character.isupper() for part in _WORD_PARTS.split(word) for character in part[1:])


def _is_mixed_case(word: str) -> bool:
    """Written in mixed case like "PostgreSQL", "PgBouncer", "OAuth", "iOS" or "IPv6"."""
    letters = [character for character in word if character.isalpha()]
    if len(letters) < 2 or not any(character.islower() for character in letters):
        return False
    if letters[0].islower():
        return any(character.isupper() for character in letters)
    return not _is_capitalised(word) and sum(character.isupper() for character in letters) >= 2


def _names_product(word: str) -> bool:
    """Whether a word names a product a bare number can be the version of."""
    lower = word.casefold()
    if lower in NOT_NAMES:
        return False
    return lower in TECHNOLOGIES or lower in ALIASES or _is_mixed_case(word) or bool(_ACRONYM.fullmatch(word))


def _is_path(path: str) -> bool:
    """A path, not "and/or", "TCP/IP", "24/7" or a date: absolute with two parts or a file name,
    home- or dot-relative, or relative ending in a file name or a slash."""
    if path.startswith(("~/", "./", "../")):
        return True
    parts = [part for part in path.split("/") if part]
    if not parts:
        return False
    if path.startswith("/"):
        return len(parts) >= 2 or bool(_EXTENSION.fullmatch(parts[-1]))
    if _HOST_KEY.fullmatch(parts[0].lower()) or len(parts) < 2:
        return False
    return path.endswith("/") or bool(_EXTENSION.fullmatch(parts[-1]))


def _is_address_or_date(parts: list[str]) -> bool:
    """An IPv4 address (four numbers up to 255) or a dotted date (14.03.2025, 2025.03.14)."""
    if len(parts) == 4:
        return all(len(part) <= 3 and int(part) <= 255 for part in parts)
    if len(parts) == 3 and all(len(part) <= 4 for part in parts):
        first, second, third = (int(part) for part in parts)
        return (first <= 31 and second <= 12 and len(parts[2]) == 4 and third >= 1900) or (
            len(parts[0]) == 4 and first >= 1900 and second <= 12 and third <= 31
        )
    return False
