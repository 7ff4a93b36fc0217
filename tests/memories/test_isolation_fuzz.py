"""Isolation fuzzing: two users with interleaved, near-identical memories, and random operations
by each of them with the other's ids (of memories and entities), cursors and contents, checked
after every step against a plain model of what each user should have and see.

The users write the same kind of text, seconds apart, under the same client name: were owners ever
mixed up, one user's memory would be read in the context of the other's, show up in the other's
list, search, export or graph, or be changed, deleted or probed through the other's import.
Operations go through the services, the REST API, MCP and the pages alike. Each example runs
inside a savepoint rolled back at its end, so every example starts from the same embedded seed.
"""

import json
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.db.models import F
from django.test import Client, TestCase
from django.urls import reverse
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.spaces import personal_space_of
from gnosem.errors import NotFound, ValidationError
from memories import selectors, services
from memories.graph.explore import graph_explore
from memories.indexing.sequences import embedding_pieces
from memories.models import Chunk, Entity, EntityMention, IndexingStatus, Memory, SpaceCorpusStatistic
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller

WRITER = "claude-code"
BASE = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
SEEDS = 5
EXAMPLES = 10
MAX_STEPS = 25
SECRET = re.compile(r"\b(?:tulip|maple)-\d+\b")
VIAS = ("service", "rest", "mcp")
FILE_VIAS = ("service", "rest", "page")  # export and import: the page instead of MCP, which has neither
OPERATIONS = ("get", "update", "delete", "write", "search", "list", "list_all", "export", "import", "explore")


@dataclass(frozen=True)
class Held:
    """What the model says one memory is."""

    content: str
    created_at: datetime
    tags: tuple[str, ...]
    pk: int


@dataclass
class Actor:
    name: str
    user: object
    token: str
    browser: Client
    word: str  # the word of this user's secrets: "tulip-103" is the owner's, "maple-103" the stranger's
    api: Client = field(default_factory=Client)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def mcp(self, version: str) -> McpCaller:
        return McpCaller(self.api, self.token, version)


Model = dict[str, dict[uuid.UUID, Held]]
# The cursors handed out, with the position each stands for (cursors are sealed: only the model knows).
Cursors = dict[str, tuple[datetime, int]]


class Leak(AssertionError):
    """A cross-user effect: one user read, changed or deleted the other's data."""


def seed_text(word: str, i: int) -> str:
    return f"Session {i}: the staging password is {word}-{100 + i}; deploy to eu-west-{i} after the review."


def held_of(memory: Memory) -> Held:
    return Held(memory.content, memory.created_at, tuple(memory.tags), memory.pk)


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise Leak(what)


# --- the model's view -------------------------------------------------------------------------


def matching(held: Held, tag: str | None, after: datetime | None) -> bool:
    return (tag is None or tag in held.tags) and (after is None or held.created_at >= after)


def newest_first(items: dict[uuid.UUID, Held]) -> list[tuple[uuid.UUID, Held]]:
    return sorted(items.items(), key=lambda item: (item[1].created_at, item[1].pk), reverse=True)


def remember_cursor(cursors: Cursors, cursor: str | None, mine: dict[uuid.UUID, Held], page: list) -> None:
    """A page's next cursor stands for the position of its last memory."""
    if cursor:
        last = mine[page[-1][0]]
        cursors[cursor] = (last.created_at, last.pk)


# --- the operations, through each interface ----------------------------------------------------


def do_get(actor: Actor, public_id: uuid.UUID, via: str, version: str) -> str | None:
    if via == "service":
        try:
            return selectors.memory_get(owner=actor.user, public_id=public_id).content
        except NotFound:
            return None
    if via == "rest":
        response = actor.api.get(f"/api/v1/memories/{public_id}?raw=true", headers=actor.auth)
        expect(response.status_code in (200, 404), f"REST get answered {response.status_code}")
        return response.json()["content"] if response.status_code == 200 else None
    result = actor.mcp(version).call("memory_get", {"id": str(public_id), "raw": True})
    if result["isError"]:
        expect("No memory" in result["content"][0]["text"], f"MCP get failed: {result}")
        return None
    return result["structuredContent"]["content"]


def do_update(actor: Actor, public_id: uuid.UUID, content: str, via: str, version: str) -> bool:
    if via == "service":
        try:
            services.memory_update(owner=actor.user, public_id=public_id, content=content)
            return True
        except NotFound:
            return False
    if via == "rest":
        response = actor.api.patch(
            f"/api/v1/memories/{public_id}",
            data={"content": content},
            content_type="application/json",
            headers=actor.auth,
        )
        expect(response.status_code in (200, 404), f"REST update answered {response.status_code}")
        return response.status_code == 200
    result = actor.mcp(version).call("memory_update", {"id": str(public_id), "content": content})
    expect(not result["isError"] or "No memory" in result["content"][0]["text"], f"MCP update failed: {result}")
    return not result["isError"]


def do_delete(actor: Actor, public_id: uuid.UUID, via: str, version: str) -> bool:
    if via == "service":
        try:
            services.memory_delete(owner=actor.user, public_id=public_id)
            return True
        except NotFound:
            return False
    if via == "rest":
        response = actor.api.delete(f"/api/v1/memories/{public_id}", headers=actor.auth)
        expect(response.status_code in (204, 404), f"REST delete answered {response.status_code}")
        return response.status_code == 204
    result = actor.mcp(version).call("memory_delete", {"id": str(public_id)})
    expect(not result["isError"] or "No memory" in result["content"][0]["text"], f"MCP delete failed: {result}")
    return not result["isError"]


def do_write(actor: Actor, content: str, via: str, version: str) -> uuid.UUID:
    if via == "service":
        return services.memory_write(owner=actor.user, content=content, tags=["deploy"], written_by=WRITER).public_id
    if via == "rest":
        body = {"content": content, "tags": ["deploy"], "written_by": WRITER}
        response = actor.api.post("/api/v1/memories", data=body, content_type="application/json", headers=actor.auth)
        expect(response.status_code == 201, f"REST write answered {response.status_code}")
        return uuid.UUID(response.json()["id"])
    result = actor.mcp(version).call("memory_write", {"content": content, "tags": ["deploy"], "written_by": WRITER})
    expect(not result["isError"], f"MCP write failed: {result}")
    return uuid.UUID(result["structuredContent"]["id"])


def do_search(
    actor: Actor,
    query: str,
    tag: str | None,
    after: datetime | None,
    via: str,
    version: str,
    exclude: list[str] | None = None,
) -> list[tuple[uuid.UUID, str]]:
    after_text = after.isoformat() if after else None
    if via == "service":
        hits = search_hybrid(
            owner=actor.user,
            query=query,
            top_k=10,
            filters=MemoryFilters(tags=(tag,) if tag else (), created_after=after),
            exclude=exclude,
        )
        return [(hit.memory.public_id, hit.memory.content) for hit in hits]
    if via == "rest":
        params = {
            "query": query,
            "top_k": 10,
            "raw": "true",
            "tags": tag,
            "created_after": after_text,
            "exclude": ",".join(exclude) if exclude else None,
        }
        params = {key: value for key, value in params.items() if value is not None}
        response = actor.api.get("/api/v1/memories/search", params, headers=actor.auth)
        expect(response.status_code == 200, f"REST search answered {response.status_code}")
        results = response.json()["results"]
    else:
        arguments = {
            "query": query,
            "top_k": 10,
            "raw": True,
            "tags": [tag] if tag else None,
            "created_after": after_text,
            "exclude": exclude,
        }
        result = actor.mcp(version).call("memory_search", {k: v for k, v in arguments.items() if v is not None})
        expect(not result["isError"], f"MCP search failed: {result}")
        results = result["structuredContent"]["results"]
    return [(uuid.UUID(item["id"]), item["content"]) for item in results]


def do_list(
    actor: Actor, limit: int, cursor: str | None, tag: str | None, via: str, version: str
) -> tuple[list[tuple[uuid.UUID, str]], str | None]:
    if via == "service":
        page = selectors.memory_list(
            owner=actor.user, filters=MemoryFilters(tags=(tag,) if tag else ()), limit=limit, cursor=cursor
        )
        return [(memory.public_id, memory.content) for memory in page.memories], page.next_cursor
    if via == "rest":
        params = {"limit": limit, "raw": "true", "cursor": cursor, "tags": tag}
        response = actor.api.get("/api/v1/memories", {k: v for k, v in params.items() if v}, headers=actor.auth)
        expect(response.status_code == 200, f"REST list answered {response.status_code}")
        body = response.json()
    else:
        arguments = {"limit": limit, "raw": True, "cursor": cursor, "tags": [tag] if tag else None}
        result = actor.mcp(version).call("memory_list", {k: v for k, v in arguments.items() if v is not None})
        expect(not result["isError"], f"MCP list failed: {result}")
        body = result["structuredContent"]
    return [(uuid.UUID(item["id"]), item["content"]) for item in body["memories"]], body["next_cursor"]


def do_explore(actor: Actor, entity_id: uuid.UUID, via: str, version: str) -> tuple[set[str], set[str]] | None:
    """The entity ids and memory ids explore_graph shows from this entity id; None when not found."""
    if via == "service":
        try:
            view = graph_explore(owner=actor.user, entity_id=entity_id)
        except NotFound:
            return None
        memories = {m.public_id for m in view.memories} | {pid for edge in view.edges for pid in edge.memory_ids}
        return {str(node.entity.public_id) for node in view.nodes}, {str(pid) for pid in memories}
    if via == "rest":
        response = actor.api.get(reverse("api-graph"), {"entity_id": str(entity_id)}, headers=actor.auth)
        expect(response.status_code in (200, 404), f"REST explore answered {response.status_code}")
        if response.status_code == 404:
            return None
        body = response.json()
    else:
        result = actor.mcp(version).call("explore_graph", {"entity_id": str(entity_id)})
        if result["isError"]:
            expect("No entity with id" in result["content"][0]["text"], f"MCP explore failed: {result}")
            return None
        body = result["structuredContent"]
    memories = {m["id"] for m in body["memories"]} | {pid for edge in body["edges"] for pid in edge["memory_ids"]}
    return {entity["id"] for entity in body["entities"]}, memories


def do_export(actor: Actor, via: str) -> dict:
    if via == "service":
        return json.loads("".join(export_chunks(exported_space(actor.user))))
    response = (
        actor.api.get(reverse("api-export"), headers=actor.auth)
        if via == "rest"
        else actor.browser.get(reverse("export"))
    )
    expect(response.status_code == 200, f"export ({via}) answered {response.status_code}")
    return json.loads(b"".join(response.streaming_content))


def do_import(actor: Actor, document: dict, via: str) -> dict[str, int] | str:
    """The report, or the refusal's message."""
    if via == "service":
        try:
            return import_memories(owner=actor.user, document=document).as_dict()
        except ValidationError as error:
            return error.message
    body = json.dumps(document).encode()
    if via == "rest":
        response = actor.api.post(reverse("api-import"), data=body, content_type="application/json", headers=actor.auth)
        expect(response.status_code in (200, 400), f"REST import answered {response.status_code}")
        return response.json() if response.status_code == 200 else response.json()["error"]["message"]
    response = actor.browser.post(reverse("transfer"), {"file": SimpleUploadedFile("export.json", body)})
    expect(response.status_code in (302, 400), f"import page answered {response.status_code}")
    if response.status_code == 400:
        return response.content.decode()
    with TestCase.captureOnCommitCallbacks(execute=True):  # the import runs as its start commits
        started = actor.browser.post(response.url)
    expect(started.status_code == 302, f"starting the import answered {started.status_code}")
    page = actor.browser.get(started.url).content.decode()
    found = re.search(r"Imported: (\d+) memor(?:y|ies),\s+(\d+) duplicates? skipped", page)
    expect(found is not None, "the import page reported nothing")
    return {"imported": int(found[1]), "duplicates": int(found[2])}


# --- the checks after every step ---------------------------------------------------------------


def check_world(actors: list[Actor], model: Model) -> None:
    """The database holds exactly what the model says, per user; nothing derived from one user's
    memories (vectors, in-context readings, keyword statistics) involves the other's."""
    for actor in actors:
        space = personal_space_of(actor.user)
        rows = {(m.public_id, m.content, m.author_id) for m in Memory.objects.filter(space=space)}
        expected = {(pid, held.content, actor.user.pk) for pid, held in model[actor.name].items()}
        expect(rows == expected, f"{actor.name}'s memories")
        documents = SpaceCorpusStatistic.objects.filter(space=space).values_list("documents", flat=True).first()
        expect((documents or 0) == len(model[actor.name]), f"{actor.name}'s keyword statistics count other memories")
    expect(not Chunk.objects.exclude(space_id=F("memory__space_id")).exists(), "a chunk filed under another space")
    memories = list(Memory.objects.filter(space__personal_of__in=[actor.user for actor in actors]))
    texts = {
        personal_space_of(actor.user).pk: " ".join(held.content for held in model[actor.name].values())
        for actor in actors
    }
    for memory_id, pieces in embedding_pieces(memories).items():
        space_id = next(memory.space_id for memory in memories if memory.pk == memory_id)
        for _, text in pieces:
            for secret in SECRET.findall(text):
                expect(secret in texts[space_id], f"memory {memory_id} would be read in context of {secret}")


def check_results(actor: Actor, model: Model, results: list[tuple[uuid.UUID, str]], what: str) -> None:
    mine = model[actor.name]
    for public_id, content in results:
        expect(public_id in mine and mine[public_id].content == content, f"{what} showed {actor.name} {content!r}")


@pytest.fixture
def actors(owner, stranger, owner_token, stranger_token, owner_client, stranger_client, settings) -> list[Actor]:
    settings.GNOSEM_TOKEN_RATE_LIMIT = None  # hundreds of calls a minute are the point here
    settings.GNOSEM_IMPORT_RATE_LIMIT = None
    return [
        Actor("owner", owner, owner_token, owner_client, "tulip"),
        Actor("stranger", stranger, stranger_token, stranger_client, "maple"),
    ]


def test_random_operations_by_two_users_never_cross_users(actors, django_capture_on_commit_callbacks, capsys):
    # Interleaved: the owner's memory i, a second later the stranger's, a second later the owner's
    # next one; same client, same tags, the same sentence with another secret.
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(SEEDS):
            for offset, actor in enumerate(actors):
                services.memory_write(
                    owner=actor.user,
                    content=seed_text(actor.word, i),
                    tags=["deploy", f"s{i}"],
                    written_by=WRITER,
                    created_at=BASE + timedelta(seconds=2 * i + offset),
                )
    assert set(Memory.objects.values_list("indexing_status", flat=True)) == {IndexingStatus.INDEXED}
    seed: Model = {
        actor.name: {m.public_id: held_of(m) for m in Memory.objects.filter(space__personal_of=actor.user)}
        for actor in actors
    }
    check_world(actors, seed)
    tried: Counter[str] = Counter()
    leaks: set[str] = set()  # hypothesis replays a failing example once more: count it once
    serial = iter(range(1000, 10**6))

    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        # No shrinking: each step embeds text and runs real requests, and the failure message
        # already says which operation by whom crossed users.
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        model = {name: dict(memories) for name, memories in seed.items()}
        cursors: Cursors = {}
        savepoint = transaction.savepoint()
        try:
            for _ in range(data.draw(st.integers(min_value=1, max_value=MAX_STEPS), label="steps")):
                actor = data.draw(st.sampled_from(actors), label="actor")
                other = next(a for a in actors if a is not actor)
                operation = data.draw(st.sampled_from(OPERATIONS), label="operation")
                via = data.draw(st.sampled_from(FILE_VIAS if operation in ("export", "import") else VIAS), label="via")
                version = data.draw(st.sampled_from([LEGACY, MODERN]), label="mcp version")
                # The worker keeps up (embeds, re-reads in context) after some steps, and lags behind
                # after others, leaving memories waiting: both states must keep users apart.
                worker_keeps_up = data.draw(st.booleans(), label="worker keeps up")
                tried[f"{operation} ({via})"] += 1
                try:
                    with django_capture_on_commit_callbacks(execute=worker_keeps_up):
                        step(data, actor, other, operation, via, version, model, cursors, serial)
                    check_world(actors, model)
                except Leak as leak:
                    leaks.add(f"{operation} via {via} by {actor.name}: {leak}")
                    raise
        finally:
            transaction.savepoint_rollback(savepoint)

    try:
        run()
    finally:
        with capsys.disabled():
            total = sum(tried.values())
            counts = ", ".join(f"{name} {count}" for name, count in sorted(tried.items()))
            print(f"\nisolation fuzzing: {total} operations tried, {len(leaks)} leaks found ({counts})")
    assert not leaks


def step(
    data: st.DataObject,
    actor: Actor,
    other: Actor,
    operation: str,
    via: str,
    version: str,
    model: Model,
    cursors: Cursors,
    serial,
) -> None:
    """One operation by `actor`, checked against the model, which it then updates."""
    mine, theirs = model[actor.name], model[other.name]
    any_id = st.sampled_from([*mine, *theirs, uuid.uuid4()])
    tag = data.draw(st.sampled_from([None, "deploy", "s1", "s3"]), label="tag filter")

    if operation == "get":
        public_id = data.draw(any_id, label="id")
        content = do_get(actor, public_id, via, version)
        expect(content == (mine[public_id].content if public_id in mine else None), f"get {public_id}")

    elif operation == "update":
        public_id = data.draw(any_id, label="id")
        n = next(serial)
        content = f"Session {n}: the staging password is now {actor.word}-{n}; deploy after the review."
        found = do_update(actor, public_id, content, via, version)
        expect(found == (public_id in mine), f"update {public_id} found={found}")
        if found:
            mine[public_id] = replace(mine[public_id], content=content)

    elif operation == "delete":
        public_id = data.draw(any_id, label="id")
        found = do_delete(actor, public_id, via, version)
        expect(found == (public_id in mine), f"delete {public_id} found={found}")
        mine.pop(public_id, None)

    elif operation == "write":
        n = next(serial)
        content = f"Session {n}: the staging password is {actor.word}-{n}; deploy to eu-west-{n % 3}."
        public_id = do_write(actor, content, via, version)
        memory = Memory.objects.get(space__personal_of=actor.user, public_id=public_id)
        expect(memory.content == content, "the written memory")
        mine[public_id] = held_of(memory)

    elif operation == "search":
        pool = [*(h.content for h in mine.values()), *(h.content for h in theirs.values())]
        query = data.draw(
            st.sampled_from(["staging password", f"{other.word}-102", f"{actor.word}-101", *pool[:6]]), label="query"
        )
        after = data.draw(st.sampled_from([None, BASE + timedelta(seconds=5)]), label="created_after")
        # Leaving out the other's word, or one's own, never reaches the other's memories.
        exclude = data.draw(st.sampled_from([None, [other.word], [actor.word], ["eu-west-1"]]), label="exclude")
        results = do_search(actor, query, tag, after, via, version, exclude)
        check_results(actor, model, results, "search")
        expect(all(matching(mine[pid], tag, after) for pid, _ in results), "search ignored its filters")

    elif operation == "list":
        limit = data.draw(st.integers(min_value=1, max_value=8), label="limit")
        cursor = data.draw(st.sampled_from([None, *cursors]), label="cursor")  # the other's cursors too
        results, next_cursor = do_list(actor, limit, cursor, tag, via, version)
        candidates = [(pid, h) for pid, h in newest_first(mine) if matching(h, tag, None)]
        if cursor:
            candidates = [(pid, h) for pid, h in candidates if (h.created_at, h.pk) < cursors[cursor]]
        expect(results == [(pid, h.content) for pid, h in candidates[:limit]], f"list (cursor {cursor})")
        remember_cursor(cursors, next_cursor, mine, results)

    elif operation == "list_all":
        seen, cursor = [], None
        for _ in range(len(mine) + 2):
            results, cursor = do_list(actor, 3, cursor, None, via, version)
            seen.extend(results)
            remember_cursor(cursors, cursor, mine, results)
            if not cursor:
                break
        expect(seen == [(pid, h.content) for pid, h in newest_first(mine)], "paging through the whole list")

    elif operation == "export":
        document = do_export(actor, via)
        exported = {(uuid.UUID(item["id"]), item["content"], item["created_at"]) for item in document["memories"]}
        expect(exported == {(pid, h.content, h.created_at.isoformat()) for pid, h in mine.items()}, "export")

    elif operation == "import":
        do_import_step(data, actor, other, via, model, serial)

    elif operation == "explore":
        entities = {
            user: Entity.objects.filter(space__personal_of=user).order_by("id") for user in (actor.user, other.user)
        }
        pool = [*(e.public_id for e in entities[actor.user]), *(e.public_id for e in entities[other.user])]
        entity_id = data.draw(st.sampled_from([*pool, uuid.uuid4()]), label="entity id")
        seen = do_explore(actor, entity_id, via, version)
        mentioned = EntityMention.objects.filter(
            entity__space__personal_of=actor.user, entity__public_id=entity_id, memory__superseded_by__isnull=True
        )
        expect((seen is not None) == mentioned.exists(), f"explore {entity_id}")
        if seen is not None:
            entity_ids, memory_ids = seen
            own = {str(e.public_id) for e in entities[actor.user]}
            expect(entity_ids <= own and memory_ids <= {str(pid) for pid in mine}, "explore showed the other's")


def do_import_step(data: st.DataObject, actor: Actor, other: Actor, via: str, model: Model, serial) -> None:
    """An import whose entries carry the other's ids, copies of the other's memories (a duplicate
    probe), the actor's own ids and copies, and new text: its outcome depends on the actor's
    memories alone."""
    mine, theirs = model[actor.name], model[other.name]
    entries = []
    for _ in range(data.draw(st.integers(min_value=1, max_value=4), label="entries")):
        kind = data.draw(st.sampled_from(["other_id", "own_id", "other_copy", "own_copy", "new"]), label="entry")
        n = next(serial)
        entry = {
            "content": f"Session {n}: imported, the staging password is {actor.word}-{n}.",
            "created_at": (BASE + timedelta(seconds=n % 40, microseconds=n)).isoformat(),
            "written_by": WRITER,
            "tags": ["deploy"],
        }
        source = mine if kind in ("own_id", "own_copy") else theirs
        if source and kind != "new":
            public_id = data.draw(st.sampled_from(list(source)), label="source")
            entry["id"] = str(public_id)
            if kind.endswith("copy"):
                entry.update(content=source[public_id].content, created_at=source[public_id].created_at.isoformat())
                if data.draw(st.booleans(), label="drop id"):
                    del entry["id"]
        entries.append(entry)
    before = {m.pk for m in Memory.objects.filter(space__personal_of=actor.user)}
    outcome = do_import(actor, {"format": "gnosem-export", "version": 1, "memories": entries}, via)

    ids = [entry["id"] for entry in entries if "id" in entry]
    if len(ids) != len(set(ids)):
        expect(isinstance(outcome, str) and "appears twice" in outcome, f"repeated id accepted: {outcome}")
        return
    keys = {(h.content, h.created_at) for h in mine.values()}
    expected, fresh = {"imported": 0, "duplicates": 0, "new_ids": 0, "compressed_dropped": 0}, []
    for entry in entries:
        key = (entry["content"], datetime.fromisoformat(entry["created_at"]))
        if key in keys:
            expected["duplicates"] += 1
            continue
        keys.add(key)
        fresh.append(entry)
        expected["imported"] += 1
        expected["new_ids"] += "id" in entry and uuid.UUID(entry["id"]) in mine
    expect(isinstance(outcome, dict), f"import refused: {outcome}")
    expect(all(outcome[key] == value for key, value in expected.items() if key in outcome), f"report {outcome}")
    added = list(Memory.objects.filter(space__personal_of=actor.user).exclude(pk__in=before))
    expect(len(added) == len(fresh), "imported count")
    for entry in fresh:
        memory = next(m for m in added if m.content == entry["content"])
        kept = "id" in entry and uuid.UUID(entry["id"]) not in mine
        expect((str(memory.public_id) == entry.get("id")) == kept, "an id kept or replaced against the rule")
    for memory in added:
        mine[memory.public_id] = held_of(memory)
