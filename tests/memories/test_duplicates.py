"""Exact duplicates: the same text written again returns the stored memory instead of a copy."""

import threading

import pytest
from django.db import connection

from memories import services
from memories.models import Memory

TEXT = "The staging database listens on port 5433."


def test_the_same_text_again_returns_the_stored_memory_marked_written_again(owner):
    first = services.memory_write(owner=owner, content=TEXT, tags=["db"], written_by="claude code")

    again = services.memory_write(
        owner=owner, content="  the STAGING database\nlistens on   port 5433. ", tags=["staging"], written_by="cursor"
    )

    assert again.pk == first.pk
    assert again.written_again is True
    assert first.written_again is False
    stored = Memory.objects.get(owner=owner)
    assert stored.content == TEXT  # the first wording stays
    assert stored.tags == ["db", "staging"]
    assert stored.written_by == "claude code"
    assert stored.also_written_by == ["cursor"]


def test_a_different_text_or_another_owner_is_stored_apart(owner, stranger):
    services.memory_write(owner=owner, content=TEXT)
    services.memory_write(owner=owner, content=TEXT + " Since May.")
    services.memory_write(owner=stranger, content=TEXT)

    assert Memory.objects.filter(owner=owner).count() == 2
    assert Memory.objects.filter(owner=stranger).count() == 1


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
    assert Memory.objects.filter(owner=owner).count() == 1
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
