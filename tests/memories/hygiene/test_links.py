"""Links between memories (`superseded_by`, `duplicate_of`) never loop: a merge, a correction, the
worker's near-duplicate links and an import that would close one are refused or left out, and a
delete never fails on a link, even on a loop a database already holds (which the data migration
breaks)."""

import copy
import importlib
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.urls import reverse

from gnosem.errors import ValidationError
from memories import selectors, services
from memories.hygiene import near_duplicates
from memories.models import Memory
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories
from tests.memories.api.test_api import Api
from tests.memories.hygiene.test_near_duplicates import ORIGINAL, RESTATED, UNRELATED, pair  # noqa: F401  (the fixture)
from tests.memories.stored import with_text

START = datetime(2025, 3, 3, 9, tzinfo=UTC)

LOOPS_SQL = """
    WITH RECURSIVE walk (start, id, steps) AS (
        SELECT id, {link}, 1 FROM memories_memory WHERE {link} IS NOT NULL
        UNION ALL
        SELECT walk.start, m.{link}, walk.steps + 1 FROM walk JOIN memories_memory m ON m.id = walk.id
        WHERE m.{link} IS NOT NULL AND walk.id <> walk.start AND walk.steps < 1000
    )
    SELECT DISTINCT start FROM walk WHERE id = start
"""


def on_loops(link: str) -> set[int]:
    """The memories (anyone's) that following `link` leads back to."""
    with connection.cursor() as cursor:
        cursor.execute(LOOPS_SQL.format(link=f"{link}_id"))
        return {row[0] for row in cursor.fetchall()}


def export_of(owner) -> dict:
    return json.loads("".join(export_chunks(exported_space(owner))))


def link(memory: Memory, **links: Memory | None) -> None:
    """Store links as they are, unchecked: what an older database may hold."""
    Memory.objects.filter(pk=memory.pk).update(**links)


# --- merge -------------------------------------------------------------------------------------


def test_merging_a_duplicate_that_already_supersedes_its_original_is_refused(owner, pair):  # noqa: F811
    original, restated = pair
    services.memory_update(owner=owner, public_id=restated.public_id, supersedes=[str(original.public_id)])

    with pytest.raises(ValidationError) as refused:
        near_duplicates.memory_merge(owner=owner, public_id=restated.public_id)

    assert "already supersedes" in refused.value.message and "make it current again" in refused.value.message
    assert not on_loops("superseded_by")
    original.refresh_from_db()
    restated.refresh_from_db()
    assert original.superseded_by == restated and restated.superseded_by is None


def test_merging_is_refused_when_the_original_is_superseded_by_it_through_others(owner, pair):  # noqa: F811
    original, restated = pair
    between = services.memory_write(owner=owner, content="An interim note.", supersedes=[str(original.public_id)])
    services.memory_update(owner=owner, public_id=restated.public_id, supersedes=[str(between.public_id)])

    with pytest.raises(ValidationError, match="through others"):
        near_duplicates.memory_merge(owner=owner, public_id=restated.public_id)
    assert not on_loops("superseded_by")


def test_merging_into_an_original_another_memory_supersedes_chains_behind_it(owner, pair):  # noqa: F811
    original, restated = pair
    newer = services.memory_write(owner=owner, content="A newer correction.", supersedes=[str(original.public_id)])

    near_duplicates.memory_merge(owner=owner, public_id=restated.public_id)

    restated.refresh_from_db()
    assert restated.superseded_by == original and not on_loops("superseded_by")
    assert selectors.memory_get(owner=owner, public_id=newer.public_id).superseded_by is None


def test_the_rest_mcp_and_dashboard_sequence_makes_no_loop_and_every_door_deletes(
    owner, owner_token, owner_client, index, mcp
):
    api = Api(owner_token)
    x = api.send("post", "memories", {"content": ORIGINAL}).json()
    y = api.send("post", "memories", {"content": RESTATED}).json()
    index(*Memory.objects.filter(space__personal_of=owner))
    assert api.get(f"memories/{y['id']}").json()["duplicate_of"] == x["id"]
    mcp.ok("memory_update", {"id": y["id"], "supersedes": [x["id"]]})

    refused = api.send("post", f"memories/{y['id']}/merge")
    assert refused.status_code == 400, refused.json()
    assert "keep the two apart" in refused.json()["error"]["message"]
    page = owner_client.post(reverse("memory_merge", args=[y["id"]]), {"back": "duplicates"}, follow=True)
    assert "already supersedes" in page.content.decode()
    assert not on_loops("superseded_by")

    assert mcp.ok("memory_delete", {"id": y["id"]})["deleted"] is True
    assert api.get(f"memories/{x['id']}").json()["superseded_by"] is None
    assert api.send("delete", f"memories/{x['id']}").status_code == 204


# --- delete ------------------------------------------------------------------------------------


def delete_via(door: str, owner, public_id: uuid.UUID, owner_token: str, mcp) -> None:
    if door == "service":
        services.memory_delete(owner=owner, public_id=public_id)
    elif door == "rest":
        response = Api(owner_token).send("delete", f"memories/{public_id}")
        assert response.status_code == 204, response.content
    else:
        assert mcp.ok("memory_delete", {"id": str(public_id)})["deleted"] is True


@pytest.mark.parametrize("door", ["service", "rest", "mcp"])
def test_deleting_a_memory_on_a_stored_loop_breaks_the_loop(owner, owner_token, mcp, door):
    first, second, third = (services.memory_write(owner=owner, content=f"Version {i} of the fact.") for i in range(3))
    outside = services.memory_write(owner=owner, content="A draft the second one corrected.")
    link(first, superseded_by=second)
    link(second, superseded_by=first)
    link(outside, superseded_by=second)
    link(third, duplicate_of=second)

    delete_via(door, owner, second.public_id, owner_token, mcp)

    assert not Memory.objects.filter(pk=second.pk).exists()
    assert not on_loops("superseded_by")
    assert list(selectors.memories_of(owner).filter(superseded_by__isnull=False)) == []
    third.refresh_from_db()
    assert third.duplicate_of is None


def test_deleting_a_memory_on_a_longer_stored_loop_leaves_a_chain(owner):
    first, second, third = (services.memory_write(owner=owner, content=f"Version {i} of the fact.") for i in range(3))
    link(first, superseded_by=second)
    link(second, superseded_by=third)
    link(third, superseded_by=first)

    services.memory_delete(owner=owner, public_id=second.public_id)

    first.refresh_from_db()
    third.refresh_from_db()
    assert (first.superseded_by, third.superseded_by) == (None, first)


# --- the worker --------------------------------------------------------------------------------


@pytest.mark.parametrize("stored", ["the original names it", "the original's original names it"])
def test_the_worker_never_links_a_near_duplicate_into_a_loop(owner, pair, stored):  # noqa: F811
    original, restated = pair
    unrelated = with_text(UNRELATED, space__personal_of=owner)
    if stored == "the original names it":
        link(original, duplicate_of=restated)
    else:
        link(original, duplicate_of=unrelated)
        link(unrelated, duplicate_of=restated)

    assert near_duplicates.near_duplicates_link([restated.pk]) == 0  # as re-embedding it would

    restated.refresh_from_db()
    assert restated.duplicate_of is None and not on_loops("duplicate_of")


# --- import ------------------------------------------------------------------------------------


def test_an_export_whose_entries_collapse_into_one_memory_imports_without_a_loop(owner, stranger):
    # The same text at the same time twice: a correction's chain runs from the first to the second.
    first = services.memory_write(owner=owner, content=ORIGINAL, created_at=START)
    middle = services.memory_write(owner=owner, content=UNRELATED, supersedes=[str(first.public_id)])
    again = services.memory_write(owner=owner, content=ORIGINAL, created_at=START)
    services.memory_update(owner=owner, public_id=again.public_id, supersedes=[str(middle.public_id)])
    assert not on_loops("superseded_by")

    report = import_memories(owner=stranger, document=export_of(owner))

    assert (report.imported, report.duplicates) == (2, 1)
    assert not on_loops("superseded_by")
    current = selectors.memories_of(stranger).get(superseded_by__isnull=True)
    assert current.content == UNRELATED  # the loop's newest memory
    import_memories(owner=owner, document=export_of(stranger))  # and its export imports


def test_an_import_refuses_a_loop_of_duplicate_of_links_naming_the_entry(owner):
    ids = [str(uuid.uuid4()) for _ in range(3)]
    entries = [
        {"id": ids[i], "content": f"Memory {i}.", "created_at": "2025-01-01T00:00:00Z", "duplicate_of": ids[i - 1]}
        for i in range(3)
    ]
    entries.insert(0, {"content": "Not part of it.", "created_at": "2025-01-01T00:00:00Z"})

    with pytest.raises(ValidationError) as refused:
        import_memories(owner=owner, document={"format": "gnosem-export", "version": 3, "memories": entries})

    assert "memory #2: its duplicate_of links form a cycle" in refused.value.message
    assert not Memory.objects.exists()


def test_an_export_of_merged_corrected_and_kept_apart_memories_imports_again(owner, stranger, pair):  # noqa: F811
    original, restated = pair
    near_duplicates.memory_merge(owner=owner, public_id=restated.public_id)
    services.memory_write(owner=owner, content="A later fix.", supersedes=[str(original.public_id)])
    document = export_of(owner)

    import_memories(owner=stranger, document=copy.deepcopy(document))

    assert export_of(stranger)["memories"] == document["memories"]


# --- the data migration ------------------------------------------------------------------------


def test_the_data_migration_breaks_stored_loops_at_their_newest_successor_and_oldest_original(owner, stranger):
    def written(whose, i: int) -> Memory:
        return services.memory_write(owner=whose, content=f"Fact {i}.", created_at=START + timedelta(days=i))

    a, b, c, d = (written(owner, i) for i in range(4))
    link(a, superseded_by=b, duplicate_of=c)
    link(b, superseded_by=c, duplicate_of=a)
    link(c, superseded_by=a, duplicate_of=b)
    link(d, superseded_by=b)  # leads into the loop, not on it
    e, f = (written(stranger, i) for i in range(2))
    link(e, superseded_by=f, duplicate_of=f)
    link(f, superseded_by=e, duplicate_of=e)

    importlib.import_module("memories.migrations.0020_break_link_loops").break_link_loops(apps, None)

    assert not on_loops("superseded_by") and not on_loops("duplicate_of")
    superseded = dict(Memory.objects.values_list("pk", "superseded_by"))
    assert superseded == {a.pk: b.pk, b.pk: c.pk, c.pk: None, d.pk: b.pk, e.pk: f.pk, f.pk: None}
    duplicates = dict(Memory.objects.values_list("pk", "duplicate_of"))
    assert duplicates == {a.pk: None, b.pk: a.pk, c.pk: b.pk, d.pk: None, e.pk: None, f.pk: e.pk}
