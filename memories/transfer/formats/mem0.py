"""mem0's memories as JSON: the open-source `Memory.get_all()` answer (`{"results": [...]}`, or a
plain list from older versions) and the platform's export (`{"memories": [...]}` or a list), each
item a memory with `memory` (its text), `id`, `user_id` / `agent_id` / `run_id` / `app_id`,
`metadata`, `categories`, `created_at` and `updated_at` (the platform's `session_id` is the run).

Each item becomes a memory dated as in mem0, written by "mem0", tagged with its ids
(`mem0-user:alice`, `mem0-agent:…`, `mem0-run:…`, `mem0-app:…`, `mem0-actor:…`), its categories,
its metadata's plain values (`key:value`) and the labels of a metadata `tags` list.
"""

from gnosem.errors import ValidationError
from gnosem.json_input import JsonInputError, load_json
from memories.transfer.formats.reading import ForeignFile, ForeignMemory, tag_from, tags_from, time_from

NAME = "mem0"
WRITTEN_BY = "mem0"
# The ids a memory is scoped by (the platform calls the run `session_id`), and the tag of each.
ID_FIELDS = {
    "user_id": "mem0-user",
    "agent_id": "mem0-agent",
    "run_id": "mem0-run",
    "session_id": "mem0-run",
    "app_id": "mem0-app",
    "actor_id": "mem0-actor",
}
# Metadata whose list of labels are tags as they are.
LABEL_LISTS = ("tags", "labels")
# The fields of an item that hold its text, the first present wins.
TEXT_FIELDS = ("memory", "text", "content")


def items_of(document: object) -> list | None:
    """The list of memories in a mem0 document, or None when it is not one."""
    if isinstance(document, dict):
        document = document.get("results", document.get("memories"))
    if isinstance(document, list) and all(isinstance(item, dict) for item in document):
        if not document or any(field in document[0] for field in TEXT_FIELDS):
            return document
    return None


def read(data: bytes) -> ForeignFile:
    """The memories of a mem0 JSON file; ValidationError naming the entry of anything unreadable."""
    try:
        document = load_json(data)
    except JsonInputError as error:
        raise ValidationError("file", f"{error.problem}; expected mem0's memories (.json).") from None
    items = items_of(document)
    if items is None:
        raise ValidationError("file", 'is not mem0 memories: expected {"results": [...]} or a list of memories.')
    memories = []
    for number, item in enumerate(items, start=1):
        where = f"entry {number}"
        text = next((item[field] for field in TEXT_FIELDS if field in item), None)
        if not isinstance(text, str):
            raise ValidationError("file", f'{where}: "memory" must be text.')
        ids = [f"{prefix}:{value}" for field, prefix in ID_FIELDS.items() if (value := tag_from(item.get(field)))]
        categories = item.get("categories") or []
        metadata = item.get("metadata") or {}
        if not isinstance(categories, list) or not isinstance(metadata, dict):
            raise ValidationError("file", f'{where}: "categories" must be a list and "metadata" an object.')
        plain = [f"{key}:{value}" for key, value in metadata.items() if isinstance(value, str | int | float)]
        labels = [label for key in LABEL_LISTS if isinstance(metadata.get(key), list) for label in metadata[key]]
        memories.append(
            ForeignMemory(
                content=text,
                source=where,
                tags=tags_from(*ids, *categories, *labels, *plain),
                written_by=WRITTEN_BY,
                created_at=time_from(item.get("created_at"), where),
                updated_at=time_from(item.get("updated_at"), where),
            )
        )
    return ForeignFile(format=NAME, records=len(items), memories=memories)
