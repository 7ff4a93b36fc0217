"""Race fuzzing of notes: clients write short notes and delete them again 0-80 ms later, over REST
and MCP, while a consumer's worker threads index them, as production runs them (web processes and a
consumer sharing one PostgreSQL). No delete may fail (5xx, JSON-RPC -32603), and a deleted note is
gone for good: no row, no passage, no mention, nothing semantic_search finds.

PAIRS write-then-delete pairs per door from CLIENTS threads; the delays come from fixed seeds (the
interleaving still depends on the machine's timing). The counts are printed in the run's output.
"""

import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

import memories.indexing.queue
from memories.mcp.protocol import INTERNAL_ERROR
from memories.models import Note, NoteChunk, NoteMention
from memories.search.notes import semantic_search
from memories.tasks import index_note_task, load_embedding_model
from tests.fuzzing import report_line
from tests.memories.mcp.conftest import LEGACY, MODERN, McpCaller

PAIRS = 100
# A consumer's worker threads (GNOSEM_WORKERS' default), and as many clients: each note written is
# picked up at once.
WORKERS = CLIENTS = 2
# The longest wait between a note's write and its deletion: its indexing is under way by then.
MAX_DELAY_SECONDS = 0.08
TALLY: Counter[str] = Counter()

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fuzzing_conditions(settings) -> None:
    # What the fuzzing exercises is concurrency, not the per-token rate limit it would reach.
    settings.GNOSEM_TOKEN_RATE_LIMIT = None


@pytest.fixture(scope="module", autouse=True)
def report_counts(request) -> Iterator[None]:
    """Print what the fuzzing tried, for the record."""
    yield
    report_line(
        request.config,
        f"note race fuzzing: {TALLY['rest pairs']} REST and {TALLY['mcp pairs']} MCP write-then-delete pairs "
        f"racing {WORKERS} indexing threads; REST deletes answered 5xx {TALLY['rest 5xx']} times, MCP deletes "
        f"-32603 {TALLY['mcp -32603']} times; {TALLY['indexed']} notes indexed before their deletion, "
        f"{TALLY['skipped']} deleted first",
    )


@pytest.fixture
def consumer(monkeypatch) -> Iterator[Callable[[], Counter[str]]]:
    """Worker threads that run the indexing task of each note the web side queues, each on a
    database connection of its own, as a consumer does; yields what the tasks returned so far."""
    queued: queue.Queue[int | None] = queue.Queue()
    monkeypatch.setitem(memories.indexing.queue.TASKS, "index_note", queued.put)
    outcomes: Counter[str] = Counter()
    counting = threading.Lock()
    load_embedding_model()  # as a consumer does when it starts

    def so_far() -> Counter[str]:
        with counting:
            return Counter(outcomes)

    def work() -> None:
        try:
            while (note_id := queued.get()) is not None:
                try:
                    outcome = "indexed" if index_note_task.call_local(note_id) else "skipped"
                except Exception as exc:
                    outcome = f"failed: {type(exc).__name__}: {exc}"
                with counting:
                    outcomes[outcome] += 1
        finally:
            connection.close()

    threads = [threading.Thread(target=work, name=f"worker {i}") for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    yield so_far
    for _ in threads:
        queued.put(None)
    for thread in threads:
        thread.join(300)


def note_text(i: int) -> str:
    return f"# Deploy window {i}\n\nService tidepool-{i} deploys on Tuesdays at 10:00 UTC; Priya approves."


class Door:
    """Writes, deletes and reads a note over REST or MCP, as a client would."""

    def __init__(self, name: str, token: str, version: str = LEGACY) -> None:
        self.name = name
        self.tally: Counter[str] = Counter()  # this client's own: TALLY adds them up once it is done
        self.client = Client(raise_request_exception=False)
        self.mcp = McpCaller(self.client, token, version)
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def write(self, i: int) -> str:
        if self.name == "rest":
            body = {"title": f"Deploy window {i}", "content": note_text(i), "tags": ["deploys"]}
            response = self.client.post(reverse("api-notes"), body, content_type="application/json", **self.headers)
            assert response.status_code == 201, response.content
            return response.json()["id"]
        result = self.mcp.call(
            "note_write", {"title": f"Deploy window {i}", "content": note_text(i), "tags": ["deploys"]}
        )
        assert result["isError"] is False, result
        return result["structuredContent"]["id"]

    def delete(self, note_id: str) -> bool:
        """Whether the note was deleted; a failure is tallied."""
        if self.name == "rest":
            response = self.client.delete(reverse("api-note", args=[note_id]), **self.headers)
            self.tally["rest 5xx"] += response.status_code >= 500
            return response.status_code == 204
        response = self.mcp.request("tools/call", {"name": "note_delete", "arguments": {"id": note_id}})
        body = response.json()
        self.tally["mcp -32603"] += body.get("error", {}).get("code") == INTERNAL_ERROR
        return body.get("result", {}).get("isError") is False

    def is_gone(self, note_id: str) -> bool:
        if self.name == "rest":
            return self.client.get(reverse("api-note", args=[note_id]), **self.headers).status_code == 404
        result = self.mcp.call("note_get", {"id": note_id})
        return result["isError"] is True and "No note with id" in result["content"][0]["text"]


@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_notes_deleted_while_they_are_indexed_are_deleted_with_their_passages(door, owner, owner_token, consumer):
    failures: list[str] = []
    tallies: list[Counter[str]] = []

    def client(number: int) -> None:
        delays = random.Random(number)
        side = Door(door, owner_token, MODERN if number % 2 else LEGACY)
        try:
            for i in range(number, PAIRS, CLIENTS):
                note_id = side.write(i)
                time.sleep(delays.uniform(0, MAX_DELAY_SECONDS))
                if not side.delete(note_id):
                    failures.append(f"deleting note {i} failed")
                elif not side.is_gone(note_id):
                    failures.append(f"note {i} is still there after its deletion")
                side.tally[f"{door} pairs"] += 1
        except Exception as exc:
            failures.append(f"client {number}: {type(exc).__name__}: {exc}")
        finally:
            connection.close()
            tallies.append(side.tally)

    clients = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(300)
    # Let the workers finish what is queued before looking for what they left behind.
    deadline = time.monotonic() + 300
    while (outcomes := consumer()).total() < PAIRS and time.monotonic() < deadline:
        time.sleep(0.05)
    for tally in tallies:
        TALLY.update(tally)
    TALLY.update(indexed=outcomes["indexed"], skipped=outcomes["skipped"])

    assert failures == []
    assert set(outcomes) <= {"indexed", "skipped"}, outcomes
    assert not Note.objects.filter(space__personal_of=owner).exists()
    assert not NoteChunk.objects.filter(space__personal_of=owner).exists()
    assert not NoteMention.objects.filter(note__space__personal_of=owner).exists()
    assert semantic_search(owner=owner, query="when does tidepool deploy?", kinds=["notes"]) == []
