"""Corrections and near-duplicates as a state machine: one owner writes restatements of a few facts
(the worker links them as near-duplicates once embedded), corrects memories with `supersedes`,
merges, keeps apart, makes current again and deletes, each step through the services, REST, MCP or
the dashboard. After every step: no loop of `superseded_by` or of `duplicate_of` links, every
memory found by get and by the list, and the owner's export imports into a fresh account; no door
ever answers a 5xx or JSON-RPC -32603, and the services raise nothing but their refusals.

Bounded to keep `make test` quick: EXAMPLES runs of up to STEPS steps, counted in the run's output.
Each run starts from an empty account inside a savepoint rolled back at its end.
"""

import json
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import hypothesis
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client
from django.urls import reverse
from hypothesis import Phase
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from gnosem.errors import NotFound, ValidationError
from memories import selectors, services
from memories.hygiene import near_duplicates
from memories.models import IndexingStatus, Memory
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories
from tests.fuzzing import fuzz_settings, report_line
from tests.memories.hygiene.test_links import on_loops
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller

EXAMPLES = 20
STEPS = 20

# Restatements of three facts: those of one fact are linked as near-duplicates once embedded.
FACTS = [
    "The staging database listens on port 5433 because 5432 is taken by the legacy cluster.",
    "Maria is on vacation in Lisbon from August 3 to August 17.",
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
]
OPENINGS = ["", "Note: ", "Reminder: ", "FYI, "]
texts = st.builds(lambda fact, opening: opening + fact, st.sampled_from(FACTS), st.sampled_from(OPENINGS))
WRITE_DOORS = ("service", "rest", "mcp")
REVIEW_DOORS = ("service", "rest", "page")  # MCP has no review tools
REVIEWS: dict[str, tuple[Callable[..., Memory], str, str]] = {  # service, REST action, dashboard page
    "merge": (near_duplicates.memory_merge, "merge", "memory_merge"),
    "keep apart": (near_duplicates.memory_keep_apart, "keep-apart", "memory_keep_apart"),
    "reinstate": (services.memory_reinstate, "reinstate", "memory_reinstate"),
}
versions = st.sampled_from([LEGACY, MODERN])


@dataclass
class Doors:
    """One owner's ways in (services, REST, MCP, the dashboard), each answer checked: a refusal is
    counted, anything else than an answer or a refusal fails the test."""

    owner: object
    token: str
    browser: Client
    tried: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.api = Client(headers={"Authorization": f"Bearer {self.token}"})

    def rest(self, what: str, method: str, path: str, body: dict | None, allowed: tuple[int, ...]) -> dict:
        send = getattr(self.api, method)
        response = send(f"/api/v1/{path}", body, content_type="application/json") if body else send(f"/api/v1/{path}")
        assert response.status_code in allowed, f"{what} answered {response.status_code}: {response.content[:300]!r}"
        self.refused[what] += response.status_code in (400, 404)
        return response.json() if response.content else {}

    def page(self, what: str, name: str, public_id: str) -> None:
        response = self.browser.post(reverse(name, args=[public_id]))
        assert response.status_code in (302, 404), f"{what} answered {response.status_code}"
        self.refused[what] += response.status_code == 404

    def mcp(self, what: str, tool: str, arguments: dict, version: str) -> dict | None:
        """The tool's structured result, or None when it refused (`isError`)."""
        response = McpCaller(self.api, self.token, version).request(
            "tools/call", {"name": tool, "arguments": arguments}
        )
        body = response.json()
        assert response.status_code == 200 and "result" in body, f"{what} answered {response.status_code}: {body}"
        self.refused[what] += body["result"]["isError"]
        return None if body["result"]["isError"] else body["result"]["structuredContent"]

    def service(self, what: str, service: Callable[..., Memory | None], **arguments) -> None:
        try:
            service(owner=self.owner, **arguments)
        except (ValidationError, NotFound):
            self.refused[what] += 1

    def write(self, content: str, supersedes: list[str], door: str, version: str) -> None:
        what = f"write ({door})"
        self.tried[what] += 1
        fields = {"content": content, **({"supersedes": supersedes} if supersedes else {})}
        if door == "service":
            self.service(what, services.memory_write, **fields)
        elif door == "rest":
            self.rest(what, "post", "memories", fields, (200, 201, 400))
        else:
            self.mcp(what, "memory_write", fields, version)

    def update(self, public_id: str, supersedes: list[str], content: str | None, door: str, version: str) -> None:
        what = f"update ({door})"
        self.tried[what] += 1
        fields = {"supersedes": supersedes, **({"content": content} if content else {})}
        if door == "service":
            self.service(what, services.memory_update, public_id=uuid.UUID(public_id), **fields)
        elif door == "rest":
            self.rest(what, "patch", f"memories/{public_id}", fields, (200, 400, 404))
        else:
            self.mcp(what, "memory_update", {"id": public_id, **fields}, version)

    def review(self, public_id: str, action: str, door: str) -> None:
        what = f"{action} ({door})"
        self.tried[what] += 1
        service, path, page = REVIEWS[action]
        if door == "service":
            self.service(what, service, public_id=uuid.UUID(public_id))
        elif door == "rest":
            self.rest(what, "post", f"memories/{public_id}/{path}", None, (200, 400, 404))
        else:
            self.page(what, page, public_id)

    def delete(self, public_id: str, door: str, version: str) -> None:
        what = f"delete ({door})"
        self.tried[what] += 1
        if door == "service":
            self.service(what, services.memory_delete, public_id=uuid.UUID(public_id))
        elif door == "rest":
            self.rest(what, "delete", f"memories/{public_id}", None, (204, 404))
        elif door == "page":
            self.page(what, "memory_delete", public_id)
        else:
            self.mcp(what, "memory_delete", {"id": public_id}, version)

    def embed_waiting(self) -> None:
        """The worker embeds what waits, linking near-duplicates."""
        waiting = selectors.memories_of(self.owner).filter(indexing_status=IndexingStatus.PENDING)
        services.memories_index(memory_ids=list(waiting.values_list("pk", flat=True)))


class Links(RuleBasedStateMachine):
    """Steps draw from the memories stored now (in id order, so that a run repeats), and the
    near-duplicate rules wait until the worker has linked some."""

    doors: Doors  # set by the test

    def __init__(self) -> None:
        super().__init__()
        self.savepoint = transaction.savepoint()

    def teardown(self) -> None:
        transaction.savepoint_rollback(self.savepoint)

    def stored(self, **filters) -> list[Memory]:
        return list(selectors.memories_of(self.doors.owner).filter(**filters).order_by("pk"))

    def pick(self, data: st.DataObject, label: str, **filters) -> Memory:
        return data.draw(st.sampled_from(self.stored(**filters)), label=label)

    def has(self, **filters) -> bool:
        return selectors.memories_of(self.doors.owner).filter(**filters).exists()

    @rule(
        data=st.data(),
        content=texts,
        corrects=st.sampled_from([0, 0, 0, 1, 2]),  # how many memories it may supersede
        door=st.sampled_from(WRITE_DOORS),
        version=versions,
        embedded=st.sampled_from([True, True, False]),
    )
    def write(self, data: st.DataObject, content: str, corrects: int, door: str, version: str, embedded: bool) -> None:
        stored = [str(memory.public_id) for memory in self.stored()]
        supersedes = (
            data.draw(st.lists(st.sampled_from(stored), max_size=corrects), label="supersedes") if stored else []
        )
        self.doors.write(content, supersedes, door, version)
        if embedded:
            self.doors.embed_waiting()

    @precondition(lambda self: self.has())
    @rule(
        data=st.data(),
        content=st.none() | texts,
        door=st.sampled_from(WRITE_DOORS),
        version=versions,
        embedded=st.booleans(),
    )
    def update(self, data: st.DataObject, content: str | None, door: str, version: str, embedded: bool) -> None:
        memory = self.pick(data, "updated")
        stored = [str(other.public_id) for other in self.stored()]
        supersedes = data.draw(st.lists(st.sampled_from(stored), min_size=1, max_size=2), label="supersedes")
        self.doors.update(str(memory.public_id), supersedes, content, door, version)
        if embedded:
            self.doors.embed_waiting()

    @precondition(lambda self: self.has(duplicate_of__isnull=False))
    @rule(data=st.data(), door=st.sampled_from(WRITE_DOORS), version=versions)
    def correct_the_original(self, data: st.DataObject, door: str, version: str) -> None:
        """A near-duplicate is marked as superseding the memory it restates, or what corrected that one."""
        memory = self.pick(data, "near-duplicate", duplicate_of__isnull=False)
        original = memory.duplicate_of
        older = [original, *self.stored(pk=original.superseded_by_id)]
        target = data.draw(st.sampled_from(older), label="superseded")
        self.doors.update(str(memory.public_id), [str(target.public_id)], None, door, version)

    @precondition(lambda self: self.has(duplicate_of__isnull=False))
    @rule(data=st.data(), action=st.sampled_from(["merge", "keep apart"]), door=st.sampled_from(REVIEW_DOORS))
    def review_a_near_duplicate(self, data: st.DataObject, action: str, door: str) -> None:
        memory = self.pick(data, "near-duplicate", duplicate_of__isnull=False)
        self.doors.review(str(memory.public_id), action, door)

    @precondition(lambda self: self.has())
    @rule(data=st.data(), action=st.sampled_from(sorted(REVIEWS)), door=st.sampled_from(REVIEW_DOORS))
    def review_any(self, data: st.DataObject, action: str, door: str) -> None:
        self.doors.review(str(self.pick(data, "reviewed").public_id), action, door)

    @precondition(lambda self: self.has())
    @rule(data=st.data(), door=st.sampled_from([*WRITE_DOORS, "page"]), version=versions)
    def delete(self, data: st.DataObject, door: str, version: str) -> None:
        self.doors.delete(str(self.pick(data, "deleted").public_id), door, version)

    @invariant()
    def links_never_loop(self) -> None:
        assert not on_loops("superseded_by") and not on_loops("duplicate_of")

    @invariant()
    def every_memory_is_found(self) -> None:
        stored = self.stored()
        for memory in stored:
            selectors.memory_get(owner=self.doors.owner, public_id=memory.public_id)
        listed = self.doors.rest("list (rest)", "get", "memories?include_superseded=true&limit=100", None, (200,))
        assert {item["id"] for item in listed["memories"]} == {str(memory.public_id) for memory in stored}

    @invariant()
    def the_export_imports_into_a_fresh_account(self) -> None:
        document = json.loads("".join(export_chunks(exported_space(self.doors.owner))))
        savepoint = transaction.savepoint()
        try:
            fresh = get_user_model().objects.create_user(username=f"fresh-{uuid.uuid4()}")
            report = import_memories(owner=fresh, document=document)
            assert report.imported + report.duplicates == len(document["memories"])
            assert not on_loops("superseded_by") and not on_loops("duplicate_of")
        finally:
            transaction.savepoint_rollback(savepoint)


def test_corrections_merges_and_deletes_never_loop_or_fail(
    owner, owner_token, owner_client, index, settings, pytestconfig
):
    settings.GNOSEM_TOKEN_RATE_LIMIT = None  # hundreds of calls a minute are the point here
    settings.GNOSEM_IMPORT_RATE_LIMIT = None
    Links.doors = doors = Doors(owner, owner_token, owner_client)
    # The model loads before the runs, so that no step pays for it.
    index(services.memory_write(owner=owner, content="Warm-up."))
    Memory.objects.filter(space__personal_of=owner).delete()
    run_settings = hypothesis.settings(
        fuzz_settings(EXAMPLES), stateful_step_count=STEPS, phases=[Phase.explicit, Phase.generate]
    )
    try:
        run_state_machine_as_test(Links, settings=run_settings)
    finally:
        counts = ", ".join(f"{name} {count}" for name, count in sorted(doors.tried.items()))
        report_line(
            pytestconfig,
            f"links state machine: {EXAMPLES} runs of up to {STEPS} steps, {sum(doors.tried.values())} operations, "
            f"{sum(doors.refused.values())} refused ({counts})",
        )
