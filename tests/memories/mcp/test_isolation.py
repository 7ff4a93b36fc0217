"""A stranger's token never sees or touches the owner's memories or entities, through any tool."""

import uuid

import pytest

from accounts.spaces import personal_space_of
from memories import services
from memories.models import Memory
from tests.memories.stored import entities_keyed


@pytest.fixture
def owners_memory(owner) -> Memory:
    memory = services.memory_write(owner=owner, content="The owner's salary review is on 2025-09-14.", tags=["hr"])
    services.memories_index(memory_ids=[memory.pk])
    memory.refresh_from_db()
    return memory


@pytest.fixture
def stranger_mcp(mcp, stranger_token):
    """The stranger's write token, in each era."""
    mcp.token = stranger_token
    return mcp


def test_a_stranger_neither_lists_nor_finds_the_owners_memories(stranger_mcp, owners_memory):
    assert stranger_mcp.ok("memory_list")["memories"] == []
    assert stranger_mcp.ok("memory_list", {"tags": ["hr"]})["memories"] == []
    assert stranger_mcp.ok("memory_search", {"query": "salary review 2025-09-14"})["results"] == []
    assert stranger_mcp.ok("memory_search", {"query": "when is the owner's salary review?"})["results"] == []


@pytest.mark.parametrize("tool", ["memory_get", "memory_update", "memory_delete"])
def test_another_users_id_looks_exactly_like_an_unknown_id(stranger_mcp, owners_memory, tool):
    unknown = uuid.uuid4()
    extra = {"content": "overwritten"} if tool == "memory_update" else {}

    theirs = stranger_mcp.fails(tool, {"id": str(owners_memory.public_id), **extra})
    nobodys = stranger_mcp.fails(tool, {"id": str(unknown), **extra})

    assert theirs == nobodys.replace(str(unknown), str(owners_memory.public_id))
    fresh = Memory.objects.get(pk=owners_memory.pk)
    assert (fresh.content, fresh.tags, fresh.updated_at) == (
        owners_memory.content,
        owners_memory.tags,
        owners_memory.updated_at,
    )


def test_another_users_entity_id_looks_exactly_like_an_unknown_id(stranger_mcp, owner):
    memory = services.memory_write(owner=owner, content="Priya Raman leads the Atlas launch.", tags=["project:atlas"])
    services.memories_index(memory_ids=[memory.pk])
    entity = entities_keyed("atlas", space__personal_of=owner).get()
    unknown = uuid.uuid4()

    theirs = stranger_mcp.fails("explore_graph", {"entity_id": str(entity.public_id)})
    nobodys = stranger_mcp.fails("explore_graph", {"entity_id": str(unknown)})

    assert theirs == nobodys.replace(str(unknown), str(entity.public_id))
    assert "No entity with id" in theirs


def test_a_strangers_writes_go_to_the_stranger(stranger_mcp, stranger, owner, owners_memory):
    written = stranger_mcp.ok("memory_write", {"content": "Stranger's own note about a salary review."})

    theirs = Memory.objects.get(public_id=written["id"])
    assert (theirs.space, theirs.author) == (personal_space_of(stranger), stranger)
    assert list(Memory.objects.filter(space__personal_of=owner)) == [owners_memory]
    assert [m["id"] for m in stranger_mcp.ok("memory_list")["memories"]] == [written["id"]]
