"""manage.py reindexmemories --failed [--user USER]: memories that failed to be embedded get another try."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories import services
from memories.models import Chunk, IndexingStatus, Memory, Note, NoteChunk
from memories.search.pipeline import search_hybrid


def reindex(*args: str) -> str:
    out = StringIO()
    call_command("reindexmemories", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def status(memory: Memory) -> tuple[str, int, str]:
    memory.refresh_from_db()
    return memory.indexing_status, memory.indexing_attempts, memory.indexing_error


def test_it_queues_every_failed_memory_with_a_fresh_start_and_they_get_embedded(
    owner, stranger, django_capture_on_commit_callbacks, failed_memory
):
    mine = failed_memory(owner, "The boiler service is booked for March.")
    theirs = failed_memory(stranger, "The stranger's bike needs a new chain.")
    with django_capture_on_commit_callbacks(execute=True):  # the queued tasks run, as a worker would
        output = reindex("--failed")
    assert "2 failed memories of all accounts queued" in output
    assert status(mine) == (IndexingStatus.INDEXED, 0, "")
    assert status(theirs) == (IndexingStatus.INDEXED, 0, "")
    assert search_hybrid(owner=owner, query="when is the heating maintenance?")[0].memory == mine


def test_with_a_user_it_touches_only_that_users_memories(owner, stranger, failed_memory):
    mine = failed_memory(owner, "mine")
    theirs = failed_memory(stranger, "theirs")
    output = reindex("--failed", "--user", "owner@example.com")
    assert f"1 failed memory of account #{owner.pk} owner <owner@example.com> queued" in output
    assert status(mine) == (IndexingStatus.PENDING, 0, "")
    assert status(theirs)[0] == IndexingStatus.FAILED


def test_it_leaves_pending_and_indexed_memories_alone(owner):
    pending = services.memory_write(owner=owner, content="waiting")
    Memory.objects.filter(pk=pending.pk).update(indexing_attempts=2)
    assert "No failed memories or notes in all accounts" in reindex("--failed")
    assert status(pending) == (IndexingStatus.PENDING, 2, "")
    assert not Chunk.objects.exists()


def test_it_says_what_to_do_without_failed(owner):
    with pytest.raises(CommandError, match="--failed queues the memories and notes that failed"):
        reindex()


def test_it_refuses_an_unknown_user(owner):
    with pytest.raises(CommandError, match="No user"):
        reindex("--failed", "--user", "nobody")


def test_it_queues_failed_notes_too_and_they_get_embedded(
    owner, django_capture_on_commit_callbacks, failed_memory, failed_note
):
    memory = failed_memory(owner, "The boiler service is booked for March.")
    note = failed_note(owner, "Runbook", "Fail over when the primary has been unreachable for five minutes.")
    with django_capture_on_commit_callbacks(execute=True):  # the queued tasks run, as a worker would
        output = reindex("--failed", "--user", "owner@example.com")
    assert "1 failed memory and 1 failed note of account" in output
    assert status(memory) == (IndexingStatus.INDEXED, 0, "")
    note.refresh_from_db()
    assert (note.indexing_status, note.indexing_attempts, note.indexing_error) == (IndexingStatus.INDEXED, 0, "")
    assert NoteChunk.objects.filter(note=note).exists()
    assert Note.objects.count() == 1
