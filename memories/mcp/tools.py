"""The MCP tools: their definitions and thin handlers over the memory services and selectors.

Errors a caller can fix (bad arguments, unknown ids, a read-only token) come back as tool
results with `isError: true` and a message saying what to change, so the model can retry.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from accounts.models import ApiToken
from accounts.reach import Reach, SpaceNotFound, token_reach
from accounts.spaces import space_members
from gnosem.errors import GnosemError, NotFound, PermissionDenied
from gnosem.errors import ValidationError as MemoryValidationError
from memories import selectors, services
from memories.graph.explore import EntityNotFound, graph_explore
from memories.mcp import schemas
from memories.mcp.arguments import check_arguments
from memories.notes import services as notes
from memories.presenters import (
    COUNT_SCHEMA,
    GRAPH_SCHEMA,
    HISTORY_SCHEMA,
    MEMBERS_SCHEMA,
    MEMORY_PAGE_SCHEMA,
    MEMORY_SCHEMA,
    NOTE_PAGE_SCHEMA,
    NOTE_READ_SCHEMA,
    NOTE_SCHEMA,
    SEARCH_RESULTS_SCHEMA,
    SEMANTIC_RESULTS_SCHEMA,
    SESSION_SCHEMA,
    SPACES_SCHEMA,
    WRITTEN_MEMORY_SCHEMA,
    graph_to_dict,
    history_to_dict,
    members_to_dict,
    memory_page_to_dict,
    memory_to_dict,
    note_page_to_dict,
    note_read_to_dict,
    note_to_dict,
    search_results_to_dict,
    semantic_results_to_dict,
    spaces_to_dict,
    written_memory_to_dict,
)
from memories.reading.counting import memory_count
from memories.reading.session import session_start
from memories.search.about import ABOUT_MIN_SIMILARITY
from memories.search.negation import read_query
from memories.search.notes import semantic_search
from memories.search.pipeline import search_hybrid
from memories.sharing import memory_share
from memories.validation import (
    clean_exclude,
    clean_filters,
    clean_limit,
    clean_max_tokens,
    clean_memory_id,
    written_by_or_default,
)


@dataclass(frozen=True)
class Caller:
    """Who is calling: the token decides the spaces reached (read once per request); the client
    name only labels writes."""

    token: ApiToken
    client_name: str | None = None

    @cached_property
    def reach(self) -> Reach:
        return token_reach(self.token)


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Caller, dict[str, Any]], dict[str, Any]]
    read_only: bool
    destructive: bool = False
    idempotent: bool = False

    def definition(self) -> dict[str, Any]:
        """The tool as `tools/list` describes it."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            },
        }


_Given = TypeVar("_Given")


def _client(caller: Caller, written_by: _Given | None = None) -> _Given | str:
    return written_by_or_default(written_by, token_name=caller.token.name, client_name=caller.client_name)


def _within(caller: Caller, arguments: dict[str, Any]) -> Reach:
    """The caller's reach, narrowed to the space the arguments name (if any)."""
    return caller.reach.narrowed(arguments.get("space"))


def _write(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    memory = services.memory_write(
        owner=caller.reach,
        content=arguments["content"],
        tags=arguments.get("tags"),
        written_by=_client(caller, arguments.get("written_by")),
        supersedes=arguments.get("supersedes"),
        space=arguments.get("space"),
    )
    shape = written_memory_to_dict(memory)
    return {key: shape[key] for key in schemas.WRITE_OUTPUT["properties"]}


def _search(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    hits = search_hybrid(
        owner=_within(caller, arguments),
        query=arguments["query"],
        top_k=arguments.get("top_k"),
        filters=clean_filters(arguments),
        min_score=arguments.get("min_score"),
        half_life_days=arguments.get("half_life_days"),
        diversity=arguments.get("diversity"),
        exclude=arguments.get("exclude"),
    )
    return search_results_to_dict(
        hits,
        raw=arguments.get("raw", False),
        explain=arguments.get("explain", False),
        max_tokens=clean_max_tokens(arguments.get("max_tokens")),
        reading=read_query(arguments["query"], clean_exclude(arguments.get("exclude"))),
    )


def _list(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    page = selectors.memory_list(
        owner=_within(caller, arguments),
        filters=clean_filters(arguments),
        limit=clean_limit(arguments.get("limit")),
        cursor=arguments.get("cursor"),
    )
    return memory_page_to_dict(
        page, raw=arguments.get("raw", False), max_tokens=clean_max_tokens(arguments.get("max_tokens"))
    )


def _get(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    memory = selectors.memory_get(owner=caller.reach, public_id=clean_memory_id(arguments["id"]))
    return memory_to_dict(memory, raw=arguments.get("raw", False))


def _update(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    public_id = clean_memory_id(arguments["id"])
    changes = {key: arguments[key] for key in services.UPDATABLE_FIELDS if key in arguments}
    return memory_to_dict(services.memory_update(owner=caller.reach, public_id=public_id, **changes))


def _delete(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    public_id = clean_memory_id(arguments["id"])
    services.memory_delete(owner=caller.reach, public_id=public_id)
    return {"id": str(public_id), "deleted": True}


def _history(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    return history_to_dict(*selectors.memory_history(owner=caller.reach, public_id=clean_memory_id(arguments["id"])))


def _count(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    return memory_count(
        owner=_within(caller, arguments),
        filters=clean_filters(arguments),
        query=arguments.get("query"),
        group_by=arguments.get("group_by"),
    ).as_dict()


def _explore_graph(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    max_tokens = clean_max_tokens(arguments.get("max_tokens"))
    view = graph_explore(
        owner=_within(caller, arguments),
        entity=arguments.get("entity"),
        entity_id=arguments.get("entity_id"),
        query=arguments.get("query"),
        depth=arguments.get("depth"),
        limit=arguments.get("limit"),
        max_tokens=max_tokens,
    )
    return graph_to_dict(view)


def _note_write(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    note = notes.note_write(
        owner=caller.reach,
        title=arguments["title"],
        content=arguments["content"],
        tags=arguments.get("tags"),
        space=arguments.get("space"),
    )
    return note_to_dict(note)


def _note_get(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    note = notes.note_get(owner=caller.reach, public_id=notes.clean_note_id(arguments["id"]))
    start = notes.clean_note_start(arguments.get("start"), note=note)
    return note_read_to_dict(note, start=start, max_tokens=clean_max_tokens(arguments.get("max_tokens")))


def _note_list(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    page = notes.note_list(
        owner=_within(caller, arguments),
        tags=arguments.get("tags"),
        limit=arguments.get("limit"),
        cursor=arguments.get("cursor"),
    )
    return note_page_to_dict(page)


def _note_update(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    changes = {key: arguments[key] for key in ("title", "content", "tags") if key in arguments}
    return note_to_dict(
        notes.note_update(owner=caller.reach, public_id=notes.clean_note_id(arguments["id"]), **changes)
    )


def _note_delete(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    notes.note_delete(owner=caller.reach, public_id=notes.clean_note_id(arguments["id"]))
    return {"id": str(arguments["id"]), "deleted": True}


def _semantic_search(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    hits = semantic_search(
        owner=_within(caller, arguments),
        query=arguments["query"],
        kinds=arguments.get("kinds"),
        top_k=arguments.get("top_k"),
        tags=arguments.get("tags"),
        exclude=arguments.get("exclude"),
    )
    return semantic_results_to_dict(hits)


def _session_start(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    return session_start(
        owner=_within(caller, arguments),
        client=_client(caller),
        query=arguments.get("query"),
        max_tokens=arguments.get("max_tokens"),
    ).as_dict()


def _spaces_list(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    return spaces_to_dict(selectors.space_summaries(caller.reach), may_write=caller.reach.may_write)


def _space_members(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    """Only reading: who joins, leaves or holds which role is for people to decide, on the dashboard
    or over REST, not for an assistant."""
    space = caller.reach.find(arguments["space"])
    return members_to_dict(space.name, space_members(user=caller.reach.user, space_id=space.public_id))


def _share(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    """A copy, or with `move` the memory itself: one tool rather than two, since both take the same
    memory and space, keep the same rules and answer the same shape, and a shorter tool list is
    easier for a model to choose from."""
    memory = memory_share(
        owner=caller.reach,
        public_id=clean_memory_id(arguments["id"]),
        space=arguments["space"],
        move=arguments.get("move", False),
        actor_token=caller.token,
    )
    return written_memory_to_dict(memory)


_ALL_TOOLS = (
    Tool(
        name="session_start",
        title="Start a session with the user's memory",
        description=(
            "Call this first in every conversation. Returns, within a token budget, the user's standing context "
            "(pinned memories), what other assistants saved since this client last wrote, and with `query` (the "
            "user's first request) the most relevant memories: one text block plus the ids behind its lines."
        ),
        input_schema=schemas.SESSION_START_INPUT,
        output_schema=SESSION_SCHEMA,
        run=_session_start,
        read_only=True,
    ),
    Tool(
        name="spaces_list",
        title="List the spaces this connection reaches",
        description=(
            "The spaces your memories live in: the user's personal space and the team spaces they belong to, "
            "each with the user's role, whether you may write there, how much it holds, and which one takes "
            "writes that name no `space`. Reads cover every space unless you pass `space`; save what the team "
            "should know to the team space and private matters to the personal one."
        ),
        input_schema=schemas.SPACES_LIST_INPUT,
        output_schema=SPACES_SCHEMA,
        run=_spaces_list,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="space_members",
        title="List a space's members",
        description=(
            "Who belongs to a space you reach and with which role (owner, admin, editor, viewer): who will read "
            "what you save to a team space. Changing members and roles is for people to do, on the dashboard."
        ),
        input_schema=schemas.SPACE_MEMBERS_INPUT,
        output_schema=MEMBERS_SCHEMA,
        run=_space_members,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="memory_write",
        title="Save a memory",
        description=(
            "Save something worth remembering across conversations and assistants: a decision and its "
            "reason, a preference, a fact about a project, person or system, a fix that worked. Write "
            "it as a self-contained statement (who/what/why), one topic per memory. It is findable by "
            "exact words at once and by meaning a moment later. Returns the new memory's id; the same "
            "text written again returns the stored memory with duplicate: true. When it corrects older "
            "memories, name them in `supersedes`."
        ),
        input_schema=schemas.WRITE_INPUT,
        output_schema=schemas.WRITE_OUTPUT,
        run=_write,
        read_only=False,
    ),
    Tool(
        name="memory_search",
        title="Search memories",
        description=(
            "Find the user's saved memories relevant to a question, by meaning and by exact words "
            "(error codes, SHAs, versions, names). Use it before answering anything that may depend on "
            "earlier decisions, preferences, projects or people. Best matches first, each with a score; "
            "filter by tags, client (written_by) or creation date. Time words in the query ('last Thursday', "
            "'in May 2023', 'yesterday') favour memories written then. To leave a topic out ('databases other "
            "than Postgres'), pass it in exclude (or write the negation in the query): search by meaning alone "
            "would return that topic first."
        ),
        input_schema=schemas.SEARCH_INPUT,
        output_schema=SEARCH_RESULTS_SCHEMA,
        run=_search,
        read_only=True,
    ),
    Tool(
        name="memory_list",
        title="List memories",
        description=(
            "Browse the user's memories newest first, optionally filtered by tags, client or creation "
            "date, a page at a time (pass next_cursor back as cursor). For finding something specific, "
            "memory_search is better."
        ),
        input_schema=schemas.LIST_INPUT,
        output_schema=MEMORY_PAGE_SCHEMA,
        run=_list,
        read_only=True,
    ),
    Tool(
        name="memory_get",
        title="Read a memory",
        description="Read one memory by its id (from memory_search, memory_list or memory_write).",
        input_schema=schemas.GET_INPUT,
        output_schema=MEMORY_SCHEMA,
        run=_get,
        read_only=True,
    ),
    Tool(
        name="memory_update",
        title="Correct a memory",
        description=(
            "Change a memory that became wrong or incomplete: new content, tags or client name (only "
            "the fields given change; the previous version is kept, see memory_history). Prefer this to "
            "writing a second, contradicting memory. Also pins or unpins it, and marks other memories as "
            "superseded by it."
        ),
        input_schema=schemas.UPDATE_INPUT,
        output_schema=MEMORY_SCHEMA,
        run=_update,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="memory_delete",
        title="Delete a memory",
        description="Delete a memory for good, by id. Use when the user asks to forget something or it is obsolete.",
        input_schema=schemas.DELETE_INPUT,
        output_schema=schemas.DELETE_OUTPUT,
        run=_delete,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="memory_share",
        title="Share a memory into another space",
        description=(
            "Put a memory into another space you may write to, when the user asks to share it with a team (or "
            "to bring a team's memory into their personal space): a copy by default, the original staying where "
            "it is; with move: true the memory itself moves and leaves its space. It arrives marked with where "
            "it came from and who shared it (shared_from, shared_by). Returns the memory in its new space."
        ),
        input_schema=schemas.SHARE_INPUT,
        output_schema=WRITTEN_MEMORY_SCHEMA,
        run=_share,
        read_only=False,
        destructive=True,
    ),
    Tool(
        name="memory_history",
        title="Earlier versions of a memory",
        description="A memory as it is now and every earlier version an update replaced, newest first, by id.",
        input_schema=schemas.HISTORY_INPUT,
        output_schema=HISTORY_SCHEMA,
        run=_history,
        read_only=True,
    ),
    Tool(
        name="memory_count",
        title="Count memories",
        description=(
            "How many memories the user has: all, those passing the filters, or with `query` those about a topic "
            f"(an own passage with similarity at least {ABOUT_MIN_SIMILARITY:g} to it, or every word of it). Exact, "
            "not estimated; group_by counts per tag, client, month, space or author. Use it for 'how many ...' "
            "questions instead of counting search results."
        ),
        input_schema=schemas.COUNT_INPUT,
        output_schema=COUNT_SCHEMA,
        run=_count,
        read_only=True,
    ),
    Tool(
        name="semantic_search",
        title="Search notes and memories",
        description=(
            "Find the user's notes (long documents: design docs, runbooks, meeting notes, PDFs) and memories "
            "matching a question, by meaning and by exact words. A note answers once, with the passage that "
            "matched and the headings it sits under; read more of it with note_get from the passage's `start`."
        ),
        input_schema=schemas.SEMANTIC_SEARCH_INPUT,
        output_schema=SEMANTIC_RESULTS_SCHEMA,
        run=_semantic_search,
        read_only=True,
    ),
    Tool(
        name="note_write",
        title="Save a note",
        description=(
            "Save a long document the user wants kept whole (a design doc, runbook, meeting notes, a spec) with a "
            "title: Markdown or plain text. It is searchable with semantic_search a moment later, passage by "
            "passage. For a single fact or decision use memory_write instead."
        ),
        input_schema=schemas.NOTE_WRITE_INPUT,
        output_schema=NOTE_SCHEMA,
        run=_note_write,
        read_only=False,
    ),
    Tool(
        name="note_get",
        title="Read a note",
        description="Read a note's text by id, from `start` on, at most `max_tokens` of it if given.",
        input_schema=schemas.NOTE_GET_INPUT,
        output_schema=NOTE_READ_SCHEMA,
        run=_note_get,
        read_only=True,
    ),
    Tool(
        name="note_list",
        title="List notes",
        description="The user's notes, most recently changed first (titles, tags, sizes; not their text).",
        input_schema=schemas.NOTE_LIST_INPUT,
        output_schema=NOTE_PAGE_SCHEMA,
        run=_note_list,
        read_only=True,
    ),
    Tool(
        name="note_update",
        title="Change a note",
        description=(
            "Replace a note's title, text or tags (only those given): the new text replaces the whole note and is "
            "embedded again."
        ),
        input_schema=schemas.NOTE_UPDATE_INPUT,
        output_schema=NOTE_SCHEMA,
        run=_note_update,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="note_delete",
        title="Delete a note",
        description="Delete a note for good, by id, with its passages. Use when the user asks to drop a document.",
        input_schema=schemas.NOTE_DELETE_INPUT,
        output_schema=schemas.NOTE_DELETE_OUTPUT,
        run=_note_delete,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="explore_graph",
        title="Explore people, projects and things across memories",
        description=(
            "See what the user's memories say about an entity and how it connects: from an entity (a person, "
            "project, place, technology, error code, ...) or from a query, the memories and notes mentioning it, the "
            "entities that appear together with it, how strongly and how (fact keys, tags, text), and the memories "
            "that link them. Use it for questions about a person or project as a whole, or to find what is related "
            "to something across many memories; depth 2 goes one step further."
        ),
        input_schema=schemas.EXPLORE_GRAPH_INPUT,
        output_schema=GRAPH_SCHEMA,
        run=_explore_graph,
        read_only=True,
    ),
)
TOOLS: dict[str, Tool] = {tool.name: tool for tool in _ALL_TOOLS}


def tools_for(token: ApiToken) -> list[Tool]:
    """The tools this token may call: a read token sees only the read tools."""
    return [tool for tool in _ALL_TOOLS if tool.read_only or token.can_write]


def tool_call(tool: Tool, arguments: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Run a tool; errors the caller can fix become an `isError` result saying what to fix."""
    try:
        if not tool.read_only and not caller.token.can_write:
            raise PermissionDenied(
                f"{tool.name} changes memories, but this token is read-only. Create a write token "
                "(dashboard > Tokens, or `manage.py createtoken USER --scope write`) and configure "
                "this client with it."
            )
        structured = tool.run(caller, check_arguments(tool.input_schema, arguments))
    except GnosemError as exc:
        return _error_result(_explain(exc))
    return {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "structuredContent": structured,
        "isError": False,
    }


def _explain(exc: GnosemError) -> str:
    if isinstance(exc, MemoryValidationError):
        return f"Invalid argument `{exc.field}`: {exc.message}"
    if isinstance(exc, SpaceNotFound):
        return f"{exc} spaces_list shows the spaces you reach."
    if isinstance(exc, EntityNotFound):
        return str(exc)
    if isinstance(exc, notes.NoteNotFound):
        return f"{exc} Check the id; note_list or semantic_search show the ids of your notes."
    if isinstance(exc, NotFound):
        return f"{exc} Check the id; memory_search or memory_list show the ids of your memories."
    return str(exc)


def _error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
