"""JSON Schemas of the MCP tools' arguments and results.

Kept to plain JSON Schema (no `$ref`) that every revision and client understands. Bounds and
defaults come from memories.validation, which enforces them; the memory's shapes from
memories.presenters, which makes them. This module adds the descriptions a model reads.
"""

from typing import Any

from django.conf import settings

from accounts.models import MAX_SPACE_NAME_CHARS
from memories.graph.explore import DEFAULT_ENTITY_LIMIT, MAX_DEPTH, MAX_ENTITY_LIMIT
from memories.graph.explore import DEFAULT_MAX_TOKENS as DEFAULT_GRAPH_MAX_TOKENS
from memories.models import MAX_CONTENT_CHARS, MAX_NOTE_TITLE_CHARS, MAX_TAGS
from memories.notes.services import NOTE_START_SCHEMA
from memories.presenters import DUPLICATE_PROPERTY, MEMORY_PROPERTIES
from memories.reading.counting import GROUPINGS
from memories.search.notes import KINDS as SEARCH_KINDS
from memories.validation import (
    CONTENT_SCHEMA,
    DEFAULT_SESSION_MAX_TOKENS,
    EXCLUDE_SCHEMA,
    FRACTION_SCHEMA,
    HALF_LIFE_DAYS_SCHEMA,
    LIMIT_SCHEMA,
    MAX_LIST_LIMIT,
    MAX_TOKENS_SCHEMA,
    MAX_TOP_K,
    MEMORY_ID_SCHEMA,
    QUERY_SCHEMA,
    SUPERSEDES_SCHEMA,
    TAGS_SCHEMA,
    TOP_K_SCHEMA,
    WRITTEN_BY_SCHEMA,
)
from memories.vocabulary import MAX_ENTITY_NAME_CHARS

# Inputs -------------------------------------------------------------------------------------

_ID = {**MEMORY_ID_SCHEMA, "description": "The memory's id, as returned by memory_write."}
_CONTENT = {
    **CONTENT_SCHEMA,
    "description": (
        "The memory itself: one self-contained fact, decision or preference, written so that it "
        f"makes sense on its own months later (who, what, why). Up to {MAX_CONTENT_CHARS:,} characters."
    ),
}
_TAGS = {
    **TAGS_SCHEMA,
    "description": (
        f"Up to {MAX_TAGS} short labels such as a project or topic (letters, digits and . _ : / -; "
        'stored lower-case), e.g. ["billing", "decision"].'
    ),
}
_TAGS_FILTER = {**_TAGS, "description": "Only memories carrying all of these tags."}
_EXCLUDE = {
    **EXCLUDE_SCHEMA,
    "examples": [["Postgres"], ["E503", "staging"]],
    "description": (
        "Things to leave out: words, identifiers, tags or names whose memories must not come back, e.g. "
        '["Postgres"] for "databases other than Postgres". A memory about the thing is left out; one that '
        'names it only in passing ("moved off Postgres to MySQL") stays. Negation written in the query '
        '("not X", "other than X", "except X", "-E503") is read the same way.'
    ),
}
_WRITTEN_BY = {
    **WRITTEN_BY_SCHEMA,
    "description": (
        "The client that wrote the memory. Leave it out: it defaults to this MCP client's name (sent "
        "with each 2026-07-28 request), or else to the name of the API token in use."
    ),
}
_WRITTEN_BY_FILTER = {**WRITTEN_BY_SCHEMA, "description": "Only memories written by this client (exact name)."}
_CREATED_AFTER = {
    "type": "string",
    "examples": ["2025-06-01", "2025-06-01T09:30:00Z"],
    "description": "Only memories created at or after this ISO 8601 date or date-time, e.g. 2025-06-01.",
}
_CREATED_BEFORE = {
    "type": "string",
    "examples": ["2025-07-01", "2025-07-01T00:00:00Z"],
    "description": "Only memories created before this ISO 8601 date or date-time, e.g. 2025-07-01T00:00:00Z.",
}
_RAW = {
    "type": "boolean",
    "default": False,
    "description": "Return the text exactly as written instead of its compressed form.",
}

_INCLUDE_SUPERSEDED = {
    "type": "boolean",
    "default": False,
    "description": "Include memories that a later memory superseded (corrected); they are left out by default.",
}
_MAX_TOKENS = {
    **MAX_TOKENS_SCHEMA,
    "description": (
        "A token budget (tokens estimated as characters / 4): return only as many memories, best or newest "
        "first, as fit; the ids of the others come back in cut_for_budget."
    ),
}
_SUPERSEDES = {
    **SUPERSEDES_SCHEMA,
    "description": (
        "Ids of older memories this one corrects or replaces (e.g. an outdated schedule). They stay stored, "
        "pointing to this one, but leave search, counts and session_start."
    ),
}


_SPACE_FILTER = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_SPACE_NAME_CHARS,
    "description": "Only this space (its name or id, as spaces_list gives them); default: every space you reach.",
}
_SPACE_TARGET = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_SPACE_NAME_CHARS,
    "description": (
        "The space to write to (its name or id, as spaces_list gives them): a team space for what the team "
        "should know, the personal one for private matters. Default: your default write space."
    ),
}
SPACES_LIST_INPUT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_SPACE_NAMED = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_SPACE_NAME_CHARS,
    "description": "The space's name or id, as spaces_list gives them.",
}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


WRITE_INPUT = _object(
    {
        "content": _CONTENT,
        "tags": _TAGS,
        "written_by": _WRITTEN_BY,
        "supersedes": _SUPERSEDES,
        "space": _SPACE_TARGET,
    },
    ("content",),
)
SEARCH_INPUT = _object(
    {
        "query": {
            **QUERY_SCHEMA,
            "description": (
                "What to look for, as a question or keywords; exact identifiers (error codes, SHAs) work too."
            ),
        },
        "top_k": {**TOP_K_SCHEMA, "description": f"How many memories to return (1-{MAX_TOP_K})."},
        "exclude": _EXCLUDE,
        "tags": _TAGS_FILTER,
        "written_by": _WRITTEN_BY_FILTER,
        "created_after": _CREATED_AFTER,
        "created_before": _CREATED_BEFORE,
        "min_score": {
            **FRACTION_SCHEMA,
            "default": 0,
            "description": "Leave out results scoring below this (scores run from 0 to 1.0 at best).",
        },
        "half_life_days": {
            **HALF_LIFE_DAYS_SCHEMA,
            "description": (
                "Recency boost: newer memories rank a little higher, the boost halving every this many days "
                f"(this server's default: {settings.GNOSEM_HALF_LIFE_DAYS:g}). 0 turns it off, e.g. when asking "
                "about old events."
            ),
        },
        "diversity": {
            **FRACTION_SCHEMA,
            "description": (
                "How strongly near-duplicates of better results are pushed down (0 = pure relevance, "
                f"1 = most diverse; this server's default: {settings.GNOSEM_DIVERSITY:g})."
            ),
        },
        "explain": {
            "type": "boolean",
            "default": False,
            "description": (
                "Add to each result how its score came about (each signal's rank and score, each factor), and "
                "how the query was read (what was searched, what was left out)."
            ),
        },
        "include_superseded": _INCLUDE_SUPERSEDED,
        "max_tokens": _MAX_TOKENS,
        "raw": _RAW,
        "space": _SPACE_FILTER,
    },
    ("query",),
)
LIST_INPUT = _object(
    {
        "limit": {**LIMIT_SCHEMA, "description": f"How many memories per page (1-{MAX_LIST_LIMIT})."},
        "cursor": {"type": "string", "description": "The next_cursor of the previous page; omit for the newest."},
        "tags": _TAGS_FILTER,
        "written_by": _WRITTEN_BY_FILTER,
        "created_after": _CREATED_AFTER,
        "created_before": _CREATED_BEFORE,
        "include_superseded": _INCLUDE_SUPERSEDED,
        "max_tokens": _MAX_TOKENS,
        "raw": _RAW,
        "space": _SPACE_FILTER,
    }
)
GET_INPUT = _object({"id": _ID, "raw": _RAW}, ("id",))
UPDATE_INPUT = _object(
    {
        "id": _ID,
        "content": {**_CONTENT, "description": "New text replacing the memory's content."},
        "tags": {**_TAGS, "description": "New tags replacing all of the memory's tags ([] removes them)."},
        "written_by": {**_WRITTEN_BY, "description": "New client name for the memory."},
        "pinned": {
            "type": "boolean",
            "description": "Pin (true) or unpin (false): pinned memories open every session_start as standing context.",
        },
        "supersedes": {
            **_SUPERSEDES,
            "description": "Ids of other memories this one corrects: they leave search, counts and session_start.",
        },
    },
    ("id",),
)
DELETE_INPUT = _object({"id": _ID}, ("id",))
SHARE_INPUT = _object(
    {
        "id": _ID,
        "space": {
            **_SPACE_NAMED,
            "description": (
                "The space to share it into (its name or id, as spaces_list gives them): one you may write to, "
                "not the one it is in."
            ),
        },
        "move": {
            "type": "boolean",
            "default": False,
            "description": (
                "false (the default): share a copy, a new memory with an id of its own, and the original stays. "
                "true: move the memory itself, keeping its id; it leaves the space it is in."
            ),
        },
    },
    ("id", "space"),
)
SPACE_MEMBERS_INPUT = _object({"space": _SPACE_NAMED}, ("space",))
HISTORY_INPUT = _object({"id": _ID}, ("id",))
COUNT_INPUT = _object(
    {
        "query": {
            **QUERY_SCHEMA,
            "description": (
                "Count only memories about this topic, e.g. 'auth' or 'deploy schedule' (by meaning, or containing "
                "every word of it); leave it out to count all."
            ),
        },
        "group_by": {
            "type": "string",
            "enum": list(GROUPINGS),
            "description": "Also count per tag, client (written_by), month of creation, space or author.",
        },
        "tags": _TAGS_FILTER,
        "written_by": _WRITTEN_BY_FILTER,
        "created_after": _CREATED_AFTER,
        "created_before": _CREATED_BEFORE,
        "include_superseded": _INCLUDE_SUPERSEDED,
        "space": _SPACE_FILTER,
    }
)
EXPLORE_GRAPH_INPUT = _object(
    {
        "entity": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ENTITY_NAME_CHARS,
            "description": (
                "Start from this entity: a person, project, place, technology, tag, @handle, error code, version, "
                "file path or host named in the memories (case, plurals and common aliases do not matter)."
            ),
        },
        "entity_id": {
            "type": "string",
            "format": "uuid",
            "description": "Start instead from the entity with this id (each entity explore_graph returns has one).",
        },
        "query": {
            **QUERY_SCHEMA,
            "description": "Start instead from the entities of the memories best matching this query.",
        },
        "depth": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_DEPTH,
            "default": 1,
            "description": "Steps from the starting entities: 1 their neighbours, 2 also the neighbours' neighbours.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_ENTITY_LIMIT,
            "default": DEFAULT_ENTITY_LIMIT,
            "description": "The most entities to return, the strongest links first.",
        },
        "max_tokens": {
            **MAX_TOKENS_SCHEMA,
            "description": (
                f"The most tokens the memories may take (default {DEFAULT_GRAPH_MAX_TOKENS:,}): the starting "
                "entities' own first, then those behind the edges; those over it are listed in cut_for_budget."
            ),
        },
        "space": _SPACE_FILTER,
    }
)
SESSION_START_INPUT = _object(
    {
        "query": {
            **QUERY_SCHEMA,
            "description": "The user's first request or the topic: adds the memories most relevant to it.",
        },
        "max_tokens": {
            **MAX_TOKENS_SCHEMA,
            "default": DEFAULT_SESSION_MAX_TOKENS,
            "description": f"The most tokens the context may take (default {DEFAULT_SESSION_MAX_TOKENS:,}).",
        },
        "space": _SPACE_FILTER,
    }
)

# Outputs that only MCP has (the memory's own shapes are memories.presenters') ----------------

_WRITE_FIELDS = ("id", "indexing_status", "tags", "written_by", "created_at", "tokens")
WRITE_OUTPUT = _object(
    {**{name: MEMORY_PROPERTIES[name] for name in _WRITE_FIELDS}, "duplicate": DUPLICATE_PROPERTY},
    (*_WRITE_FIELDS, "duplicate"),
)
DELETE_OUTPUT = _object({"id": MEMORY_ID_SCHEMA, "deleted": {"type": "boolean", "const": True}}, ("id", "deleted"))


# Notes -----------------------------------------------------------------------------------------

_NOTE_ID = {"type": "string", "format": "uuid", "description": "The note's id, as note_write or note_list return."}
_NOTE_TITLE = {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_TITLE_CHARS, "description": "One line."}
_NOTE_CONTENT = {
    "type": "string",
    "minLength": 1,
    "maxLength": settings.GNOSEM_NOTE_MAX_BYTES,
    "description": (
        f"The document: Markdown (headings and paragraphs make its searchable passages) or plain text, up to "
        f"{settings.GNOSEM_NOTE_MAX_BYTES:,} bytes."
    ),
}
NOTE_WRITE_INPUT = _object(
    {
        "title": _NOTE_TITLE,
        "content": _NOTE_CONTENT,
        "tags": {**_TAGS, "description": "Labels such as a project."},
        "space": _SPACE_TARGET,
    },
    ("title", "content"),
)
NOTE_GET_INPUT = _object(
    {
        "id": _NOTE_ID,
        "start": {
            **NOTE_START_SCHEMA,
            "description": "Read from this character on (a search passage's `start`, or a previous `next_start`).",
        },
        "max_tokens": {
            **MAX_TOKENS_SCHEMA,
            "description": "Read at most this many tokens; `next_start` says where the rest starts.",
        },
    },
    ("id",),
)
NOTE_LIST_INPUT = _object(
    {
        "tags": {**_TAGS, "description": "Only notes carrying all of these tags."},
        "limit": {**LIMIT_SCHEMA, "description": f"How many notes per page (1-{MAX_LIST_LIMIT})."},
        "cursor": {"type": "string", "description": "next_cursor of the previous page."},
        "space": _SPACE_FILTER,
    }
)
NOTE_UPDATE_INPUT = _object(
    {
        "id": _NOTE_ID,
        "title": _NOTE_TITLE,
        "content": {**_NOTE_CONTENT, "description": "New text replacing the whole note."},
        "tags": {**_TAGS, "description": "New tags replacing all of the note's tags ([] removes them)."},
    },
    ("id",),
)
NOTE_DELETE_INPUT = _object({"id": _NOTE_ID}, ("id",))
NOTE_DELETE_OUTPUT = _object(
    {"id": {"type": "string", "format": "uuid"}, "deleted": {"type": "boolean", "const": True}}, ("id", "deleted")
)
SEMANTIC_SEARCH_INPUT = _object(
    {
        "query": {**QUERY_SCHEMA, "description": "What to look for, in any words."},
        "kinds": {
            "type": "array",
            "items": {"type": "string", "enum": list(SEARCH_KINDS)},
            "minItems": 1,
            "default": list(SEARCH_KINDS),
            "description": "Search notes, memories or both (default both).",
        },
        "top_k": {**TOP_K_SCHEMA, "description": f"How many results in all, 1-{MAX_TOP_K} (default 10)."},
        "tags": {**_TAGS, "description": "Only notes and memories carrying all of these tags."},
        "exclude": {
            **_EXCLUDE,
            "description": (
                "Things to leave out: words, identifiers, tags or names. Memories about them and notes tagged "
                "with or titled after them are left out; negation in the query is read the same way."
            ),
        },
        "space": _SPACE_FILTER,
    },
    ("query",),
)
