"""Exact duplicates: the same text written again returns the stored memory instead of a copy."""

import threading
import time

import pytest
from django.db import connection, transaction

from accounts.spaces import personal_space_of
from gnosem.errors import ValidationError
from memories import services
from memories.models import Memory
from tests.memories.locking import lock_waiters

TEXT = "The staging database listens on port 5433."


def test_the_same_text_again_returns_the_stored_memory_marked_written_again(owner):
    first = services.memory_write(owner=owner, content=TEXT, tags=["db"], written_by="claude code")

    again = services.memory_write(
        owner=owner, content="  the STAGING database\nlistens on   port 5433. ", tags=["staging"], written_by="cursor"
    )

    assert again.pk == first.pk
    assert again.written_again is True
    assert first.written_again is False
    stored = Memory.objects.get(space__personal_of=owner)
    assert stored.content == TEXT  # the first wording stays
    assert stored.tags == ["db", "staging"]
    assert stored.written_by == "claude code"
    assert stored.also_written_by == ["cursor"]


def test_a_different_text_or_another_owner_is_stored_apart(owner, stranger):
    services.memory_write(owner=owner, content=TEXT)
    services.memory_write(owner=owner, content=TEXT + " Since May.")
    services.memory_write(owner=stranger, content=TEXT)

    assert Memory.objects.filter(space__personal_of=owner).count() == 2
    assert Memory.objects.filter(space__personal_of=stranger).count() == 1


def test_a_text_only_a_superseded_memory_holds_is_stored_again(owner):
    old = services.memory_write(owner=owner, content=TEXT)
    services.memory_write(
        owner=owner, content="The staging database moved to port 6543.", supersedes=[str(old.public_id)]
    )

    again = services.memory_write(owner=owner, content=TEXT)

    assert again.written_again is False
    assert again.pk != old.pk


def test_writing_again_within_the_tag_limit_keeps_the_tags_that_fit(owner):
    services.memory_write(owner=owner, content=TEXT, tags=[f"t{i}" for i in range(19)])

    again = services.memory_write(owner=owner, content=TEXT, tags=["extra-1", "extra-2"])

    assert again.tags == [*(f"t{i}" for i in range(19)), "extra-1"]


@pytest.mark.django_db(transaction=True)
def test_two_writes_of_the_same_text_at_once_store_it_once(owner):
    barrier = threading.Barrier(2)
    results = []

    def write():
        try:
            barrier.wait()
            results.append(services.memory_write(owner=owner, content=TEXT, written_by=threading.current_thread().name))
        finally:
            connection.close()

    threads = [threading.Thread(target=write, name=f"client {i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 2
    assert Memory.objects.filter(space__personal_of=owner).count() == 1
    assert sorted(memory.written_again for memory in results) == [False, True]


def test_mcp_and_rest_say_duplicate(mcp, owner_token):
    from tests.memories.api.test_api import Api

    first = mcp.ok("memory_write", {"content": TEXT})
    again = mcp.ok("memory_write", {"content": TEXT.upper()})
    assert first["duplicate"] is False
    assert again == {**first, "duplicate": True, "written_by": first["written_by"]}

    response = Api(owner_token).send("post", "memories", {"content": TEXT, "written_by": "script"})
    assert response.status_code == 200
    assert response.json()["id"] == first["id"]
    assert response.json()["duplicate"] is True
    assert response.json()["also_written_by"] == ["script"]


@pytest.mark.django_db(transaction=True)
def test_a_write_superseding_the_memory_another_write_of_its_text_waits_for_never_deadlocks(owner):
    """One write takes its text's turn and then locks the memory holding the text; another write of
    that text superseding that memory waits for the turn before it locks anything, so the two never
    wait for each other in a cycle (PostgreSQL would abort one as a deadlock)."""
    held = services.memory_write(owner=owner, content=TEXT)
    space_id = personal_space_of(owner).pk
    turn_taken, superseding_waits = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def write_of_the_same_text():  # as memory_write does it, paused between its two locks
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(services._LOCK_TEXT_SQL, [str(space_id), TEXT])
                turn_taken.set()
                superseding_waits.wait(timeout=30)
                outcome["found"] = services._current_with_same_text(space_id, TEXT)
        except Exception as exc:
            outcome["found"] = exc
        finally:
            connection.close()

    def superseding_write():
        try:
            services.memory_write(owner=owner, content=TEXT, supersedes=[str(held.public_id)])
        except Exception as exc:
            outcome["superseding"] = exc
        finally:
            connection.close()

    first = threading.Thread(target=write_of_the_same_text)
    first.start()
    assert turn_taken.wait(timeout=30)
    second = threading.Thread(target=superseding_write)
    second.start()
    deadline = time.monotonic() + 30
    while lock_waiters() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    superseding_waits.set()
    first.join(timeout=60)
    second.join(timeout=60)

    assert outcome["found"] == held
    assert isinstance(outcome["superseding"], ValidationError)  # it cannot supersede itself
    assert "cannot supersede itself" in str(outcome["superseding"])
