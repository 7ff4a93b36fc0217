"""Export format version 3: notes travel with the memories, are checked whole before anything is
written, keep their ids and times, skip exact duplicates, count against the quota, are embedded
again after the import, and a stranger's export never holds them."""

import copy
import json
import uuid
from datetime import UTC, datetime

import pytest
from django.test import Client

from gnosem.errors import QuotaExceeded, ValidationError
from memories import services
from memories.models import IndexingStatus, Memory, Note, NoteFormat, Quota
from memories.notes import services as notes
from memories.search.notes import note_search
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories
from tests.memories.stored import notes_titled

RUNBOOK = """# Database failover runbook

Fail over when the primary has been unreachable for five minutes. Page the on-call lead first.

## Promote the standby

Run `pg_ctl promote` on db-standby-1, then point PgBouncer at it — and tell #ops ✅.
"""
CREATED = "2025-03-01T09:30:00.123456+00:00"
UPDATED = "2025-03-02T10:00:00+00:00"


def export_of(owner) -> dict:
    return json.loads("".join(export_chunks(exported_space(owner))))


def document_of(*note_entries: object, memories: list | None = None, version: int = 3) -> dict:
    return {"format": "gnosem-export", "version": version, "memories": memories or [], "notes": list(note_entries)}


def a_note(**fields) -> dict:
    return {"title": "Failover runbook", "content": RUNBOOK, "created_at": CREATED, **fields}


@pytest.fixture
def runbook(owner) -> Note:
    note = notes.note_write(owner=owner, title="Failover  runbook", content=RUNBOOK, tags=["ops", "DB"])
    return notes.note_update(owner=owner, public_id=note.public_id, tags=["ops", "db", "runbook"])


@pytest.fixture
def plain(owner) -> Note:
    return notes.note_write(owner=owner, title="Porto offsite", content="  We meet in Porto.\r\n\n", format="text")


def test_an_export_holds_every_note_with_all_its_fields(owner, runbook, plain):
    services.memory_write(owner=owner, content="We deploy on Tuesdays.")

    text = "".join(export_chunks(exported_space(owner)))
    document = json.loads(text)

    assert document["version"] == 3 and list(document) == ["format", "version", "exported_at", "memories", "notes"]
    assert len(document["memories"]) == 1
    assert document["notes"] == [
        {
            "id": str(runbook.public_id),
            "title": "Failover runbook",
            "content": RUNBOOK,
            "format": "markdown",
            "tags": ["ops", "db", "runbook"],
            "created_at": runbook.created_at.isoformat(),
            "updated_at": runbook.updated_at.isoformat(),
        },
        {
            "id": str(plain.public_id),
            "title": "Porto offsite",
            "content": "  We meet in Porto.\r\n\n",
            "format": "text",
            "tags": [],
            "created_at": plain.created_at.isoformat(),
            "updated_at": plain.updated_at.isoformat(),
        },
    ]
    assert runbook.updated_at > runbook.created_at
    # One entry a line, as the memories are.
    lines = [line.rstrip(",") for line in text.splitlines()]
    assert all(json.dumps(entry, ensure_ascii=False) in lines for entry in document["notes"])


def test_notes_make_the_round_trip_into_another_account(owner, stranger, runbook, plain):
    document = export_of(owner)

    report = import_memories(owner=stranger, document=copy.deepcopy(document))

    assert (report.notes_imported, report.notes_duplicates, report.notes_new_ids) == (2, 0, 0)
    assert export_of(stranger)["notes"] == document["notes"]
    [copied] = notes_titled("Porto offsite", space__personal_of=stranger)
    assert copied.content.encode() == plain.content.encode()
    assert (copied.format, copied.created_at, copied.updated_at) == (
        NoteFormat.TEXT,
        plain.created_at,
        plain.updated_at,
    )
    assert Note.objects.filter(space__personal_of=owner).count() == 2


def test_a_note_keeps_its_id_unless_the_owner_already_uses_it(owner, runbook):
    free = str(uuid.uuid4())
    document = document_of(
        a_note(id=str(runbook.public_id), title="Another runbook"),
        a_note(id=free, title="A third runbook"),
    )

    report = import_memories(owner=owner, document=document)

    assert (report.notes_imported, report.notes_new_ids) == (2, 1)
    [renewed] = notes_titled("Another runbook", space__personal_of=owner)
    assert renewed.public_id != runbook.public_id
    assert [str(note.public_id) for note in notes_titled("A third runbook", space__personal_of=owner)] == [free]
    assert Note.objects.get(pk=runbook.pk).title == "Failover runbook"
    assert "2 notes imported, 0 duplicates skipped, 1 given new ids" in str(report)


def test_exact_duplicates_are_skipped_whether_the_owner_has_them_or_the_file_repeats_them(owner, runbook):
    again = import_memories(owner=owner, document=export_of(owner))
    assert (again.notes_imported, again.notes_duplicates) == (0, 1)

    document = document_of(a_note(), a_note(), a_note(title="Same text, other title"), a_note(created_at=UPDATED))
    report = import_memories(owner=owner, document=document)

    assert (report.notes_imported, report.notes_duplicates) == (3, 1)
    assert Note.objects.filter(space__personal_of=owner).count() == 4


def test_a_version_2_file_and_a_version_3_file_without_notes_still_import(owner):
    memory = {"content": "We deploy on Tuesdays.", "created_at": CREATED}
    old = {"format": "gnosem-export", "version": 2, "memories": [memory]}
    bare = {"format": "gnosem-export", "version": 3, "memories": [{**memory, "content": "Thursdays now."}]}

    assert import_memories(owner=owner, document=old).imported == 1
    assert import_memories(owner=owner, document=bare).imported == 1
    assert not Note.objects.exists()


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (document_of(a_note(), {"content": "x", "created_at": CREATED}), "note #2: title: must be a non-empty line"),
        (document_of(a_note(), a_note(title="Big", content="é" * 600)), "note #2: content: is 1,200 bytes"),
        (document_of(a_note(), a_note(title="Doc", format="docx")), "note #2: format: one of markdown, text, pdf"),
        (document_of(a_note(), a_note(title="Tagged", tags=["no spaces!"])), "note #2: tags: 'no spaces!'"),
        (document_of(a_note(), a_note(title="Tagged", tags="ops")), "note #2: tags: must be a list"),
        (document_of(a_note(), "just text"), "note #2: note: must be an object"),
        (document_of(a_note(), a_note(title="Extra", body="?")), r"note #2: note: unknown field\(s\) body"),
        (document_of(a_note(), a_note(title="Bad id", id="nope")), "note #2: id: 'nope' is not a note id"),
        (document_of(a_note(), {"title": "When?", "content": "x"}), "note #2: created_at: is missing"),
        (document_of(a_note(), a_note(title="Late", created_at="2025-02-30")), "note #2: created_at: '2025-02-30'"),
        (document_of(a_note(), a_note(title="Never", created_at=None)), "note #2: created_at: must be .* not null"),
        (document_of(a_note(), a_note(title="NUL", content="a\x00b")), "note #2: content: must not contain NUL"),
        ({**document_of(), "notes": {"title": "x"}}, '"notes" must be a list'),
        (document_of(a_note(), version=2), '"notes", which need export format version 3; this file says version 2'),
        (document_of(a_note(), version=1), '"notes", which need export format version 3; this file says version 1'),
    ],
)
def test_a_bad_note_entry_refuses_the_whole_file(owner, settings, document, message):
    settings.GNOSEM_NOTE_MAX_BYTES = 1000
    document["memories"] = [{"content": "We deploy on Tuesdays.", "created_at": CREATED}]

    with pytest.raises(ValidationError, match=message):
        import_memories(owner=owner, document=document)

    assert not Note.objects.exists() and not Memory.objects.exists()


def test_a_note_id_twice_in_a_file_is_refused(owner):
    same = str(uuid.uuid4())
    document = document_of(a_note(id=same), a_note(id=same, title="Other"))

    with pytest.raises(ValidationError, match=f"note #2: id {same} appears twice \\(also #1\\)"):
        import_memories(owner=owner, document=document)
    assert not Note.objects.exists()


def test_the_quota_counts_the_notes_and_refuses_everything_over_it(owner):
    Quota.objects.create(user=owner, max_chars=len(RUNBOOK) + 10)
    memory = {"content": "We deploy on Tuesdays, after the stand-up.", "created_at": CREATED}

    with pytest.raises(QuotaExceeded, match="Quota reached"):
        import_memories(owner=owner, document=document_of(a_note(), memories=[memory]))

    assert not Note.objects.exists() and not Memory.objects.exists()
    import_memories(owner=owner, document=document_of(a_note()))
    assert Note.objects.filter(space__personal_of=owner).count() == 1


def test_imported_notes_are_pending_until_their_queued_embedding_runs(
    owner, stranger, django_capture_on_commit_callbacks
):
    document = document_of(a_note(tags=["ops"]))

    with django_capture_on_commit_callbacks() as callbacks:
        import_memories(owner=stranger, document=document)
    note = Note.objects.get(space__personal_of=stranger)
    assert note.indexing_status == IndexingStatus.PENDING and note.indexing_queued_at is not None
    assert callbacks

    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:
            callback()
    note.refresh_from_db()

    assert note.indexing_status == IndexingStatus.INDEXED
    hits = note_search(owner=stranger, query="promote the standby database")
    assert [hit.note.pk for hit in hits] == [note.pk]
    assert note_search(owner=owner, query="promote the standby database") == []


def test_a_stranger_never_gets_the_owners_notes_through_export(owner, stranger, stranger_token, runbook):
    assert export_of(stranger)["notes"] == []

    response = Client().get("/api/v1/export", headers={"Authorization": f"Bearer {stranger_token}"})

    assert json.loads(b"".join(response.streaming_content))["notes"] == []
    assert export_of(owner)["notes"][0]["id"] == str(runbook.public_id)


def test_the_api_export_and_import_carry_notes(owner, stranger, owner_token, stranger_token, runbook):
    exported = Client().get("/api/v1/export", headers={"Authorization": f"Bearer {owner_token}"})
    document = json.loads(b"".join(exported.streaming_content))

    response = Client().post(
        "/api/v1/import",
        json.dumps(document),
        content_type="application/json",
        headers={"Authorization": f"Bearer {stranger_token}"},
    )

    assert response.status_code == 200
    copied = Note.objects.get(space__personal_of=stranger)
    assert (str(copied.public_id), copied.content, copied.tags) == (str(runbook.public_id), RUNBOOK, runbook.tags)


def test_notes_are_exported_oldest_first(owner):
    import_memories(
        owner=owner,
        document=document_of(a_note(title="Newer", created_at=UPDATED), a_note(title="Older", created_at=CREATED)),
    )

    exported = export_of(owner)["notes"]

    assert [entry["title"] for entry in exported] == ["Older", "Newer"]
    assert datetime.fromisoformat(exported[0]["created_at"]) == datetime(2025, 3, 1, 9, 30, 0, 123456, tzinfo=UTC)


def test_a_version_this_server_does_not_know_is_refused(owner):
    with pytest.raises(ValidationError, match="is export format version 4; this server reads versions 1, 2 and 3"):
        import_memories(owner=owner, document=document_of(a_note(), version=4))
    assert not Note.objects.exists()
