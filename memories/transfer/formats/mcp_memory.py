"""The MCP reference memory server's file (`@modelcontextprotocol/server-memory`, `memory.jsonl`):
one JSON object per line, an entity (`{"type": "entity", "name", "entityType", "observations"}`)
or a relation (`{"type": "relation", "from", "to", "relationType"}`).

Read: each observation becomes a memory "<entity>: <observation>" tagged with its entity (a tag in
the namespace its type maps to, `entity_tag`), so the graph links an entity's memories; an entity
without observations becomes "<entity> is a(n) <type>."; a relation becomes "<from> <relation>
<to>." tagged with both entities and `relation:<relation>`, which links the two in the graph. The
file holds no dates: everything is dated at the import.

Written (`graph_lines`): every memory is one observation of the entity it is most about (its
entity tag, else its strongest mention in the graph, else `UNSORTED`), and every memory tagged
`relation:<relation>` with two entity tags is a relation between them.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gnosem.errors import ValidationError
from gnosem.json_input import JsonInputError, load_json
from memories.models import MAX_TAG_CHARS
from memories.transfer.formats.reading import ForeignFile, ForeignMemory, text_lines

NAME = "mcp-memory"
# Entity types and the tag namespace (memories.entities.words.TAG_NAMESPACES) each maps to; any other
# type is a topic.
TYPE_NAMESPACES = {
    "person": "person",
    "people": "person",
    "user": "person",
    "project": "project",
    "place": "place",
    "location": "place",
    "city": "place",
    "country": "place",
    "technology": "tech",
    "tool": "tech",
    "software": "tech",
    "language": "tech",
    "framework": "tech",
    "library": "tech",
}
NAMESPACE_TYPES = {"person": "person", "project": "project", "place": "place", "tech": "technology"}
RELATION_PREFIX = "relation:"
# The entity a memory about nothing in particular is written under.
UNSORTED = ("Unsorted memories", "memories")
_NOT_IN_TAG = re.compile(r"[^a-z0-9._/-]+")


def entity_tag(name: str, entity_type: str) -> str | None:
    """The tag that names an entity: "person:alice-smith"; None when its name has nothing a tag
    can hold."""
    namespace = TYPE_NAMESPACES.get(entity_type.strip().casefold(), "topic")
    value = _NOT_IN_TAG.sub("-", name.casefold()).strip("-._/")[: MAX_TAG_CHARS - len(namespace) - 1]
    return f"{namespace}:{value}" if value else None


def relation_tag(relation: str) -> str | None:
    """The tag that names a relation's kind: "relation:works_at"."""
    value = _NOT_IN_TAG.sub("-", relation.casefold()).strip("-._/")[: MAX_TAG_CHARS - len(RELATION_PREFIX)]
    return RELATION_PREFIX + value if value else None


def is_first_line(line: bytes) -> bool:
    """Whether a file's first line is one of a `memory.jsonl`: an entity or a relation."""
    try:
        item = load_json(line)
    except JsonInputError:
        return False
    return isinstance(item, dict) and item.get("type") in ("entity", "relation")


def _text(value: object, what: str, line: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("file", f"line {line}: {what} must be non-empty text.")
    return " ".join(value.split())


def read(data: bytes) -> ForeignFile:
    """The memories a `memory.jsonl` holds; ValidationError naming the line of anything unreadable."""
    entities: dict[str, tuple[str, int]] = {}  # name: (type, line)
    memories: list[ForeignMemory] = []
    relations: list[tuple[int, str, str, str]] = []
    skipped: list[str] = []
    records = 0
    for number, line in text_lines(data):
        try:
            item = load_json(line)
        except JsonInputError as error:
            raise ValidationError("file", f"line {number}: {error.problem}.") from None
        if not isinstance(item, dict) or item.get("type") not in ("entity", "relation"):
            raise ValidationError("file", f'line {number}: not an entity or a relation (no "type" of either).')
        records += 1
        if item["type"] == "relation":
            relations.append(
                (
                    number,
                    _text(item.get("from"), '"from"', number),
                    _text(item.get("relationType"), '"relationType"', number),
                    _text(item.get("to"), '"to"', number),
                )
            )
            continue
        name = _text(item.get("name"), '"name"', number)
        entity_type = _text(item.get("entityType"), '"entityType"', number)
        observations = item.get("observations", [])
        if not isinstance(observations, list):
            raise ValidationError("file", f'line {number}: "observations" must be a list of texts.')
        if name in entities:
            skipped.append(f"line {number}: a second entity named {name!r} (line {entities[name][1]}) was left out.")
            continue
        entities[name] = (entity_type, number)
        tags = [tag] if (tag := entity_tag(name, entity_type)) else []
        texts = [_text(observation, "every observation", number) for observation in observations]
        article = "an" if entity_type[0].casefold() in "aeiou" else "a"
        for text in texts or [f"{name} is {article} {entity_type}."]:
            content = f"{name}: {text}" if texts else text
            memories.append(ForeignMemory(content=content, source=f"line {number}", tags=tags))
    for number, source, relation, target in relations:
        missing = [name for name in (source, target) if name not in entities]
        if missing:
            names = ", ".join(map(repr, missing))
            skipped.append(f"line {number}: the relation names {names}, which is no entity of the file.")
            continue
        labels = [entity_tag(name, entities[name][0]) for name in (source, target)] + [relation_tag(relation)]
        tags = [tag for tag in dict.fromkeys(labels) if tag]
        content = f"{source} {relation.replace('_', ' ')} {target}."
        memories.append(ForeignMemory(content=content, source=f"line {number}", tags=tags))
    return ForeignFile(format=NAME, records=records, memories=memories, skipped=skipped)


@dataclass(frozen=True)
class GraphMemory:
    """What the writer needs of one memory: its text, its tags and the entity it is most about in
    the graph (name and kind), if any."""

    content: str
    tags: list[str]
    strongest: tuple[str, str] | None


def graph_lines(memories: list[GraphMemory]) -> Iterator[str]:
    """The lines of a `memory.jsonl` holding these memories."""
    names = {tag: head for memory in memories for tag in memory.tags if (head := _named_head(tag, memory.content))}
    observations: dict[str, tuple[str, list[str]]] = {}  # name: (type, observations)
    relations: list[dict[str, str]] = []
    for memory in memories:
        named = [(tag, names.get(tag) or tag.partition(":")[2]) for tag in memory.tags if _is_entity_tag(tag)]
        kind = next((tag for tag in memory.tags if tag.startswith(RELATION_PREFIX)), None)
        if kind and len(named) >= 2:
            relations.append({"from": named[0][1], "to": named[1][1], "relationType": kind[len(RELATION_PREFIX) :]})
            continue
        if named:
            tag, name = named[0]
            entity_type = NAMESPACE_TYPES.get(tag.partition(":")[0], "topic")
        elif memory.strongest:
            name, entity_type = memory.strongest
        else:
            name, entity_type = UNSORTED
        prefix = f"{name}: "
        text = memory.content[len(prefix) :] if memory.content.startswith(prefix) else memory.content
        observations.setdefault(name, (entity_type, []))[1].append(text)
    for name, (entity_type, texts) in observations.items():
        yield _line({"type": "entity", "name": name, "entityType": entity_type, "observations": texts})
    for name in {end for relation in relations for end in (relation["from"], relation["to"])} - set(observations):
        yield _line({"type": "entity", "name": name, "entityType": "topic", "observations": []})
    for edge in relations:
        yield _line({"type": "relation", **edge})


def _is_entity_tag(tag: str) -> bool:
    namespace, colon, value = tag.partition(":")
    return bool(colon and value) and namespace in ("topic", *NAMESPACE_TYPES)


def _named_head(tag: str, content: str) -> str | None:
    """The name the memory's text opens with ("Alice Smith: ...") when the entity tag was made from
    it: how the entity is spelled."""
    head, colon, _ = content.partition(": ")
    if colon and _is_entity_tag(tag) and entity_tag(head, NAMESPACE_TYPES.get(tag.partition(":")[0], "topic")) == tag:
        return head
    return None


def _line(item: dict) -> str:
    return json.dumps(item, ensure_ascii=False) + "\n"
