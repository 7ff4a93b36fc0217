"""Notes: written, read, listed, changed and deleted through the service, MCP and REST; embedded
passage by passage; found by semantic_search with their best passage; linked into the graph; and
a stranger seeing none of it."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

import memories.indexing.queue
from gnosem.errors import NotFound, QuotaExceeded, ValidationError
from memories.graph.explore import graph_explore
from memories.indexing import lifecycle as indexing_lifecycle
from memories.indexing import vectors
from memories.indexing.lifecycle import NOTES
from memories.models import IndexingStatus, Note, NoteChunk, NoteMention, Quota
from memories.notes import services as notes
from memories.search.notes import note_search, semantic_search
from tests.memories.locking import lock_waiters
from tests.memories.mcp.conftest import McpCaller
from tests.memories.stored import entities_keyed

RUNBOOK = """# Database failover runbook

Owner: Priya Raman. Applies to db-primary-2.larkspur.internal.

## When to fail over

Fail over when the primary has been unreachable for five minutes and replication lag on the standby
is under 30 seconds. Page the on-call lead before you start.

## Promote the standby

1. Stop writes: set `TIDEPOOL_READ_ONLY=1` on every Tidepool worker.
2. Run `pg_ctl promote -D /var/lib/postgresql/16/main` on db-standby-1.
3. Point PgBouncer at the new primary and reload it.

## Afterwards

Open an incident ticket (INC-2291 is the template) and schedule the post-mortem within two days.
"""
OFFSITE = """# Team offsite in Porto

We meet in Porto from 12 to 14 May. The hotel is near the river; dinner on the first evening is at a
fish restaurant Miguel booked. Bring a laptop for the planning day.
"""


@pytest.fixture
def indexed(owner, django_capture_on_commit_callbacks):
    """Write notes and run what their commits queue (their embedding), as a worker would."""

    def indexed(title: str, content: str, **fields) -> Note:
        with django_capture_on_commit_callbacks(execute=True):
            note = notes.note_write(owner=owner, title=title, content=content, **fields)
        note.refresh_from_db()
        return note

    return indexed


def test_a_note_is_embedded_passage_by_passage_under_its_headings(indexed):
    note = indexed("Failover runbook", RUNBOOK, tags=["ops"])

    assert note.indexing_status == IndexingStatus.INDEXED
    chunks = list(NoteChunk.objects.filter(note=note).order_by("position"))
    assert len(chunks) >= 4
    headings = {chunk.heading for chunk in chunks}
    assert "Database failover runbook > Promote the standby" in headings
    promote = next(chunk for chunk in chunks if chunk.heading.endswith("Promote the standby"))
    assert "pg_ctl promote" in RUNBOOK[promote.start : promote.end]
    assert promote.text.startswith("Failover runbook > Database failover runbook > Promote the standby\n")


def test_note_search_finds_the_note_and_its_passage_by_meaning_and_by_exact_words(owner, indexed):
    runbook = indexed("Failover runbook", RUNBOOK)
    indexed("Offsite", OFFSITE)

    [best, *_] = note_search(owner=owner, query="steps to promote the standby to primary")
    assert best.note == runbook and "pg_ctl promote" in best.passage
    assert best.heading.endswith("Promote the standby")
    assert best.passage == RUNBOOK[best.start : best.end]
    [exact, *_] = note_search(owner=owner, query="INC-2291")
    assert exact.note == runbook and "INC-2291" in exact.passage
    places = note_search(owner=owner, query="where is the team trip?")
    assert places[0].note.title == "Offsite"
    assert len({hit.note.pk for hit in places}) == len(places)  # each note once


def test_semantic_search_mixes_kinds_and_filters_by_tags(owner, indexed, write_indexed):
    indexed("Failover runbook", RUNBOOK, tags=["ops"])
    write_indexed(owner, "We fail over the database only with the on-call lead's approval.", tags=["ops"])

    both = semantic_search(owner=owner, query="database failover approval")
    assert {type(hit).__name__ for hit in both} == {"NoteHit", "SearchHit"}
    only_notes = semantic_search(owner=owner, query="database failover", kinds=["notes"])
    assert all(type(hit).__name__ == "NoteHit" for hit in only_notes)
    assert semantic_search(owner=owner, query="database failover", tags=["travel"]) == []
    with pytest.raises(ValidationError, match="kinds"):
        semantic_search(owner=owner, query="x", kinds=["photos"])


def test_an_update_reembeds_and_tags_alone_relink(owner, indexed, django_capture_on_commit_callbacks):
    note = indexed("Offsite", OFFSITE)
    with django_capture_on_commit_callbacks(execute=True):
        notes.note_update(owner=owner, public_id=note.public_id, content=OFFSITE.replace("Porto", "Lisbon"))
    note.refresh_from_db()
    assert note.indexing_status == IndexingStatus.INDEXED
    assert "Lisbon" in note_search(owner=owner, query="Lisbon")[0].passage

    notes.note_update(owner=owner, public_id=note.public_id, tags=["project:offsite"])
    assert NoteMention.objects.filter(note=note, entity__in=entities_keyed("offsite"), source="tag").exists()
    with pytest.raises(ValidationError, match="nothing to change"):
        notes.note_update(owner=owner, public_id=note.public_id)


def test_notes_join_the_graph(owner, indexed):
    note = indexed("Failover runbook", RUNBOOK)

    view = graph_explore(owner=owner, entity="Priya Raman")
    assert "pgbouncer" in {node.entity.key for node in view.nodes}
    edge = next(edge for edge in view.edges if {edge.source.key, edge.target.key} == {"priya raman", "pgbouncer"})
    assert (edge.memories, edge.notes, edge.note_ids) == (0, 1, [note.public_id])  # linked by the note
    assert view.notes == [note]


def test_bad_notes_are_clear_errors_and_nothing_is_half_written(owner, settings):
    settings.GNOSEM_NOTE_MAX_BYTES = 1_000
    for fields, message in [
        ({"title": "", "content": "x"}, "title"),
        ({"title": "a\x07b", "content": "x"}, "title"),
        ({"title": "t" * 201, "content": "x"}, "title"),
        ({"title": "t", "content": "   "}, "content"),
        ({"title": "t", "content": "a\x00b"}, "NUL"),
        ({"title": "t", "content": "é" * 600}, "at most 1,000 bytes"),
        ({"title": "t", "content": "x", "tags": ["Not A Tag!"]}, "tag"),
        ({"title": "t", "content": 5}, "content"),
    ]:
        with pytest.raises(ValidationError, match=message):
            notes.note_write(owner=owner, **fields)
    assert not Note.objects.exists()
    Quota.objects.create(user=owner, max_chars=100)
    with pytest.raises(QuotaExceeded):
        notes.note_write(owner=owner, title="t", content="x" * 101)
    assert not Note.objects.exists()


def test_a_stranger_sees_none_of_the_owners_notes(owner, stranger, indexed, mcp_as, stranger_token, client):
    note = indexed("Failover runbook", RUNBOOK)

    assert note_search(owner=stranger, query="promote the standby") == []
    for call in (notes.note_get, notes.note_delete):
        with pytest.raises(NotFound):
            call(owner=stranger, public_id=note.public_id)
    with pytest.raises(NotFound):
        notes.note_update(owner=stranger, public_id=note.public_id, title="mine")
    assert notes.note_list(owner=stranger).notes == []
    stranger_mcp = mcp_as(stranger_token)
    assert "No note with id" in stranger_mcp.fails("note_get", {"id": str(note.public_id)})
    assert stranger_mcp.ok("semantic_search", {"query": "promote the standby"})["results"] == []
    headers = {"HTTP_AUTHORIZATION": f"Bearer {stranger_token}"}
    assert client.get(reverse("api-note", args=[note.public_id]), **headers).status_code == 404
    assert client.delete(reverse("api-note", args=[note.public_id]), **headers).status_code == 404
    assert Note.objects.filter(pk=note.pk).exists()


def test_notes_over_mcp(owner, mcp, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        written = mcp.ok("note_write", {"title": "Failover runbook", "content": RUNBOOK, "tags": ["ops"]})
    assert written["indexing_status"] == "pending" and written["tokens"] == (len(RUNBOOK) + 3) // 4

    read = mcp.ok("note_get", {"id": written["id"], "max_tokens": 100})
    assert read["content"] == RUNBOOK[: len(read["content"])] and read["next_start"] == len(read["content"])
    rest = mcp.ok("note_get", {"id": written["id"], "start": read["next_start"]})
    assert read["content"] + rest["content"] == RUNBOOK and rest["next_start"] is None
    assert "past the note's end" in mcp.fails("note_get", {"id": written["id"], "start": 10**6})

    found = mcp.ok("semantic_search", {"query": "point the connection pooler at the new primary"})["results"]
    assert found[0]["kind"] == "note" and found[0]["id"] == written["id"] and "PgBouncer" in found[0]["passage"]
    assert mcp.ok("note_list", {"tags": ["ops"]})["notes"][0]["id"] == written["id"]
    assert "cursor" in mcp.fails("note_list", {"cursor": "garbage"})
    assert mcp.ok("note_update", {"id": written["id"], "title": "Failover"})["title"] == "Failover"
    assert mcp.ok("note_delete", {"id": written["id"]}) == {"id": written["id"], "deleted": True}
    assert "note_list" in mcp.fails("note_get", {"id": written["id"]})


def test_notes_over_rest(owner, client, owner_token, owner_read_token):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {owner_token}"}
    created = client.post(
        reverse("api-notes"), {"title": "Offsite", "content": OFFSITE}, content_type="application/json", **headers
    )
    assert created.status_code == 201, created.content
    note_id = created.json()["id"]
    assert client.get(reverse("api-note", args=[note_id]), **headers).json()["content"] == OFFSITE
    assert client.get(reverse("api-notes"), **headers).json()["notes"][0]["id"] == note_id
    bad = client.post(reverse("api-notes"), {"title": "x", "body": "y"}, content_type="application/json", **headers)
    assert bad.status_code == 400
    read_only = {"HTTP_AUTHORIZATION": f"Bearer {owner_read_token}"}
    refused = client.post(
        reverse("api-notes"), {"title": "t", "content": "c"}, content_type="application/json", **read_only
    )
    assert refused.status_code == 403
    search = reverse("api-semantic-search")
    assert client.get(search, {"query": "porto", "kinds": "notes"}, **headers).status_code == 200
    assert client.get(search, {"query": "porto", "kinds": "pics"}, **headers).status_code == 400
    patched = client.patch(
        reverse("api-note", args=[note_id]), {"tags": ["travel"]}, content_type="application/json", **headers
    )
    assert patched.json()["tags"] == ["travel"]
    assert client.delete(reverse("api-note", args=[note_id]), **headers).status_code == 204


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (-5, "must be a whole number of characters from 0 on, such as a passage's `start` or a `next_start`."),
        (len(OFFSITE) + 1, f"is past the note's end ({len(OFFSITE)} characters)."),
    ],
)
def test_a_start_outside_the_note_is_refused_alike_over_mcp_and_rest(owner, owner_token, mcp, client, start, message):
    note = notes.note_write(owner=owner, title="Offsite", content=OFFSITE)

    over_mcp = mcp.fails("note_get", {"id": str(note.public_id), "start": start})
    over_rest = client.get(
        reverse("api-note", args=[note.public_id]), {"start": start}, HTTP_AUTHORIZATION=f"Bearer {owner_token}"
    )

    assert over_mcp == f"Invalid argument `start`: {message}"
    assert over_rest.status_code == 400 and over_rest.json()["error"]["message"] == f"start: {message}"
    assert mcp.ok("note_get", {"id": str(note.public_id), "start": len(OFFSITE)})["content"] == ""


def test_listing_notes_reads_no_text(owner, indexed):
    indexed("Failover runbook", RUNBOOK)

    with CaptureQueriesContext(connection) as queries:
        notes.note_list(owner=owner)
    assert all('"memories_note"."content"' not in query["sql"] for query in queries.captured_queries)


def test_switching_the_embedding_model_queues_the_notes_again(owner, indexed):
    note = indexed("Offsite", OFFSITE)

    assert vectors.switch_serving_model("another-model") == 0  # no memory lacks its vectors

    note.refresh_from_db()
    assert note.indexing_status == IndexingStatus.PENDING and note.indexing_queued_at is not None


def test_the_sweep_queues_again_a_note_left_pending(owner, settings):
    note = notes.note_write(owner=owner, title="Offsite", content=OFFSITE)  # its task never ran
    long_ago = timezone.now() - timedelta(seconds=settings.GNOSEM_REQUEUE_AFTER_SECONDS + 60)
    Note.objects.filter(pk=note.pk).update(indexing_queued_at=long_ago)
    fresh = notes.note_write(owner=owner, title="Runbook", content=RUNBOOK)

    assert indexing_lifecycle.requeue_stale(NOTES) == [note.pk]
    note.refresh_from_db()
    assert note.indexing_queued_at > long_ago
    assert indexing_lifecycle.requeue_stale(NOTES) == [] and fresh.pk != note.pk


def delete_through(door: str, token: str, note: Note) -> tuple[int, dict | None]:
    """Delete the note over REST or MCP as a client would: the HTTP status and the JSON-RPC body."""
    client = Client(raise_request_exception=False)
    if door == "rest":
        response = client.delete(reverse("api-note", args=[note.public_id]), HTTP_AUTHORIZATION=f"Bearer {token}")
        return response.status_code, None
    response = McpCaller(client, token).request(
        "tools/call", {"name": "note_delete", "arguments": {"id": str(note.public_id)}}
    )
    return response.status_code, response.json()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_a_note_deleted_while_the_worker_stores_its_passages_is_deleted_with_them(
    door, owner, owner_token, monkeypatch
):
    queued: list[int] = []
    monkeypatch.setitem(memories.indexing.queue.TASKS, "index_note", queued.append)  # indexed below, in a thread
    note = notes.note_write(owner=owner, title="Failover runbook", content=RUNBOOK, tags=["ops"])
    assert queued == [note.pk]
    # The worker pauses inside the transaction that stores the passages (written, not yet committed).
    storing, resume = threading.Event(), threading.Event()
    link = notes.notes_link

    def link_when_resumed(note_ids: list[int]) -> int:
        storing.set()
        assert resume.wait(120)
        return link(note_ids)

    monkeypatch.setattr(notes, "notes_link", link_when_resumed)
    outcomes: dict[str, object] = {}

    def run(name: str, work) -> None:
        try:
            outcomes[name] = work()
        except Exception as exc:
            outcomes[name] = exc
        finally:
            connection.close()

    worker = threading.Thread(target=run, args=("indexed", lambda: notes.note_index(note.pk)))
    deleter = threading.Thread(target=run, args=("deleted", lambda: delete_through(door, owner_token, note)))
    worker.start()
    assert storing.wait(120), outcomes
    deleter.start()
    deadline = time.monotonic() + 60
    while lock_waiters() == 0 and deleter.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    resume.set()
    worker.join(120)
    deleter.join(120)

    status, body = outcomes["deleted"]
    assert status == (204 if door == "rest" else 200), outcomes
    if door == "mcp":
        assert body.get("result", {}).get("structuredContent") == {"id": str(note.public_id), "deleted": True}, body
    assert not Note.objects.filter(pk=note.pk).exists()
    assert not NoteChunk.objects.filter(note_id=note.pk).exists()
    assert not NoteMention.objects.filter(note_id=note.pk).exists()
    assert semantic_search(owner=owner, query="promote the standby", kinds=["notes"]) == []
