"""Corrections: `supersedes` on writes and updates, what leaves search, lists, counts and
session_start, and the refusals (unknown or another user's ids, cycles) that change nothing."""

import uuid

import pytest

from gnosem.errors import ValidationError
from memories import services
from memories.models import Memory
from memories.reading.counting import memory_count
from memories.reading.session import session_start
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters, memory_list

TUESDAYS = "We deploy the billing service on Tuesdays."
THURSDAYS = "From March on, we deploy the billing service on Thursdays instead of Tuesdays."


def test_a_write_that_supersedes_a_memory_points_it_to_its_successor(owner):
    old = services.memory_write(owner=owner, content=TUESDAYS)

    new = services.memory_write(owner=owner, content=THURSDAYS, supersedes=[str(old.public_id)])

    old.refresh_from_db()
    assert old.superseded_by == new
    assert Memory.objects.filter(space__personal_of=owner).count() == 2  # nothing is lost


def test_superseded_memories_leave_search_lists_counts_and_session_start_unless_included(owner, write_indexed):
    old = write_indexed(owner, TUESDAYS)
    new = write_indexed(owner, THURSDAYS, supersedes=[str(old.public_id)])

    found = [hit.memory for hit in search_hybrid(owner=owner, query="which day do we deploy billing?")]
    assert found == [new]
    assert memory_list(owner=owner, filters=MemoryFilters(), limit=10).memories == [new]
    assert memory_count(owner=owner, filters=MemoryFilters()).count == 1
    assert session_start(owner=owner, client="someone").memories == [new]

    everything = MemoryFilters(include_superseded=True)
    found = {
        hit.memory for hit in search_hybrid(owner=owner, query="which day do we deploy billing?", filters=everything)
    }
    assert found == {old, new}
    assert memory_count(owner=owner, filters=everything).count == 2


def test_an_update_can_mark_other_memories_as_superseded(owner):
    old = services.memory_write(owner=owner, content=TUESDAYS)
    new = services.memory_write(owner=owner, content=THURSDAYS)

    services.memory_update(owner=owner, public_id=new.public_id, supersedes=[str(old.public_id)])

    old.refresh_from_db()
    assert old.superseded_by == new


@pytest.mark.parametrize("whose", ["unknown", "stranger's"])
def test_superseding_an_id_the_owner_does_not_have_is_refused_and_nothing_is_written(owner, stranger, whose):
    theirs = services.memory_write(owner=stranger, content=TUESDAYS)
    target = uuid.uuid4() if whose == "unknown" else theirs.public_id

    with pytest.raises(ValidationError) as refused:
        services.memory_write(owner=owner, content=THURSDAYS, supersedes=[str(target)])

    assert refused.value.field == "supersedes"
    assert str(target) in refused.value.message
    assert not Memory.objects.filter(space__personal_of=owner).exists()
    theirs.refresh_from_db()
    assert theirs.superseded_by is None


def test_a_cycle_of_supersedes_is_refused_and_nothing_changes(owner):
    first = services.memory_write(owner=owner, content="Version one of the fact.")
    second = services.memory_write(owner=owner, content="Version two of the fact.", supersedes=[str(first.public_id)])
    third = services.memory_write(owner=owner, content="Version three of the fact.", supersedes=[str(second.public_id)])

    with pytest.raises(ValidationError, match="cycle"):
        services.memory_update(owner=owner, public_id=first.public_id, supersedes=[str(third.public_id)])
    with pytest.raises(ValidationError, match="itself"):
        services.memory_update(owner=owner, public_id=first.public_id, supersedes=[str(first.public_id)])

    third.refresh_from_db()
    assert third.superseded_by is None


def test_deleting_a_successor_hands_what_it_superseded_to_its_own_successor(owner):
    first = services.memory_write(owner=owner, content="Version one of the fact.")
    second = services.memory_write(owner=owner, content="Version two of the fact.", supersedes=[str(first.public_id)])
    third = services.memory_write(owner=owner, content="Version three of the fact.", supersedes=[str(second.public_id)])

    services.memory_delete(owner=owner, public_id=second.public_id)
    first.refresh_from_db()
    assert first.superseded_by == third

    services.memory_delete(owner=owner, public_id=third.public_id)
    first.refresh_from_db()
    assert first.superseded_by is None  # the only version left is current again


def test_a_superseded_memory_can_be_made_current_again(owner):
    old = services.memory_write(owner=owner, content=TUESDAYS)
    services.memory_write(owner=owner, content=THURSDAYS, supersedes=[str(old.public_id)])

    services.memory_reinstate(owner=owner, public_id=old.public_id)

    old.refresh_from_db()
    assert old.superseded_by is None


def test_mcp_write_with_supersedes_and_the_memory_shape_point_to_the_successor(mcp, owner):
    old = mcp.ok("memory_write", {"content": TUESDAYS})
    new = mcp.ok("memory_write", {"content": THURSDAYS, "supersedes": [old["id"]]})

    shown = mcp.ok("memory_get", {"id": old["id"]})
    assert shown["superseded_by"] == new["id"]
    listed = mcp.ok("memory_list", {})["memories"]
    assert [memory["id"] for memory in listed] == [new["id"]]
    listed = mcp.ok("memory_list", {"include_superseded": True})["memories"]
    assert {memory["id"] for memory in listed} == {old["id"], new["id"]}


def test_mcp_refuses_a_strangers_id_in_supersedes_with_a_clear_message(mcp, stranger):
    theirs = services.memory_write(owner=stranger, content=TUESDAYS)

    message = mcp.fails("memory_write", {"content": THURSDAYS, "supersedes": [str(theirs.public_id)]})

    assert message.startswith("Invalid argument `supersedes`: no memory with id")
    assert Memory.objects.filter(space__personal_of=stranger).count() == 1
    assert Memory.objects.count() == 1


def test_rest_pins_and_supersedes_through_patch(owner_token, owner):
    from tests.memories.api.test_api import Api

    api = Api(owner_token)
    old = api.send("post", "memories", {"content": TUESDAYS}).json()
    new = api.send("post", "memories", {"content": THURSDAYS}).json()

    response = api.send("patch", f"memories/{new['id']}", {"pinned": True, "supersedes": [old["id"]]})

    assert response.status_code == 200, response.json()
    assert response.json()["pinned"] is True
    assert api.get(f"memories/{old['id']}").json()["superseded_by"] == new["id"]
    refused = api.send("patch", f"memories/{old['id']}", {"supersedes": [new["id"]]})
    assert refused.status_code == 400
    assert "cycle" in refused.json()["error"]["message"]
