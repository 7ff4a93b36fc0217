"""The REST API answers as the OpenAPI document it serves says. For every operation, real answers
(successes and each error the document declares) are validated with jsonschema against the schema
the served document gives for their status and media type, as the MCP tests validate tool results
against `outputSchema`; and every status the document declares is one the API really gives."""

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import jsonschema
import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client
from django.utils import timezone
from referencing import Registry
from referencing.jsonschema import DRAFT7

from accounts.models import Membership, Role, Space, SpaceInvitation, SpaceKind
from accounts.spaces import space_invitation_create, team_space_create
from gnosem.env import Rate
from memories import services
from memories.graph.linking import entities_link
from memories.models import MAX_CONTENT_CHARS, MAX_TAGS, MAX_WRITTEN_BY_CHARS, CompressionStatus, Memory, Quota
from memories.notes import services as notes
from memories.transfer.document import FORMAT, VERSION
from memories.transfer.jobs import import_job_create
from tests.memories.stored import store

DOCUMENT_URI = "urn:gnosem:openapi"
MEMORIES = "/api/v1/memories"
MEMORY = "/api/v1/memories/{public_id}"
SEARCH = "/api/v1/memories/search"
EXPORT = "/api/v1/export"
SPACES = "/api/v1/spaces"
IMPORT = "/api/v1/import"
IMPORTS = "/api/v1/imports"
IMPORT_JOB = "/api/v1/imports/{public_id}"
IMPORT_JOB_START = "/api/v1/imports/{public_id}/start"
USAGE = "/api/v1/usage"
COUNT = "/api/v1/memories/count"
HISTORY = "/api/v1/memories/{public_id}/history"
CONTEXT = "/api/v1/context"
MERGE = "/api/v1/memories/{public_id}/merge"
KEEP_APART = "/api/v1/memories/{public_id}/keep-apart"
REINSTATE = "/api/v1/memories/{public_id}/reinstate"
GRAPH = "/api/v1/graph"
NOTES = "/api/v1/notes"
NOTE = "/api/v1/notes/{public_id}"
SEMANTIC = "/api/v1/search"
SPACE = "/api/v1/spaces/{space_id}"
SPACE_MEMBERS = "/api/v1/spaces/{space_id}/members"
SPACE_MEMBER = "/api/v1/spaces/{space_id}/members/{username}"
SPACE_LEAVE = "/api/v1/spaces/{space_id}/leave"
SPACE_HAND_OVER = "/api/v1/spaces/{space_id}/hand-over"
SPACE_KEY = "/api/v1/spaces/{space_id}/key"
INVITATIONS = "/api/v1/spaces/{space_id}/invitations"
INVITATION = "/api/v1/spaces/{space_id}/invitations/{invitation_id}"
ACCEPT = "/api/v1/invitations/accept"
SHARE = "/api/v1/memories/{public_id}/share"


def served_document() -> dict[str, Any]:
    response = Client().get("/api/v1/schema", headers={"Accept": "application/json"})
    assert response.status_code == 200
    return json.loads(response.content)


def as_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's schema dialect as plain JSON Schema: `nullable: true` becomes a "null" type."""
    if isinstance(node, list):
        return [as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: as_json_schema(value) for key, value in node.items()}
    if converted.get("nullable") is True:
        del converted["nullable"]
        converted["type"] = [converted["type"], "null"]
    return converted


def pointer(*parts: str) -> str:
    return "#/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def body_of(response: HttpResponse) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def assert_conforms(document: dict[str, Any], method: str, path: str, response: HttpResponse) -> None:
    """The answer's status is declared for the operation, and its body matches what is declared."""
    declared = document["paths"][path][method]["responses"]
    status = str(response.status_code)
    assert status in declared, f"{method.upper()} {path} answered {status}, not declared ({sorted(declared)})"
    content = declared[status].get("content")
    if content is None:
        assert body_of(response) == b"", f"{method.upper()} {path} {status} declares no body"
        return
    media_type = response["Content-Type"].split(";")[0].strip()
    assert media_type in content, f"{method.upper()} {path} {status} answered {media_type}, not one of {list(content)}"
    registry = Registry().with_resource(DOCUMENT_URI, DRAFT7.create_resource(as_json_schema(document)))
    schema_ref = DOCUMENT_URI + pointer("paths", path, method, "responses", status, "content", media_type, "schema")
    validator = jsonschema.Draft7Validator(
        {"$ref": schema_ref}, registry=registry, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )
    validator.validate(json.loads(body_of(response)))


@dataclass
class World:
    """An owner with a write and a read token, memories of theirs (one compressed), a stranger's."""

    settings: Any
    token: str
    read_token: str
    memory: Memory
    compressed: Memory
    strangers: Memory

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = "",
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
        **params: Any,
    ) -> HttpResponse:
        """A request with the owner's write token (`token`: another one, or None for none); `params`
        go into the query string of a GET or of a DELETE without a body."""
        token = self.token if token == "" else token
        headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
        client = Client()
        if method == "get":
            return client.get(path, params, headers=headers)
        if method == "delete" and body is None:
            return client.delete(f"{path}?{urlencode(params)}" if params else path, headers=headers)
        data = body if isinstance(body, str) else json.dumps(body)
        return getattr(client, method)(path, data, content_type=content_type, headers=headers)

    def send_accepting_html(self, method: str, path: str) -> HttpResponse:
        path = path.format(
            public_id=self.memory.public_id, space_id=uuid.uuid4(), username="viewer", invitation_id=uuid.uuid4()
        )
        return self.send(method, path, {}, headers={"Accept": "text/html"})

    def send_text(self, method: str, path: str) -> HttpResponse:
        """A form-like text body, as a client that forgot the JSON content type sends."""
        return self.send(method, path, "content=x", content_type="text/plain")

    def over_rate_limit(self) -> None:
        """The token's one request a minute is spent."""
        self.settings.GNOSEM_TOKEN_RATE_LIMIT = Rate(count=1, seconds=60)
        assert self.send("get", USAGE).status_code == 200


@pytest.fixture
def world(settings, owner, stranger, owner_token, owner_read_token) -> World:
    settings.GNOSEM_TOKEN_RATE_LIMIT = None
    settings.GNOSEM_IMPORT_RATE_LIMIT = None
    memory = services.memory_write(owner=owner, content="The staging database is pg-staging-2.", tags=["db"])
    compressed = services.memory_write(owner=owner, content="We deploy on Tuesdays, never on Fridays: " * 12)
    store(compressed.pk, content_optimized="DEPLOY_DAY=tuesday", compression_status=CompressionStatus.COMPRESSED)
    strangers = services.memory_write(owner=stranger, content="The stranger's own note about the staging database.")
    return World(settings, owner_token, owner_read_token, memory, compressed, strangers)


def an_export(*contents: str) -> dict[str, Any]:
    memories = [
        {"content": content, "tags": [], "written_by": "", "created_at": "2025-05-01T12:00:00+00:00"}
        for content in contents
    ]
    return {"format": FORMAT, "version": VERSION, "memories": memories}


def over_quota(world: World) -> None:
    Quota.objects.create(user=world.memory.author, max_memories=1)


def rate_limited(send: Callable[[World], HttpResponse]) -> Callable[[World], HttpResponse]:
    def run(world: World) -> HttpResponse:
        world.over_rate_limit()
        return send(world)

    return run


def body_limit(size: int, send: Callable[[World], HttpResponse]) -> Callable[[World], HttpResponse]:
    def run(world: World) -> HttpResponse:
        world.settings.DATA_UPLOAD_MAX_MEMORY_SIZE = size
        world.settings.GNOSEM_IMPORT_MAX_BYTES = size
        return send(world)

    return run


def quota_full(send: Callable[[World], HttpResponse]) -> Callable[[World], HttpResponse]:
    def run(world: World) -> HttpResponse:
        over_quota(world)
        return send(world)

    return run


def second_import(world: World) -> HttpResponse:
    world.settings.GNOSEM_IMPORT_RATE_LIMIT = Rate(count=1, seconds=3600)
    assert world.send("post", IMPORT, an_export("first")).status_code == 200
    return world.send("post", IMPORT, an_export("second"))


def second_upload(world: World) -> HttpResponse:
    world.settings.GNOSEM_IMPORT_RATE_LIMIT = Rate(count=1, seconds=3600)
    assert world.send("post", IMPORTS, an_export("first")).status_code == 201
    return world.send("post", IMPORTS, an_export("second"))


def an_import(world: World, path: str, owner: Any = None) -> str:
    """`path` for an import previewed for the owner (or `owner`)."""
    job = import_job_create(owner=owner or world.memory.author, data=json.dumps(an_export("to import")).encode())
    return path.format(public_id=job.public_id)


def a_strangers_import(world: World, path: str) -> str:
    return an_import(world, path, owner=world.strangers.author)


def mine(world: World, path: str = MEMORY) -> str:
    return path.format(public_id=world.memory.public_id)


def theirs(world: World, path: str = MEMORY) -> str:
    return path.format(public_id=world.strangers.public_id)


def compressed(world: World) -> str:
    return MEMORY.format(public_id=world.compressed.public_id)


def linked(world: World, path: str) -> str:
    """The compressed memory marked a near-duplicate of the other, as indexing would mark one."""
    Memory.objects.filter(pk=world.compressed.pk).update(duplicate_of=world.memory)
    return path.format(public_id=world.compressed.public_id)


def in_graph(world: World) -> World:
    """The owner's memories with their entities linked, as indexing links them."""
    entities_link([world.memory.pk, world.compressed.pk])
    return world


def my_note(world: World) -> str:
    """A note of the owner's (written now, not embedded)."""
    note = notes.note_write(owner=world.memory.author, title="Runbook", content="# Runbook\n\nRestart the worker.")
    return NOTE.format(public_id=note.public_id)


def their_note(world: World) -> str:
    note = notes.note_write(owner=world.strangers.author, title="Theirs", content="The stranger's own note.")
    return NOTE.format(public_id=note.public_id)


def memory_action_cases(path: str, *, success: Callable[[World], str], refused: str | None) -> list["Case"]:
    """The cases of a POST acting on one memory: done, refused (when the action can be), and the errors of any."""
    cases = [
        Case("post", path, 200, "done", lambda w: w.send("post", success(w))),
        Case("post", path, 401, "no token", lambda w: w.send("post", mine(w, path), token=None)),
        Case("post", path, 403, "a read token", lambda w: w.send("post", success(w), token=w.read_token)),
        Case("post", path, 404, "a stranger's memory", lambda w: w.send("post", theirs(w, path))),
        Case("post", path, 429, "over the rate limit", rate_limited(lambda w: w.send("post", success(w)))),
    ]
    if refused:
        cases.append(Case("post", path, 400, refused, lambda w: w.send("post", mine(w, path))))
    return cases


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    status: int
    name: str
    send: Callable[[World], HttpResponse]


CASES = [
    # GET /memories
    Case("get", MEMORIES, 200, "a page with a next cursor", lambda w: w.send("get", MEMORIES, limit=1)),
    Case("get", MEMORIES, 200, "the last page, raw", lambda w: w.send("get", MEMORIES, raw="true", tags="db")),
    Case("get", MEMORIES, 400, "a limit out of range", lambda w: w.send("get", MEMORIES, limit=0)),
    Case("get", MEMORIES, 400, "a cursor that is none", lambda w: w.send("get", MEMORIES, cursor="nonsense")),
    Case("get", MEMORIES, 401, "no token", lambda w: w.send("get", MEMORIES, token=None)),
    Case("get", MEMORIES, 429, "over the rate limit", rate_limited(lambda w: w.send("get", MEMORIES))),
    # POST /memories
    Case(
        "post", MEMORIES, 201, "a write", lambda w: w.send("post", MEMORIES, {"content": "Use pnpm.", "tags": ["js"]})
    ),
    Case(
        "post",
        MEMORIES,
        201,
        "a write naming its client",
        lambda w: w.send("post", MEMORIES, {"content": "x", "written_by": ""}),
    ),
    Case(
        "post", MEMORIES, 400, "an unknown field", lambda w: w.send("post", MEMORIES, {"content": "x", "colour": "red"})
    ),
    Case("post", MEMORIES, 400, "malformed JSON", lambda w: w.send("post", MEMORIES, "{")),
    Case("post", MEMORIES, 415, "a body that is not JSON", lambda w: w.send_text("post", MEMORIES)),
    Case("post", MEMORIES, 401, "no token", lambda w: w.send("post", MEMORIES, {"content": "x"}, token=None)),
    Case(
        "post", MEMORIES, 403, "a read token", lambda w: w.send("post", MEMORIES, {"content": "x"}, token=w.read_token)
    ),
    Case("post", MEMORIES, 403, "over quota", quota_full(lambda w: w.send("post", MEMORIES, {"content": "x"}))),
    Case(
        "post",
        MEMORIES,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("post", MEMORIES, {"content": "x" * 200})),
    ),
    Case(
        "post", MEMORIES, 429, "over the rate limit", rate_limited(lambda w: w.send("post", MEMORIES, {"content": "x"}))
    ),
    Case(
        "post",
        MEMORIES,
        200,
        "the same text again",
        lambda w: w.send("post", MEMORIES, {"content": "the staging database is  pg-staging-2."}),
    ),
    # GET /memories/{id}
    Case("get", MEMORY, 200, "a memory", lambda w: w.send("get", mine(w))),
    Case("get", MEMORY, 200, "a compressed memory", lambda w: w.send("get", compressed(w))),
    Case("get", MEMORY, 200, "a compressed memory, raw", lambda w: w.send("get", compressed(w), raw="true")),
    Case("get", MEMORY, 400, "a flag that is neither true nor false", lambda w: w.send("get", mine(w), raw="maybe")),
    Case("get", MEMORY, 401, "no token", lambda w: w.send("get", mine(w), token=None)),
    Case("get", MEMORY, 404, "a stranger's memory", lambda w: w.send("get", theirs(w))),
    Case("get", MEMORY, 429, "over the rate limit", rate_limited(lambda w: w.send("get", mine(w)))),
    # PATCH /memories/{id}
    Case("patch", MEMORY, 200, "a change", lambda w: w.send("patch", mine(w), {"tags": ["db", "staging"]})),
    Case(
        "patch",
        MEMORY,
        200,
        "a change of a compressed memory's client",
        lambda w: w.send("patch", compressed(w), {"written_by": "cli"}),
    ),
    Case("patch", MEMORY, 400, "nothing to change", lambda w: w.send("patch", mine(w), {})),
    Case("patch", MEMORY, 401, "no token", lambda w: w.send("patch", mine(w), {"tags": []}, token=None)),
    Case("patch", MEMORY, 403, "a read token", lambda w: w.send("patch", mine(w), {"tags": []}, token=w.read_token)),
    Case("patch", MEMORY, 404, "a stranger's memory", lambda w: w.send("patch", theirs(w), {"tags": []})),
    Case("patch", MEMORY, 415, "a body that is not JSON", lambda w: w.send_text("patch", mine(w))),
    Case(
        "patch",
        MEMORY,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("patch", mine(w), {"content": "x" * 200})),
    ),
    Case("patch", MEMORY, 429, "over the rate limit", rate_limited(lambda w: w.send("patch", mine(w), {"tags": []}))),
    # DELETE /memories/{id}
    Case("delete", MEMORY, 204, "a deletion", lambda w: w.send("delete", mine(w))),
    Case("delete", MEMORY, 401, "no token", lambda w: w.send("delete", mine(w), token=None)),
    Case("delete", MEMORY, 403, "a read token", lambda w: w.send("delete", mine(w), token=w.read_token)),
    Case("delete", MEMORY, 404, "a stranger's memory", lambda w: w.send("delete", theirs(w))),
    Case("delete", MEMORY, 429, "over the rate limit", rate_limited(lambda w: w.send("delete", mine(w)))),
    # GET /memories/search
    Case("get", SEARCH, 200, "results", lambda w: w.send("get", SEARCH, query="staging database", top_k=5)),
    Case(
        "get",
        SEARCH,
        200,
        "results explained",
        lambda w: w.send("get", SEARCH, query="deploy Tuesdays", explain="true"),
    ),
    Case("get", SEARCH, 200, "no results", lambda w: w.send("get", SEARCH, query="kubernetes", written_by="nobody")),
    Case("get", SEARCH, 400, "no query", lambda w: w.send("get", SEARCH)),
    Case("get", SEARCH, 400, "top_k out of range", lambda w: w.send("get", SEARCH, query="x", top_k=51)),
    Case("get", SEARCH, 401, "no token", lambda w: w.send("get", SEARCH, query="x", token=None)),
    Case("get", SEARCH, 429, "over the rate limit", rate_limited(lambda w: w.send("get", SEARCH, query="x"))),
    # GET /export
    Case("get", EXPORT, 200, "the export", lambda w: w.send("get", EXPORT)),
    Case("get", EXPORT, 401, "no token", lambda w: w.send("get", EXPORT, token=None)),
    Case("get", EXPORT, 429, "over the rate limit", rate_limited(lambda w: w.send("get", EXPORT))),
    Case("get", EXPORT, 400, "an empty space name", lambda w: w.send("get", EXPORT, space="")),
    Case("get", EXPORT, 404, "a space the token does not reach", lambda w: w.send("get", EXPORT, space="Nowhere")),
    # A space the token does not reach, wherever `space` is taken.
    *(
        Case(method, path, 404, "a space the token does not reach", send)
        for method, path, send in (
            ("get", MEMORIES, lambda w: w.send("get", MEMORIES, space="Nowhere")),
            ("post", MEMORIES, lambda w: w.send("post", MEMORIES, {"content": "x", "space": "Nowhere"})),
            ("get", SEARCH, lambda w: w.send("get", SEARCH, query="x", space="Nowhere")),
            ("get", COUNT, lambda w: w.send("get", COUNT, space="Nowhere")),
            ("get", NOTES, lambda w: w.send("get", NOTES, space="Nowhere")),
            ("post", NOTES, lambda w: w.send("post", NOTES, {"title": "t", "content": "x", "space": "Nowhere"})),
            ("get", SEMANTIC, lambda w: w.send("get", SEMANTIC, query="x", space="Nowhere")),
            ("get", CONTEXT, lambda w: w.send("get", CONTEXT, space="Nowhere")),
            ("post", IMPORT, lambda w: w.send("post", IMPORT + "?space=Nowhere", an_export("x"))),
        )
    ),
    # GET /spaces
    Case("get", SPACES, 200, "the spaces", lambda w: w.send("get", SPACES)),
    Case("get", SPACES, 401, "no token", lambda w: w.send("get", SPACES, token=None)),
    Case("get", SPACES, 429, "over the rate limit", rate_limited(lambda w: w.send("get", SPACES))),
    # POST /import
    Case("post", IMPORT, 200, "an import", lambda w: w.send("post", IMPORT, an_export("imported one", "imported two"))),
    Case("post", IMPORT, 400, "not an export", lambda w: w.send("post", IMPORT, {"format": "something else"})),
    Case("post", IMPORT, 401, "no token", lambda w: w.send("post", IMPORT, an_export("x"), token=None)),
    Case("post", IMPORT, 403, "a read token", lambda w: w.send("post", IMPORT, an_export("x"), token=w.read_token)),
    Case("post", IMPORT, 403, "over quota", quota_full(lambda w: w.send("post", IMPORT, an_export("x")))),
    Case(
        "post",
        IMPORT,
        413,
        "a body over the import limit",
        body_limit(100, lambda w: w.send("post", IMPORT, an_export("x" * 200))),
    ),
    Case("post", IMPORT, 429, "over the import limit", second_import),
    # POST /imports
    Case("post", IMPORTS, 201, "a file previewed", lambda w: w.send("post", IMPORTS, an_export("one", "two"))),
    Case("post", IMPORTS, 400, "not an export", lambda w: w.send("post", IMPORTS, {"format": "something else"})),
    Case("post", IMPORTS, 401, "no token", lambda w: w.send("post", IMPORTS, an_export("x"), token=None)),
    Case("post", IMPORTS, 403, "a read token", lambda w: w.send("post", IMPORTS, an_export("x"), token=w.read_token)),
    Case("post", IMPORTS, 403, "over quota", quota_full(lambda w: w.send("post", IMPORTS, an_export("x")))),
    Case("post", IMPORTS, 404, "a space not reached", lambda w: w.send("post", f"{IMPORTS}?space=No", an_export("x"))),
    Case(
        "post",
        IMPORTS,
        413,
        "a body over the import limit",
        body_limit(100, lambda w: w.send("post", IMPORTS, an_export("x" * 200))),
    ),
    Case("post", IMPORTS, 429, "over the import limit", second_upload),
    # GET /imports/{id}
    Case("get", IMPORT_JOB, 200, "an import", lambda w: w.send("get", an_import(w, IMPORT_JOB))),
    Case("get", IMPORT_JOB, 401, "no token", lambda w: w.send("get", an_import(w, IMPORT_JOB), token=None)),
    Case("get", IMPORT_JOB, 404, "a stranger's import", lambda w: w.send("get", a_strangers_import(w, IMPORT_JOB))),
    Case("get", IMPORT_JOB, 429, "rate limited", rate_limited(lambda w: w.send("get", an_import(w, IMPORT_JOB)))),
    # POST /imports/{id}/start
    Case("post", IMPORT_JOB_START, 202, "started", lambda w: w.send("post", an_import(w, IMPORT_JOB_START))),
    Case(
        "post", IMPORT_JOB_START, 401, "no token", lambda w: w.send("post", an_import(w, IMPORT_JOB_START), token=None)
    ),
    Case(
        "post",
        IMPORT_JOB_START,
        404,
        "a stranger's import",
        lambda w: w.send("post", a_strangers_import(w, IMPORT_JOB_START)),
    ),
    Case(
        "post",
        IMPORT_JOB_START,
        429,
        "over the rate limit",
        rate_limited(lambda w: w.send("post", an_import(w, IMPORT_JOB_START))),
    ),
    # GET /memories/count
    Case("get", COUNT, 200, "grouped by tag", lambda w: w.send("get", COUNT, group_by="tag")),
    Case("get", COUNT, 200, "about a topic", lambda w: w.send("get", COUNT, query="databases")),
    Case("get", COUNT, 400, "an unknown grouping", lambda w: w.send("get", COUNT, group_by="colour")),
    Case("get", COUNT, 401, "no token", lambda w: w.send("get", COUNT, token=None)),
    Case("get", COUNT, 429, "over the rate limit", rate_limited(lambda w: w.send("get", COUNT))),
    # GET /memories/{id}/history
    Case("get", HISTORY, 200, "the versions", lambda w: w.send("get", mine(w, HISTORY))),
    Case("get", HISTORY, 401, "no token", lambda w: w.send("get", mine(w, HISTORY), token=None)),
    Case("get", HISTORY, 404, "a stranger's memory", lambda w: w.send("get", theirs(w, HISTORY))),
    Case("get", HISTORY, 429, "over the rate limit", rate_limited(lambda w: w.send("get", mine(w, HISTORY)))),
    # GET /context
    Case("get", CONTEXT, 200, "the context", lambda w: w.send("get", CONTEXT, query="deploy day", max_tokens=300)),
    Case("get", CONTEXT, 400, "a budget under 100", lambda w: w.send("get", CONTEXT, max_tokens=99)),
    Case("get", CONTEXT, 401, "no token", lambda w: w.send("get", CONTEXT, token=None)),
    Case("get", CONTEXT, 429, "over the rate limit", rate_limited(lambda w: w.send("get", CONTEXT))),
    # GET /notes
    Case("get", NOTES, 200, "a page of notes", lambda w: my_note(w) and w.send("get", NOTES, limit=1, tags="ops")),
    Case("get", NOTES, 400, "a cursor that is none", lambda w: w.send("get", NOTES, cursor="nonsense")),
    Case("get", NOTES, 401, "no token", lambda w: w.send("get", NOTES, token=None)),
    Case("get", NOTES, 429, "over the rate limit", rate_limited(lambda w: w.send("get", NOTES))),
    # POST /notes
    Case("post", NOTES, 201, "a note", lambda w: w.send("post", NOTES, {"title": "Runbook", "content": "# Runbook"})),
    Case("post", NOTES, 400, "no title", lambda w: w.send("post", NOTES, {"content": "x"})),
    Case("post", NOTES, 401, "no token", lambda w: w.send("post", NOTES, {"title": "t", "content": "x"}, token=None)),
    Case(
        "post",
        NOTES,
        403,
        "a read token",
        lambda w: w.send("post", NOTES, {"title": "t", "content": "x"}, token=w.read_token),
    ),
    Case(
        "post",
        NOTES,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("post", NOTES, {"title": "t", "content": "x" * 200})),
    ),
    Case("post", NOTES, 415, "a body that is not JSON", lambda w: w.send_text("post", NOTES)),
    Case(
        "post",
        NOTES,
        429,
        "over the rate limit",
        rate_limited(lambda w: w.send("post", NOTES, {"title": "t", "content": "x"})),
    ),
    # GET, PATCH, DELETE /notes/{id}
    Case("get", NOTE, 200, "a note", lambda w: w.send("get", my_note(w), max_tokens=100)),
    Case("get", NOTE, 400, "a start past its end", lambda w: w.send("get", my_note(w), start=10**6)),
    Case("get", NOTE, 401, "no token", lambda w: w.send("get", my_note(w), token=None)),
    Case("get", NOTE, 404, "a stranger's note", lambda w: w.send("get", their_note(w))),
    Case("get", NOTE, 429, "over the rate limit", rate_limited(lambda w: w.send("get", my_note(w)))),
    Case("patch", NOTE, 200, "a change", lambda w: w.send("patch", my_note(w), {"tags": ["ops"]})),
    Case("patch", NOTE, 400, "nothing to change", lambda w: w.send("patch", my_note(w), {})),
    Case("patch", NOTE, 401, "no token", lambda w: w.send("patch", my_note(w), {"tags": []}, token=None)),
    Case("patch", NOTE, 403, "a read token", lambda w: w.send("patch", my_note(w), {"tags": []}, token=w.read_token)),
    Case("patch", NOTE, 404, "a stranger's note", lambda w: w.send("patch", their_note(w), {"tags": []})),
    Case(
        "patch",
        NOTE,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("patch", my_note(w), {"content": "x" * 200})),
    ),
    Case("patch", NOTE, 415, "a body that is not JSON", lambda w: w.send_text("patch", my_note(w))),
    Case("patch", NOTE, 429, "over the rate limit", rate_limited(lambda w: w.send("patch", my_note(w), {"tags": []}))),
    Case("delete", NOTE, 204, "a deletion", lambda w: w.send("delete", my_note(w))),
    Case("delete", NOTE, 401, "no token", lambda w: w.send("delete", my_note(w), token=None)),
    Case("delete", NOTE, 403, "a read token", lambda w: w.send("delete", my_note(w), token=w.read_token)),
    Case("delete", NOTE, 404, "a stranger's note", lambda w: w.send("delete", their_note(w))),
    Case("delete", NOTE, 429, "over the rate limit", rate_limited(lambda w: w.send("delete", my_note(w)))),
    # GET /search
    Case("get", SEMANTIC, 200, "notes and memories", lambda w: w.send("get", SEMANTIC, query="staging database")),
    Case("get", SEMANTIC, 400, "an unknown kind", lambda w: w.send("get", SEMANTIC, query="x", kinds="photos")),
    Case("get", SEMANTIC, 401, "no token", lambda w: w.send("get", SEMANTIC, query="x", token=None)),
    Case("get", SEMANTIC, 429, "over the rate limit", rate_limited(lambda w: w.send("get", SEMANTIC, query="x"))),
    # GET /graph
    Case("get", GRAPH, 200, "from an entity", lambda w: in_graph(w).send("get", GRAPH, entity="db", max_tokens=100)),
    Case("get", GRAPH, 200, "from a query", lambda w: in_graph(w).send("get", GRAPH, query="staging", depth=2)),
    Case("get", GRAPH, 400, "a depth over 2", lambda w: w.send("get", GRAPH, entity="db", depth=3)),
    Case("get", GRAPH, 401, "no token", lambda w: w.send("get", GRAPH, entity="db", token=None)),
    Case("get", GRAPH, 404, "an unknown entity", lambda w: w.send("get", GRAPH, entity="nobody")),
    Case("get", GRAPH, 429, "over the rate limit", rate_limited(lambda w: w.send("get", GRAPH, query="db"))),
    # POST /memories/{id}/merge, /keep-apart, /reinstate
    *memory_action_cases(MERGE, success=lambda w: linked(w, MERGE), refused="not a near-duplicate"),
    *memory_action_cases(KEEP_APART, success=lambda w: linked(w, KEEP_APART), refused="not a near-duplicate"),
    *memory_action_cases(REINSTATE, success=lambda w: mine(w, REINSTATE), refused=None),
    # GET /usage
    Case("get", USAGE, 200, "the usage", lambda w: w.send("get", USAGE)),
    Case("get", USAGE, 200, "the usage under a quota", quota_full(lambda w: w.send("get", USAGE))),
    Case("get", USAGE, 401, "no token", lambda w: w.send("get", USAGE, token=None)),
    Case("get", USAGE, 429, "over the rate limit", rate_limited(lambda w: w.send("get", USAGE))),
]


def team_of(world: World, role: str = Role.OWNER) -> Space:
    """A team space, "Research", where the owner has `role` (beside another owner, when not one
    themselves), with a viewer and an invitation not used yet."""
    users = get_user_model().objects
    space = Space.objects.create(name="Research", kind=SpaceKind.TEAM)
    Membership.objects.create(space=space, user=world.memory.author, role=role)
    if role != Role.OWNER:
        Membership.objects.create(space=space, user=users.create_user("founder"), role=Role.OWNER)
    Membership.objects.create(space=space, user=users.create_user("viewer"), role=Role.VIEWER)
    SpaceInvitation.objects.create(
        space=space, role=Role.EDITOR, digest=uuid.uuid4().hex, expires_at=timezone.now() + timedelta(days=1)
    )
    return space


def on(path: str, space: Space | None = None, **values: Any) -> str:
    """The path for this space (default: one nobody reaches), naming the viewer and an unknown invitation."""
    return path.format(
        space_id=space.public_id if space else uuid.uuid4(),
        **{"username": "viewer", "invitation_id": uuid.uuid4()} | values,
    )


def space_cases(
    method: str,
    path: str,
    status: int,
    body: Any = None,
    *,
    role: str = Role.OWNER,
    refused: tuple[str, Callable[[World], HttpResponse]] | None = None,
    forbidden: tuple[str, Callable[[World], HttpResponse]] | None = None,
    **params: Any,
) -> list[Case]:
    """The cases of an operation on one team space: done by a member with `role` (`body`, and
    `params` in the query), the 400 and 403 of `refused` and `forbidden` (default: a read token)
    when declared, and the errors of any: no token, a space the token does not reach, over the
    rate limit, and with a body, one that is not JSON and one over the limit."""

    def send(w: World, token: str | None = "", reached: bool = True, data: Any = body) -> HttpResponse:
        return w.send(method, on(path, team_of(w, role) if reached else None), data, token=token, **params)

    cases = [
        Case(method, path, status, "done", send),
        Case(method, path, 401, "no token", lambda w: send(w, token=None)),
        Case(method, path, 404, "a space the token does not reach", lambda w: send(w, reached=False)),
        Case(method, path, 429, "over the rate limit", rate_limited(send)),
    ]
    if forbidden:
        cases.append(Case(method, path, 403, *forbidden))
    elif method != "get":
        cases.append(Case(method, path, 403, "a read token", lambda w: send(w, token=w.read_token)))
    if refused:
        cases.append(Case(method, path, 400, *refused))
    if body is not None:
        cases += [
            Case(method, path, 415, "a body that is not JSON", lambda w: w.send_text(method, on(path, team_of(w)))),
            Case(method, path, 413, "a body over the limit", body_limit(100, lambda w: send(w, data={"x": "x" * 200}))),
        ]
    return cases


def invitation_elsewhere(world: World) -> str:
    """The secret of an invitation to a team space the owner is not a member of."""
    founder = get_user_model().objects.create_user("founder")
    space = team_space_create(user=founder, name="Elsewhere")
    return space_invitation_create(user=founder, space_id=space.public_id, role=Role.VIEWER).secret


def invitation_home(world: World) -> str:
    """The secret of an invitation to a team space the owner is a member of already."""
    space = team_of(world)
    return space_invitation_create(user=world.memory.author, space_id=space.public_id, role=Role.VIEWER).secret


def used_invitation(world: World) -> str:
    space = team_of(world)
    invitation = SpaceInvitation.objects.get(space=space)
    SpaceInvitation.objects.filter(pk=invitation.pk).update(used_at=timezone.now())
    return on(INVITATION, space, invitation_id=invitation.public_id)


def unused_invitation(world: World) -> str:
    space = team_of(world)
    return on(INVITATION, space, invitation_id=SpaceInvitation.objects.get(space=space).public_id)


def share(world: World, space: str = "Research", move: bool = False, memory: Memory | None = None) -> HttpResponse:
    team_of(world)
    path = SHARE.format(public_id=(memory or world.memory).public_id)
    return world.send("post", path, {"space": space, "move": move})


CASES += [
    # POST /spaces
    Case("post", SPACES, 201, "a team space made", lambda w: w.send("post", SPACES, {"name": "Research"})),
    Case("post", SPACES, 400, "a name of nothing", lambda w: w.send("post", SPACES, {"name": " "})),
    Case("post", SPACES, 401, "no token", lambda w: w.send("post", SPACES, {"name": "Research"}, token=None)),
    Case("post", SPACES, 403, "a read token", lambda w: w.send("post", SPACES, {"name": "x"}, token=w.read_token)),
    Case(
        "post",
        SPACES,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("post", SPACES, {"name": "x" * 200})),
    ),
    Case("post", SPACES, 415, "a body that is not JSON", lambda w: w.send_text("post", SPACES)),
    Case("post", SPACES, 429, "over the rate limit", rate_limited(lambda w: w.send("post", SPACES, {"name": "x"}))),
    # PATCH, DELETE /spaces/{space_id}
    *space_cases(
        "patch",
        SPACE,
        200,
        {"name": "Renamed"},
        refused=("a name of nothing", lambda w: w.send("patch", on(SPACE, team_of(w)), {"name": ""})),
    ),
    *space_cases(
        "delete",
        SPACE,
        204,
        confirm_name="Research",
        refused=(
            "a name not typed exactly",
            lambda w: w.send("delete", on(SPACE, team_of(w)), confirm_name="research"),
        ),
    ),
    Case(
        "delete",
        SPACE,
        415,
        "a body that is not JSON",
        lambda w: w.send_text("delete", on(SPACE, team_of(w))),
    ),
    Case(
        "delete",
        SPACE,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("delete", on(SPACE, team_of(w)), {"confirm_name": "x" * 200})),
    ),
    # GET /spaces/{space_id}/members
    *space_cases("get", SPACE_MEMBERS, 200),
    # PATCH, DELETE /spaces/{space_id}/members/{username}
    *space_cases(
        "patch",
        SPACE_MEMBER,
        200,
        {"role": "editor"},
        refused=("a role that is none", lambda w: w.send("patch", on(SPACE_MEMBER, team_of(w)), {"role": "king"})),
    ),
    *space_cases(
        "delete",
        SPACE_MEMBER,
        204,
        refused=("oneself", lambda w: w.send("delete", on(SPACE_MEMBER, team_of(w), username="owner"))),
    ),
    # POST /spaces/{space_id}/leave
    *space_cases(
        "post",
        SPACE_LEAVE,
        204,
        role=Role.ADMIN,
        refused=("the last owner", lambda w: w.send("post", on(SPACE_LEAVE, team_of(w)))),
    ),
    # POST /spaces/{space_id}/hand-over
    *space_cases(
        "post",
        SPACE_HAND_OVER,
        200,
        {"to": "viewer"},
        refused=("to oneself", lambda w: w.send("post", on(SPACE_HAND_OVER, team_of(w)), {"to": "owner"})),
    ),
    # GET, POST /spaces/{space_id}/key
    *space_cases(
        "get", SPACE_KEY, 200, forbidden=("an admin", lambda w: w.send("get", on(SPACE_KEY, team_of(w, Role.ADMIN))))
    ),
    *space_cases("post", SPACE_KEY, 202),
    # GET, POST /spaces/{space_id}/invitations
    *space_cases(
        "get",
        INVITATIONS,
        200,
        forbidden=("an editor", lambda w: w.send("get", on(INVITATIONS, team_of(w, Role.EDITOR)))),
    ),
    *space_cases(
        "post",
        INVITATIONS,
        201,
        {"role": "viewer", "days": 2},
        refused=("an owner's role", lambda w: w.send("post", on(INVITATIONS, team_of(w)), {"role": "owner"})),
    ),
    # DELETE /spaces/{space_id}/invitations/{invitation_id}
    Case("delete", INVITATION, 204, "withdrawn", lambda w: w.send("delete", unused_invitation(w))),
    Case("delete", INVITATION, 400, "used already", lambda w: w.send("delete", used_invitation(w))),
    Case("delete", INVITATION, 401, "no token", lambda w: w.send("delete", unused_invitation(w), token=None)),
    Case(
        "delete", INVITATION, 403, "a read token", lambda w: w.send("delete", unused_invitation(w), token=w.read_token)
    ),
    Case("delete", INVITATION, 404, "no such invitation", lambda w: w.send("delete", on(INVITATION, team_of(w)))),
    Case(
        "delete", INVITATION, 429, "over the rate limit", rate_limited(lambda w: w.send("delete", unused_invitation(w)))
    ),
    # POST /invitations/accept
    Case("post", ACCEPT, 200, "joined", lambda w: w.send("post", ACCEPT, {"secret": invitation_elsewhere(w)})),
    Case(
        "post",
        ACCEPT,
        400,
        "to a space joined already",
        lambda w: w.send("post", ACCEPT, {"secret": invitation_home(w)}),
    ),
    Case("post", ACCEPT, 401, "no token", lambda w: w.send("post", ACCEPT, {"secret": "spi_x"}, token=None)),
    Case(
        "post", ACCEPT, 403, "a read token", lambda w: w.send("post", ACCEPT, {"secret": "spi_x"}, token=w.read_token)
    ),
    Case("post", ACCEPT, 404, "no such invitation", lambda w: w.send("post", ACCEPT, {"secret": "spi_nothing"})),
    Case(
        "post",
        ACCEPT,
        413,
        "a body over the limit",
        body_limit(100, lambda w: w.send("post", ACCEPT, {"secret": "x" * 200})),
    ),
    Case("post", ACCEPT, 415, "a body that is not JSON", lambda w: w.send_text("post", ACCEPT)),
    Case(
        "post", ACCEPT, 429, "over the rate limit", rate_limited(lambda w: w.send("post", ACCEPT, {"secret": "spi_x"}))
    ),
    # POST /memories/{id}/share
    Case("post", SHARE, 201, "a copy", share),
    Case("post", SHARE, 200, "a move", lambda w: share(w, move=True)),
    Case("post", SHARE, 200, "a compressed memory, moved", lambda w: share(w, move=True, memory=w.compressed)),
    Case("post", SHARE, 400, "into the space it is in", lambda w: share(w, space="Personal")),
    Case("post", SHARE, 401, "no token", lambda w: w.send("post", mine(w, SHARE), {"space": "Personal"}, token=None)),
    Case("post", SHARE, 403, "over quota", quota_full(share)),
    Case("post", SHARE, 404, "a space the token does not reach", lambda w: share(w, space="Nowhere")),
    Case("post", SHARE, 404, "a stranger's memory", lambda w: w.send("post", theirs(w, SHARE), {"space": "Personal"})),
    Case("post", SHARE, 413, "a body over the limit", body_limit(100, lambda w: share(w, space="x" * 200))),
    Case("post", SHARE, 415, "a body that is not JSON", lambda w: w.send_text("post", mine(w, SHARE))),
    Case("post", SHARE, 429, "over the rate limit", rate_limited(share)),
]
# Any operation, asked for an answer that is not JSON.
CASES += [
    Case(
        method,
        path,
        406,
        "an Accept header without JSON",
        lambda w, method=method, path=path: w.send_accepting_html(method, path),
    )
    for method, path in dict.fromkeys((case.method, case.path) for case in CASES)
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.method} {case.path} {case.status} {case.name}")
def test_every_answer_matches_the_served_document(world, case):
    response = case.send(world)

    assert response.status_code == case.status, body_of(response)
    assert_conforms(served_document(), case.method, case.path, response)


def test_the_cases_cover_every_operation_and_every_status_it_declares(db):
    declared = {
        (method, path, int(status))
        for path, operations in served_document()["paths"].items()
        for method, operation in operations.items()
        for status in operation["responses"]
    }

    assert {(case.method, case.path, case.status) for case in CASES} == declared


def test_a_page_in_the_middle_has_a_cursor_and_the_last_one_null(world):
    """Both sides of `next_cursor`'s declared type are really answered."""
    first = world.send("get", MEMORIES, limit=1).json()
    last = world.send("get", MEMORIES, limit=100).json()

    assert isinstance(first["next_cursor"], str) and last["next_cursor"] is None


def test_a_compressed_memory_carries_its_raw_text_as_declared(world):
    body = world.send("get", compressed(world)).json()

    assert body["optimized"] is True and body["content"] == "DEPLOY_DAY=tuesday"
    assert body["content_raw"] == world.compressed.content


def request_validator(document: dict[str, Any], method: str, path: str) -> jsonschema.Draft7Validator:
    registry = Registry().with_resource(DOCUMENT_URI, DRAFT7.create_resource(as_json_schema(document)))
    schema_ref = DOCUMENT_URI + pointer("paths", path, method, "requestBody", "content", "application/json", "schema")
    return jsonschema.Draft7Validator({"$ref": schema_ref}, registry=registry)


ACCEPTED_BODIES = [
    ("post", MEMORIES, {"content": "x"}),
    ("post", MEMORIES, {"content": "Use pnpm.", "tags": [], "written_by": ""}),
    ("post", MEMORIES, {"content": "Use pnpm.", "tags": ["JS", "build"], "written_by": "cursor"}),
    ("patch", MEMORY, {"written_by": ""}),
    ("patch", MEMORY, {"tags": []}),
    ("patch", MEMORY, {"content": "The staging database is pg-staging-3."}),
]
REFUSED_BODIES = [
    ("post", MEMORIES, {}),
    ("post", MEMORIES, {"content": ""}),
    ("post", MEMORIES, {"content": "x", "colour": "red"}),
    ("post", MEMORIES, {"content": "x", "tags": [""]}),
    ("post", MEMORIES, {"content": "x", "tags": [f"tag-{i}" for i in range(MAX_TAGS + 1)]}),
    ("post", MEMORIES, {"content": "x", "written_by": "w" * (MAX_WRITTEN_BY_CHARS + 1)}),
    ("post", MEMORIES, {"content": "x" * (MAX_CONTENT_CHARS + 1)}),
    ("patch", MEMORY, {}),
    ("patch", MEMORY, {"tags": "db"}),
]


@pytest.mark.parametrize(("method", "path", "body"), ACCEPTED_BODIES)
def test_a_body_the_api_accepts_is_one_the_document_allows(world, method, path, body):
    response = world.send(method, path.format(public_id=world.memory.public_id), body)

    assert response.status_code < 300, response.content
    request_validator(served_document(), method, path).validate(body)


@pytest.mark.parametrize(("method", "path", "body"), REFUSED_BODIES)
def test_a_body_the_document_forbids_is_one_the_api_refuses(world, method, path, body):
    assert not request_validator(served_document(), method, path).is_valid(body)

    response = world.send(method, path.format(public_id=world.memory.public_id), body)

    assert response.status_code == 400, response.content
