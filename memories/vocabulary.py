"""The words the app's parts share and must agree on, free of Django so that the entity extractor
can use them: the keys of a memory's compressed form (`KEY=value|...`), which the compression prompt
asks the model for and entity extraction reads facts by; and the kinds of entity with the longest
key and name one may have."""

FACT_KEYS = (
    "TOPIC",
    "PROJECT",
    "DECISION",
    "PREFERENCE",
    "PERSON",
    "PLACE",
    "DATE",
    "STACK",
    "PROBLEM",
    "SOLUTION",
    "GOAL",
    "CONSTRAINT",
    "FACT",
    "EVENT",
)

# The kinds of entity, and the longest key and name one may have: memories.models builds the
# Entity table's choices and columns from these, so the extractor never makes what it cannot store.
KINDS = (
    "person",
    "project",
    "place",
    "technology",
    "topic",
    "tag",
    "handle",
    "identifier",
    "version",
    "path",
    "host",
    "name",
)
MAX_ENTITY_KEY_CHARS = 100
MAX_ENTITY_NAME_CHARS = 200  # a name is its key before normalisation: longer, it is mostly punctuation
