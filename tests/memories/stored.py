"""Writing a memory's columns directly, as a worker would, for tests that need a state no service
call leaves: through `save`, which seals its texts (a queryset's `update` may not). Memories,
notes and entities found by their sealed texts, which no query can match."""

from collections.abc import Callable

from django.db import connection
from django.db.models import QuerySet

from memories.encryption.blind_index import blind_lexeme
from memories.encryption.keys import current_key
from memories.models import Entity, Memory, Note


def store(memory_id: int, **fields: object) -> Memory:
    """Set these fields of the memory and save only them; the memory as stored."""
    memory = Memory.objects.get(pk=memory_id)
    for field, value in fields.items():
        setattr(memory, field, value)
    memory.save(update_fields=list(fields))
    return memory


def texts(**filters: object) -> list[str]:
    """The texts of the memories matching `filters`, in id order (texts are sealed: no query can
    match them, so they are read and opened)."""
    return [memory.content for memory in Memory.objects.filter(**filters).order_by("pk")]


def matching(match: Callable[[str], bool], **filters: object) -> list[Memory]:
    """The memories matching `filters` whose text `match` accepts, in id order."""
    return [memory for memory in Memory.objects.filter(**filters).order_by("pk") if match(memory.content)]


def with_text(text: str, **filters: object) -> Memory:
    """The one memory matching `filters` with exactly this text."""
    (memory,) = matching(lambda content: content == text, **filters)
    return memory


def notes_titled(title: str, **filters: object) -> list[Note]:
    """The notes matching `filters` with exactly this title, in id order."""
    return [note for note in Note.objects.filter(**filters).order_by("pk") if note.title == title]


def blind(space_id: int, lexeme: str) -> str:
    """What the space's index holds for a lexeme (memories.encryption.blind_index)."""
    return blind_lexeme(current_key(space_id), lexeme)


# Another text's index, written over some rows by a raw UPDATE (the triggers' tests): two terms.
OTHER_VECTOR = "'0123456789abcdef':1 'fedcba9876543210':2"


def entities_keyed(key: str, **filters: object) -> QuerySet[Entity]:
    """The entities matching `filters` whose normalised key is `key`."""
    return Entity.objects.filter(pk__in=[entity.pk for entity in Entity.objects.filter(**filters) if entity.key == key])


def copy_sealed(table: str, column: str, source: int, *targets: int) -> None:
    """Copy the sealed `column` of row `source` of `table` into the `targets` rows, as someone
    writing to the database directly would: bound to its own row, it does not open there."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {column} = (SELECT {column} FROM {table} WHERE id = %s) WHERE id = ANY(%s)",
            [source, list(targets)],
        )
