"""memory_history: every update keeps the version it replaces, for the owner only."""

from memories import services
from memories.models import MAX_REVISIONS_PER_MEMORY, MemoryRevision
from memories.selectors import memory_history


def test_each_change_of_text_tags_or_client_keeps_the_previous_version(owner):
    memory = services.memory_write(owner=owner, content="Deploys happen on Tuesdays.", tags=["ops"], written_by="a")

    services.memory_update(owner=owner, public_id=memory.public_id, content="Deploys happen on Thursdays.")
    services.memory_update(owner=owner, public_id=memory.public_id, tags=["ops", "deploy"])
    services.memory_update(owner=owner, public_id=memory.public_id, pinned=True)  # not a new version

    current, revisions = memory_history(owner=owner, public_id=memory.public_id)
    assert current.content == "Deploys happen on Thursdays." and current.pinned
    assert [(revision.content, revision.tags) for revision in revisions] == [
        ("Deploys happen on Thursdays.", ["ops"]),
        ("Deploys happen on Tuesdays.", ["ops"]),
    ]
    assert revisions[1].valid_from == memory.updated_at
    assert revisions[1].replaced_at == revisions[0].valid_from


def test_an_update_that_changes_nothing_keeps_no_version(owner):
    memory = services.memory_write(owner=owner, content="Deploys happen on Tuesdays.")

    services.memory_update(owner=owner, public_id=memory.public_id, content="Deploys happen on Tuesdays.")

    assert not MemoryRevision.objects.exists()


def test_only_the_newest_versions_are_kept(owner):
    memory = services.memory_write(owner=owner, content="version 0")
    for number in range(1, MAX_REVISIONS_PER_MEMORY + 3):
        services.memory_update(owner=owner, public_id=memory.public_id, content=f"version {number}")

    _, revisions = memory_history(owner=owner, public_id=memory.public_id)
    assert len(revisions) == MAX_REVISIONS_PER_MEMORY
    assert revisions[0].content == f"version {MAX_REVISIONS_PER_MEMORY + 1}"
    assert revisions[-1].content == "version 2"


def test_history_over_mcp_and_rest_and_never_for_a_stranger(mcp, owner, owner_token, stranger_token):
    from tests.memories.api.test_api import Api

    written = mcp.ok("memory_write", {"content": "Deploys happen on Tuesdays."})
    mcp.ok("memory_update", {"id": written["id"], "content": "Deploys happen on Thursdays."})

    history = mcp.ok("memory_history", {"id": written["id"]})
    assert history["memory"]["content"] == "Deploys happen on Thursdays."
    assert [revision["content"] for revision in history["revisions"]] == ["Deploys happen on Tuesdays."]
    assert Api(owner_token).get(f"memories/{written['id']}/history").json() == history

    assert Api(stranger_token).get(f"memories/{written['id']}/history").status_code == 404
