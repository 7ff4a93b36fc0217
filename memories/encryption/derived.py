"""What a memory's row holds derived from its text and tags, which the database cannot read (they
are sealed, memories.encryption.fields): the blind full-text vector and its length
(memories.encryption.blind_index), the keyed digest that finds the same text written again,
whether the text ends with a question mark, each tag's keyed digest and its clients' keyed
digests; a note's tag digests; a note passage's blind vector; an entity's key digest.
`Memory.save` derives a memory's when its text or space changed (its tag and client digests when
those are saved), `Note.save` a note's; writers that insert in bulk call `derive_stored_forms`
(or, for passages, `derive_passage_vectors`) first.
"""

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from memories.encryption.blind_index import analyse, blind_vector
from memories.encryption.fields import UnreadableList, UnreadableText
from memories.encryption.keys import DataKey, current_key, key_for, readable_keys

if TYPE_CHECKING:
    from memories.models import Memory, Note, NoteChunk

# A memory's fields digested, and the fields that hold their digests.
DIGESTED_FIELDS = {
    "tags": "tag_digests",
    "written_by": "written_by_digest",
    "also_written_by": "also_written_by_digests",
}
DERIVED_FIELDS = (
    "key_version",
    "search_vector",
    "search_length",
    "content_digest",
    "is_question",
    *DIGESTED_FIELDS.values(),
)
# Hex digits of the text digest kept (128 bits).
DIGEST_CHARS = 32


def text_digest(key: DataKey, text: str) -> str:
    """The text's digest under a space key, its case and white space runs aside: two writes of
    the same text, however spaced or capitalised, have the same one."""
    return key.mac("digest", " ".join(text.split()).lower()).hex()[:DIGEST_CHARS]


def entity_digest(key: DataKey, entity_key: str) -> str:
    """An entity's normalised key (memories.entities.extraction.entity_key) as its space finds it
    under a space key: `Entity.key_digest`."""
    return key.mac("entity", entity_key).hex()[:DIGEST_CHARS]


def tag_digest(key: DataKey, tag: str) -> str:
    """A tag as tag filters match it under a space key (`tag_digests` of memories and notes)."""
    return key.mac("tag", tag).hex()[:DIGEST_CHARS]


def client_digest(key: DataKey, client: str) -> str:
    """A client's name (`written_by`) as the client filter, session_start and sequences compare
    it under a space key (`written_by_digest` and `also_written_by_digests` of memories)."""
    return key.mac("client", client).hex()[:DIGEST_CHARS]


def digests_under_every_key(digest: Callable[[DataKey, str], str], value: str, space_ids: Iterable[int]) -> list[str]:
    """`value`'s digests under every key of these spaces: a row of theirs holds `value` when its
    digest is any of them, whichever key version it was made under."""
    return [digest(key, value) for keys in readable_keys(list(space_ids)).values() for key in keys]


def tag_variants(tag: str, space_ids: Iterable[int]) -> list[str]:
    """The tag's digests under every key of these spaces, as `tag_digests` hold them."""
    return digests_under_every_key(tag_digest, tag, space_ids)


def client_variants(client: str, space_ids: Iterable[int]) -> list[str]:
    """The client's digests under every key of these spaces, as `written_by_digest` holds them."""
    return digests_under_every_key(client_digest, client, space_ids)


def _digested(row: "Memory | Note", key: DataKey) -> None:
    """Set the row's tag digests under `key`, unless its tags did not open (their digests stay)."""
    if not isinstance(row.tags, UnreadableList):
        row.tag_digests = [tag_digest(key, tag) for tag in row.tags]


def _clients_digested(memory: "Memory", key: DataKey) -> None:
    """Set the memory's client digests under `key`, but those of names that did not open."""
    if not isinstance(memory.written_by, UnreadableText):
        memory.written_by_digest = client_digest(key, memory.written_by)
    if not isinstance(memory.also_written_by, UnreadableList):
        memory.also_written_by_digests = [client_digest(key, client) for client in memory.also_written_by]


def derive_stored_forms(memories: "Sequence[Memory]") -> None:
    """Set each memory's derived columns from its text and tags, under its space's current key."""
    keys: dict[int, DataKey] = {}
    for memory, analysis in zip(memories, analyse([memory.content for memory in memories]), strict=True):
        key = keys.get(memory.space_id) or keys.setdefault(memory.space_id, current_key(memory.space_id))
        memory.key_version = key.version
        memory.search_vector = blind_vector(key, analysis)
        memory.search_length = analysis.length
        memory.content_digest = text_digest(key, memory.content)
        memory.is_question = memory.content.rstrip(" \t\r\n").endswith("?")
        memory.derived_from = (memory.space_id, memory.content)
        _digested(memory, key)
        _clients_digested(memory, key)


def derive_digests(memories: "Sequence[Memory]") -> None:
    """Set each memory's tag and client digests under the key version its other derived columns name."""
    for memory in memories:
        key = key_for(memory.space_id, memory.key_version)
        _digested(memory, key)
        _clients_digested(memory, key)


def derive_note_tag_digests(notes: "Sequence[Note]") -> None:
    """Set each note's tag digests, and the key version they are under: its space's current one."""
    for note in notes:
        key = current_key(note.space_id)
        note.key_version = key.version
        _digested(note, key)


def derived_changed(memory: "Memory") -> bool:
    """Whether the memory's text or space differs from those its derived columns were made from
    (another space's key indexes it differently)."""
    return memory.derived_from != (memory.space_id, memory.content)


def derive_passage_vectors(chunks: "Sequence[NoteChunk]") -> None:
    """Set each passage's blind full-text vector (memories.encryption.blind_index) from its text,
    under its space's current key; the distinct texts are analysed in one query."""
    texts = list(dict.fromkeys(chunk.text for chunk in chunks))
    analyses = dict(zip(texts, analyse(texts), strict=True))
    keys: dict[int, DataKey] = {}
    for chunk in chunks:
        key = keys.get(chunk.space_id) or keys.setdefault(chunk.space_id, current_key(chunk.space_id))
        chunk.key_version = key.version
        chunk.search_vector = blind_vector(key, analyses[chunk.text])
