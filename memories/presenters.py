"""The one outward shape of a memory, of a search result and of their lists, shared by MCP and the
REST API: the functions that make them and, next to each, the JSON Schema that states it. MCP
publishes these schemas as its tools' `outputSchema`; the OpenAPI document turns them into its
components (memories.api.serializers). Plain JSON Schema without `$ref`, which every MCP client
reads."""

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from accounts.models import Membership, Role, SpaceInvitation, SpaceKind
from gnosem.types import Owner
from memories.graph.explore import DEFAULT_MAX_TOKENS as DEFAULT_GRAPH_MAX_TOKENS
from memories.graph.explore import (
    EDGES_PER_ENTITY,
    MAX_EDGES,
    MAX_ENTRY_MEMORIES,
    MAX_ENTRY_NOTES,
    MAX_MEMORIES,
    RECENT_MENTIONS,
    GraphView,
)
from memories.graph.linking import SOURCE_WEIGHTS
from memories.models import EntityKind, IndexingStatus, Memory, MemoryRevision, Note, NoteFormat
from memories.notes.services import NotePage
from memories.reading.budget import fit_to_budget, reading_tokens
from memories.search.negation import QueryReading
from memories.search.notes import NoteHit
from memories.search.pipeline import SearchHit
from memories.selectors import MemoryPage, SpaceSummary
from memories.space_keys import SpaceKeyState

Item = TypeVar("Item")


def _object(properties: dict[str, Any], required: Iterable[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_SPACE_PROPERTY: dict[str, Any] = {
    "type": "string",
    "description": "The space it lives in (its name; spaces_list gives the ids): personal or a team's.",
}
_AUTHOR_PROPERTY: dict[str, Any] = {
    "type": ["string", "null"],
    "description": "The user who wrote it (their username; null once that account is gone).",
}
MEMORY_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "format": "uuid"},
    "content": {
        "type": "string",
        "description": "The compressed form when there is one (unless raw), else the text as written.",
    },
    "optimized": {"type": "boolean", "description": "Whether `content` is the compressed form."},
    "content_raw": {"type": "string", "description": "The text as written; present only when `optimized`."},
    "tags": {"type": "array", "items": {"type": "string"}},
    "written_by": {"type": "string", "description": "The client that wrote the memory."},
    "space": _SPACE_PROPERTY,
    "author": _AUTHOR_PROPERTY,
    "shared_from": {
        "type": ["string", "null"],
        "description": "The space it was shared (copied or moved) from, named as it was then; null when written here.",
    },
    "shared_by": {
        "type": ["string", "null"],
        "description": "Who shared it here (their username; null when written here, or once that account is gone).",
    },
    "created_at": {"type": "string", "format": "date-time"},
    "updated_at": {"type": "string", "format": "date-time"},
    "indexing_status": {
        "type": "string",
        "enum": list(IndexingStatus.values),
        "description": (
            "pending: found by exact words only until embedded; indexed: found by meaning too; "
            "failed: found by exact words only until retried (the dashboard's Retry failed)."
        ),
    },
    "tokens": {"type": "integer", "description": "Estimated tokens to read `content`."},
    "pinned": {"type": "boolean", "description": "Standing context: session_start lists pinned memories first."},
    "superseded_by": {
        "type": ["string", "null"],
        "format": "uuid",
        "description": (
            "The memory that corrects this one, or null. A superseded memory is left out of search, counts "
            "and session_start unless include_superseded."
        ),
    },
    "also_written_by": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Other clients that wrote this same text again (stored once).",
    },
    "duplicate_of": {
        "type": ["string", "null"],
        "format": "uuid",
        "description": "The older memory this one restates in other words (a near-duplicate), or null.",
    },
}
_MEMORY_REQUIRED = [name for name in MEMORY_PROPERTIES if name != "content_raw"]
MEMORY_SCHEMA = _object(MEMORY_PROPERTIES, _MEMORY_REQUIRED)
DUPLICATE_PROPERTY: dict[str, Any] = {
    "type": "boolean",
    "description": (
        "True when the same text (case and spacing aside) was already stored: this is that memory, which now "
        "also carries the tags given and lists the writer in also_written_by; nothing new was stored."
    ),
}
WRITTEN_MEMORY_SCHEMA = _object(
    {**MEMORY_PROPERTIES, "duplicate": DUPLICATE_PROPERTY}, [*_MEMORY_REQUIRED, "duplicate"]
)
SEARCH_HIT_SCHEMA = _object(
    {
        **MEMORY_PROPERTIES,
        "score": {"type": "number", "description": "Relevance, 1.0 at best."},
        "duplicates": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "description": (
                "Memories saying the same in other words (near-duplicates), shown once as this result; their "
                "writers are in also_written_by."
            ),
        },
        "explanation": {
            "type": "object",
            "description": (
                "Only with explain. `signals`: rank and raw score in each signal that found the memory; "
                "`fused`: their combined score (1.0 for the best candidate, also counting neighbouring memories); the "
                "factors applied after it (`recency`, `time_window`, `diversity`, each present when applied); "
                "`exclusion` when it names a left-out thing only in passing (kept, factor 1) or lies near one by "
                "meaning (pushed down by its factor); the final `score`."
            ),
        },
    },
    [*_MEMORY_REQUIRED, "score", "duplicates"],
)
# Present when a read is given max_tokens.
CUT_FOR_BUDGET_PROPERTIES: dict[str, Any] = {
    "cut_for_budget": {
        "type": "array",
        "items": {"type": "string", "format": "uuid"},
        "description": (
            "Only with max_tokens: the ids of the memories left out because they did not fit the budget "
            "(read them with memory_get, or ask again with a larger max_tokens)."
        ),
    },
}
QUERY_READING_SCHEMA = _object(
    {
        "searched": {"type": "string", "description": "What was searched for: the query without its negations."},
        "excluded": {
            "type": "array",
            "items": {"type": "string"},
            "description": "What was left out: the exclude argument and the things the query negates.",
        },
        "negations": {
            "type": "array",
            "items": {"type": "string"},
            "description": 'The phrases of the query read as negations, e.g. "not Postgres".',
        },
    },
    ["searched", "excluded", "negations"],
)
SEARCH_RESULTS_SCHEMA = _object(
    {
        "results": {"type": "array", "items": SEARCH_HIT_SCHEMA},
        "query": {
            **QUERY_READING_SCHEMA,
            "description": "How the query was read; present with explain, or when the search left something out.",
        },
        **CUT_FOR_BUDGET_PROPERTIES,
    },
    ["results"],
)
MEMORY_PAGE_SCHEMA = _object(
    {
        "memories": {"type": "array", "items": MEMORY_SCHEMA},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null at the end.",
        },
        **CUT_FOR_BUDGET_PROPERTIES,
    },
    ["memories", "next_cursor"],
)


def memory_to_dict(memory: Memory, *, raw: bool = False) -> dict[str, Any]:
    """A memory as every interface returns it (MEMORY_SCHEMA).

    `content` is the compressed form when there is one (then `content_raw` carries the text as
    written and `optimized` is true); with `raw=True`, or without a compressed form, `content`
    is the text as written. `tokens` estimates the cost of reading `content`.
    """
    optimized = memory.content_optimized is not None and not raw
    successor = memory.superseded_by.public_id if memory.superseded_by is not None else None
    original = memory.duplicate_of.public_id if memory.duplicate_of is not None else None
    data: dict[str, Any] = {
        "id": str(memory.public_id),
        "content": memory.content_optimized if optimized else memory.content,
        "optimized": optimized,
    }
    if optimized:
        data["content_raw"] = memory.content
    data.update(
        tags=list(memory.tags),
        written_by=memory.written_by,
        space=memory.space.name,
        author=_username(memory.author),
        shared_from=memory.shared_from or None,
        shared_by=_username(memory.shared_by),
        created_at=memory.created_at.isoformat(),
        updated_at=memory.updated_at.isoformat(),
        indexing_status=memory.indexing_status,
        tokens=reading_tokens(memory, raw=raw),
        pinned=memory.pinned,
        superseded_by=str(successor) if successor else None,
        also_written_by=list(memory.also_written_by),
        duplicate_of=str(original) if original else None,
    )
    return data


def _username(user: Owner | None) -> str | None:
    return user.get_username() if user is not None else None


def written_memory_to_dict(memory: Memory) -> dict[str, Any]:
    """What a write answers (WRITTEN_MEMORY_SCHEMA): the memory stored, or the one that already held its text."""
    return {**memory_to_dict(memory), "duplicate": memory.written_again}


def search_hit_to_dict(hit: SearchHit, *, raw: bool = False, explain: bool = False) -> dict[str, Any]:
    """A search result (SEARCH_HIT_SCHEMA): the memory's shape plus its `score` and its near-duplicates
    (their writers joining `also_written_by`), and with `explain=True` its `explanation`."""
    data = {**memory_to_dict(hit.memory, raw=raw), "score": round(hit.score, 4)}
    data["duplicates"] = [str(member.public_id) for member in hit.duplicates]
    writers = [*data["also_written_by"], *(w for m in hit.duplicates for w in (m.written_by, *m.also_written_by))]
    data["also_written_by"] = [writer for writer in dict.fromkeys(writers) if writer and writer != data["written_by"]]
    if explain:
        data["explanation"] = hit.explanation
    return data


def search_results_to_dict(
    hits: list[SearchHit],
    *,
    raw: bool = False,
    explain: bool = False,
    max_tokens: int | None = None,
    reading: QueryReading | None = None,
) -> dict[str, Any]:
    """A search's answer (SEARCH_RESULTS_SCHEMA); with `max_tokens`, the best results that fit it;
    with `reading`, how the query was read when explained or when it left something out."""
    hits, cut = _budgeted(hits, lambda hit: hit.memory, raw, max_tokens)
    answer: dict[str, Any] = {"results": [search_hit_to_dict(hit, raw=raw, explain=explain) for hit in hits], **cut}
    if reading and (explain or reading.excluded):
        answer["query"] = reading.as_dict()
    return answer


def memory_page_to_dict(page: MemoryPage, *, raw: bool = False, max_tokens: int | None = None) -> dict[str, Any]:
    """A page of a list (MEMORY_PAGE_SCHEMA); with `max_tokens`, the page's memories that fit it
    (the next page starts after the last one read, cut or not)."""
    memories, cut = _budgeted(page.memories, lambda memory: memory, raw, max_tokens)
    return {
        "memories": [memory_to_dict(memory, raw=raw) for memory in memories],
        "next_cursor": page.next_cursor,
        **cut,
    }


def _budgeted(
    items: list[Item], memory_of: Callable[[Item], Memory], raw: bool, max_tokens: int | None
) -> tuple[list[Item], dict[str, Any]]:
    """The items that fit `max_tokens` and the `cut_for_budget` property (none without a budget)."""
    if max_tokens is None:
        return items, {}
    kept, cut = fit_to_budget(items, lambda item: reading_tokens(memory_of(item), raw=raw), max_tokens)
    return kept, {"cut_for_budget": [str(memory_of(item).public_id) for item in cut]}


REVISION_SCHEMA = _object(
    {
        "content": {"type": "string", "description": "The text as it was."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "written_by": {"type": "string"},
        "valid_from": {"type": "string", "format": "date-time", "description": "When this version took effect."},
        "replaced_at": {"type": "string", "format": "date-time", "description": "When an update replaced it."},
    },
    ["content", "tags", "written_by", "valid_from", "replaced_at"],
)
HISTORY_SCHEMA = _object(
    {
        "memory": MEMORY_SCHEMA,
        "revisions": {
            "type": "array",
            "items": REVISION_SCHEMA,
            "description": "Earlier versions, newest first (the latest 100 are kept).",
        },
    },
    ["memory", "revisions"],
)
COUNT_SCHEMA = _object(
    {
        "count": {"type": "integer", "description": "How many memories match: exact, not estimated."},
        "groups": {
            "type": "array",
            "items": _object({"key": {"type": "string"}, "count": {"type": "integer"}}, ["key", "count"]),
            "description": (
                "Only with group_by, most first. A memory with several tags counts once per tag; untagged "
                'memories form the key "". Months are YYYY-MM (UTC).'
            ),
        },
        "by_meaning": {
            "type": "boolean",
            "description": "False when a query could be matched by its words only (the embedding model failed).",
        },
    },
    ["count", "by_meaning"],
)
SESSION_SCHEMA = _object(
    {
        "text": {
            "type": "string",
            "description": "The context to read: pinned memories (per space), what the user's other assistants and "
            "then teammates wrote since this client's last memory, and with a query the most relevant ones, as "
            "numbered lines.",
        },
        "ids": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "description": "The memory behind each numbered line, in order (line 1 is ids[0]).",
        },
        "pinned": {"type": "integer"},
        "recent": {"type": "integer", "description": "Lines the user's own assistants wrote since."},
        "teammates": {"type": "integer", "description": "Lines teammates wrote in team spaces since."},
        "relevant": {"type": "integer"},
        "left_out": {"type": "integer", "description": "Memories left out for the token budget."},
        "since": {
            "type": ["string", "null"],
            "format": "date-time",
            "description": "When this client last wrote a memory (null: never; then the newest are listed).",
        },
        "memories_total": {"type": "integer", "description": "The user's current (not superseded) memories."},
        "tokens": {"type": "integer", "description": "Estimated tokens of `text` (at most max_tokens)."},
    },
    ["text", "ids", "pinned", "recent", "teammates", "relevant", "left_out", "since", "memories_total", "tokens"],
)


def revision_to_dict(revision: MemoryRevision) -> dict[str, Any]:
    """An earlier version (REVISION_SCHEMA), as history and export both give it."""
    return {
        "content": revision.content,
        "tags": list(revision.tags),
        "written_by": revision.written_by,
        "valid_from": revision.valid_from.isoformat(),
        "replaced_at": revision.replaced_at.isoformat(),
    }


def history_to_dict(memory: Memory, revisions: list[MemoryRevision]) -> dict[str, Any]:
    """A memory and its earlier versions (HISTORY_SCHEMA)."""
    return {"memory": memory_to_dict(memory, raw=True), "revisions": [revision_to_dict(r) for r in revisions]}


GRAPH_ENTITY_SCHEMA = _object(
    {
        "id": {"type": "string", "format": "uuid", "description": "Pass it as `entity_id` to explore from it."},
        "name": {"type": "string", "description": "As first written; or pass it as `entity`."},
        "kind": {"type": "string", "enum": list(EntityKind.values)},
        "depth": {"type": "integer", "description": "Steps from the entry points (0: an entry point)."},
        "memories": {"type": "integer", "description": "Current memories mentioning it."},
        "notes": {"type": "integer", "description": "Notes mentioning it."},
        "first_seen": {"type": ["string", "null"], "format": "date-time", "description": "Its oldest memory's date."},
        "last_seen": {"type": ["string", "null"], "format": "date-time", "description": "Its newest memory's date."},
    },
    ["id", "name", "kind", "depth", "memories", "notes", "first_seen", "last_seen"],
)
GRAPH_EDGE_SCHEMA = _object(
    {
        "source": {"type": "string", "description": "An entity's name."},
        "target": {"type": "string", "description": "An entity's name."},
        "weight": {
            "type": "number",
            "description": (
                "Summed over the memories and notes mentioning both: the smaller of the two mentions' weights, "
                + ", ".join(f"{weight:g} for {source}" for source, weight in SOURCE_WEIGHTS.items())
                + " (a fact the compressed form names, a tag, a name found in the text)."
            ),
        },
        "memories": {"type": "integer", "description": "How many current memories mention both."},
        "notes": {"type": "integer", "description": "How many notes mention both."},
        "via": {
            "type": "array",
            "items": {"type": "string"},
            "description": (
                "How they were named where they were mentioned together lately (the memories memory_ids is "
                "drawn from, and notes): fact keys (PERSON, PROJECT, ...), tag or text."
            ),
        },
        "memory_ids": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "description": (
                f"The newest memory mentioning both (`memories` counts them all), among the {RECENT_MENTIONS} newest "
                "mentioning each: none when both were last named together longer ago. Read it with memory_get when "
                "it is not among the exploration's memories."
            ),
        },
        "note_ids": {
            "type": "array",
            "items": {"type": "string", "format": "uuid"},
            "description": "The most recently changed note mentioning both (read it with note_get).",
        },
    },
    ["source", "target", "weight", "memories", "notes", "via", "memory_ids", "note_ids"],
)
GRAPH_SCHEMA = _object(
    {
        "entry": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The entities explored from: the one named, or those of the query's best results.",
        },
        "entities": {"type": "array", "items": GRAPH_ENTITY_SCHEMA},
        "edges": {
            "type": "array",
            "items": GRAPH_EDGE_SCHEMA,
            "description": (
                f"Strongest first: {EDGES_PER_ENTITY} per entity returned, at most {MAX_EDGES}, always "
                "including the one that links each entity to those nearer the entry."
            ),
        },
        "memories": {
            "type": "array",
            "items": MEMORY_SCHEMA,
            "description": (
                f"What is known about the entry entities: their own memories first (up to {MAX_ENTRY_MEMORIES}; "
                "from an entity, the firmest mentions first, then the newest; from a query, its results mentioning "
                f"them, best first), then those behind the strongest edges; up to {MAX_MEMORIES} in all, within "
                f"max_tokens ({DEFAULT_GRAPH_MAX_TOKENS:,} unless given). Superseded memories never appear; the "
                "others' ids are in the edges' memory_ids and cut_for_budget."
            ),
        },
        "notes": {
            "type": "array",
            "items": _object(
                {"id": {"type": "string", "format": "uuid"}, "title": {"type": "string"}}, ["id", "title"]
            ),
            "description": (
                f"The notes mentioning the entry entities (up to {MAX_ENTRY_NOTES}, most recently changed first), "
                "then those behind the edges (read them with note_get)."
            ),
        },
        **CUT_FOR_BUDGET_PROPERTIES,
    },
    ["entry", "entities", "edges", "memories", "notes", "cut_for_budget"],
)


def graph_to_dict(view: GraphView) -> dict[str, Any]:
    """An exploration of the graph (GRAPH_SCHEMA)."""
    return {
        "entry": [entity.name for entity in view.entry],
        "entities": [
            {
                "id": str(node.entity.public_id),
                "name": node.entity.name,
                "kind": node.entity.kind,
                "depth": node.depth,
                "memories": node.memories,
                "notes": node.notes,
                "first_seen": node.first_seen.isoformat() if node.first_seen else None,
                "last_seen": node.last_seen.isoformat() if node.last_seen else None,
            }
            for node in view.nodes
        ],
        "edges": [
            {
                "source": edge.source.name,
                "target": edge.target.name,
                "weight": edge.weight,
                "memories": edge.memories,
                "notes": edge.notes,
                "via": edge.via,
                "memory_ids": [str(public_id) for public_id in edge.memory_ids],
                "note_ids": [str(public_id) for public_id in edge.note_ids],
            }
            for edge in view.edges
        ],
        "memories": [memory_to_dict(memory) for memory in view.memories],
        "notes": [{"id": str(note.public_id), "title": note.title} for note in view.notes],
        "cut_for_budget": [str(memory.public_id) for memory in view.cut_for_budget],
    }


NOTE_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "format": "uuid"},
    "title": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "format": {"type": "string", "enum": list(NoteFormat.values), "description": "pdf: text taken from a PDF."},
    "space": _SPACE_PROPERTY,
    "author": _AUTHOR_PROPERTY,
    "created_at": {"type": "string", "format": "date-time"},
    "updated_at": {"type": "string", "format": "date-time"},
    "indexing_status": {
        "type": "string",
        "enum": list(IndexingStatus.values),
        "description": "pending: not searchable yet (embedded in the background); indexed: searchable.",
    },
    "tokens": {"type": "integer", "description": "Estimated tokens to read the whole note."},
}
NOTE_SCHEMA = _object(NOTE_PROPERTIES, list(NOTE_PROPERTIES))
NOTE_READ_SCHEMA = _object(
    {
        **NOTE_PROPERTIES,
        "content": {
            "type": "string",
            "description": "The note's text from `start` (all of it, or what max_tokens allows).",
        },
        "start": {"type": "integer", "description": "Where `content` starts in the note (characters)."},
        "next_start": {
            "type": ["integer", "null"],
            "description": "Where the rest starts when max_tokens cut the text (pass it as `start`); null at the end.",
        },
    },
    [*NOTE_PROPERTIES, "content", "start", "next_start"],
)
NOTE_PAGE_SCHEMA = _object(
    {
        "notes": {"type": "array", "items": NOTE_SCHEMA},
        "next_cursor": {
            "type": ["string", "null"],
            "description": "Pass as `cursor` for the next page; null at the end.",
        },
    },
    ["notes", "next_cursor"],
)
SEMANTIC_HIT_SCHEMA = _object(
    {
        "kind": {"type": "string", "enum": ["note", "memory"]},
        "id": {"type": "string", "format": "uuid", "description": "The note's or the memory's id."},
        "score": {"type": "number", "description": "Relevance within its kind, 1.0 for the best."},
        "title": {"type": "string", "description": "Notes: the note's title."},
        "heading": {"type": "string", "description": "Notes: the headings the passage sits under ('' for none)."},
        "passage": {"type": "string", "description": "Notes: the passage that matched best."},
        "start": {"type": "integer", "description": "Notes: where the passage starts (note_get's `start`)."},
        "content": {"type": "string", "description": "Memories: as memory_search returns it."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
    },
    ["kind", "id", "score", "tags"],
)
SEMANTIC_RESULTS_SCHEMA = _object({"results": {"type": "array", "items": SEMANTIC_HIT_SCHEMA}}, ["results"])


def note_to_dict(note: Note) -> dict[str, Any]:
    """A note without its text (NOTE_SCHEMA): what writes and lists return."""
    return {
        "id": str(note.public_id),
        "title": note.title,
        "tags": list(note.tags),
        "format": note.format,
        "space": note.space.name,
        "author": _username(note.author),
        "created_at": note.created_at.isoformat(),
        "updated_at": note.updated_at.isoformat(),
        "indexing_status": note.indexing_status,
        "tokens": note.tokens,
    }


def note_read_to_dict(note: Note, *, start: int = 0, max_tokens: int | None = None) -> dict[str, Any]:
    """A note with its text from `start` (NOTE_READ_SCHEMA), at most `max_tokens` of it (about 4
    characters a token), cut at a line break or white space where there is one."""
    end = len(note.content)
    if max_tokens is not None and start + max_tokens * 4 < end:
        end = start + max_tokens * 4
        cut = max(note.content.rfind("\n", start, end), note.content.rfind(" ", start, end))
        end = cut + 1 if cut > start else end
    return {
        **note_to_dict(note),
        "content": note.content[start:end],
        "start": start,
        "next_start": end if end < len(note.content) else None,
    }


def note_page_to_dict(page: NotePage) -> dict[str, Any]:
    return {"notes": [note_to_dict(note) for note in page.notes], "next_cursor": page.next_cursor}


def semantic_results_to_dict(hits: list[NoteHit | SearchHit]) -> dict[str, Any]:
    """semantic_search's answer (SEMANTIC_RESULTS_SCHEMA): notes with their best passage, memories as read."""
    results = []
    for hit in hits:
        if isinstance(hit, NoteHit):
            results.append(
                {
                    "kind": "note",
                    "id": str(hit.note.public_id),
                    "score": round(hit.score, 4),
                    "title": hit.note.title,
                    "heading": hit.heading,
                    "passage": hit.passage,
                    "start": hit.start,
                    "tags": list(hit.note.tags),
                    "updated_at": hit.note.updated_at.isoformat(),
                }
            )
        else:
            memory = memory_to_dict(hit.memory)
            results.append(
                {
                    "kind": "memory",
                    "id": memory["id"],
                    "score": round(hit.score, 4),
                    "content": memory["content"],
                    "tags": memory["tags"],
                    "created_at": memory["created_at"],
                }
            )
    return {"results": results}


SPACE_SCHEMA = _object(
    {
        "id": {"type": "string", "format": "uuid", "description": "The space's id: pass it (or the name) as `space`."},
        "name": {"type": "string"},
        "kind": {"type": "string", "enum": list(SpaceKind.values), "description": "Your personal space, or a team's."},
        "role": {
            "type": "string",
            "enum": list(Role.values),
            "description": "Yours there: owner, admin and editor write; a viewer only reads.",
        },
        "writable": {"type": "boolean", "description": "Whether this connection may write there."},
        "default": {"type": "boolean", "description": "Writes that name no space go here."},
        "memories": {"type": "integer", "description": "Its current memories."},
        "notes": {"type": "integer"},
    },
    ["id", "name", "kind", "role", "writable", "default", "memories", "notes"],
)
SPACES_SCHEMA = _object({"spaces": {"type": "array", "items": SPACE_SCHEMA}}, ["spaces"])


def space_to_dict(summary: SpaceSummary, *, may_write: bool = True) -> dict[str, Any]:
    """One reached space (SPACE_SCHEMA)."""
    return {
        "id": str(summary.space.public_id),
        "name": summary.space.name,
        "kind": summary.space.kind,
        "role": summary.space.role,
        "writable": may_write and summary.space.can_write,
        "default": summary.default,
        "memories": summary.memories,
        "notes": summary.notes,
    }


def spaces_to_dict(summaries: list[SpaceSummary], *, may_write: bool = True) -> dict[str, Any]:
    """The spaces a caller reaches, as spaces_list shows them."""
    return {"spaces": [space_to_dict(summary, may_write=may_write) for summary in summaries]}


MEMBER_SCHEMA = _object(
    {
        "username": {"type": "string", "description": "Name the member by it to change their role or remove them."},
        "role": {"type": "string", "enum": list(Role.values)},
        "joined_at": {"type": "string", "format": "date-time"},
    },
    ["username", "role", "joined_at"],
)
MEMBERS_SCHEMA = _object(
    {
        "space": {"type": "string", "description": "The space's name."},
        "members": {
            "type": "array",
            "items": MEMBER_SCHEMA,
            "description": "Owners first, then admins, editors, viewers.",
        },
    },
    ["space", "members"],
)


def member_to_dict(membership: Membership) -> dict[str, Any]:
    """A member of a space (MEMBER_SCHEMA)."""
    return {
        "username": membership.user.get_username(),
        "role": membership.role,
        "joined_at": membership.joined_at.isoformat(),
    }


def members_to_dict(space_name: str, memberships: Iterable[Membership]) -> dict[str, Any]:
    """A space's members (MEMBERS_SCHEMA)."""
    return {"space": space_name, "members": [member_to_dict(membership) for membership in memberships]}


INVITATION_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "format": "uuid", "description": "Withdraw the invitation by it."},
    "role": {"type": "string", "enum": list(Role.values), "description": "What it joins as (never owner)."},
    "created_by": {"type": ["string", "null"], "description": "Who made it (null once that account is gone)."},
    "created_at": {"type": "string", "format": "date-time"},
    "expires_at": {"type": "string", "format": "date-time"},
}
INVITATION_SCHEMA = _object(INVITATION_PROPERTIES, list(INVITATION_PROPERTIES))
INVITATIONS_SCHEMA = _object(
    {"invitations": {"type": "array", "items": INVITATION_SCHEMA, "description": "Those still usable, newest first."}},
    ["invitations"],
)
ISSUED_INVITATION_SCHEMA = _object(
    {
        **INVITATION_PROPERTIES,
        "secret": {
            "type": "string",
            "description": "The invitation's secret (shown this once, never stored): whoever has it may join once.",
        },
        "url": {"type": "string", "description": "The link to send, holding the secret."},
    },
    [*INVITATION_PROPERTIES, "secret", "url"],
)


def invitation_to_dict(invitation: SpaceInvitation) -> dict[str, Any]:
    """An invitation to a space, without its secret (INVITATION_SCHEMA)."""
    return {
        "id": str(invitation.public_id),
        "role": invitation.role,
        "created_by": _username(invitation.created_by),
        "created_at": invitation.created_at.isoformat(),
        "expires_at": invitation.expires_at.isoformat(),
    }


SPACE_KEY_SCHEMA = _object(
    {
        "space": {"type": "string", "description": "The space's name."},
        "key_version": {
            "type": "integer",
            "description": "The version of the data key that seals everything written now (0: nothing sealed yet).",
        },
        "rotating": {
            "type": "boolean",
            "description": "Whether what older keys sealed is still being sealed again, or their time to go is not up.",
        },
        "sealed_under_newest": {
            "type": "integer",
            "description": "Rows (memories, versions, notes, passages) sealed under it.",
        },
        "total": {"type": "integer", "description": "Rows in all."},
    },
    ["space", "key_version", "rotating", "sealed_under_newest", "total"],
)


def space_key_to_dict(state: SpaceKeyState) -> dict[str, Any]:
    """A space's key and rotation (SPACE_KEY_SCHEMA)."""
    return {
        "space": state.space.name,
        "key_version": state.progress.version,
        "rotating": state.rotating,
        "sealed_under_newest": state.progress.done,
        "total": state.progress.total,
    }
