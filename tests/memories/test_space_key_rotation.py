"""Replacing a space's key: everything (memories, their earlier versions, entities) is sealed
again under the new one while search, reads, exploring and writes go on; a rotation stopped
part-way is carried on; the older key goes only once nothing needs it; only the space's owners
may start one."""

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from accounts.models import ActivityEvent, Role
from memories import services
from memories.encryption.rotation import rotation_continue, rotation_of, rotation_start, rotation_step
from memories.graph.explore import entity_find
from memories.models import Entity, Memory, MemoryRevision, Note, SpaceKey
from memories.notes import services as notes
from memories.reading.counting import memory_count
from memories.reading.session import session_start
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters, memory_list
from memories.space_keys import rotations_continue
from tests.memories.stored import store

pytestmark = pytest.mark.django_db

TEXTS = [
    "Ottoline Brackenbury settled invoice ERR_7731 in March.",
    "The Zanzibar-Quokka deploy happens on Thursdays.",
    "Backups of db-billing-02 run nightly at 02:00 UTC.",
]
QUERIES = ["ERR_7731", "who settled the invoice", "when do backups run", "Zanzibar-Quokka deploy day"]


def header_versions(table: str, space_id: int) -> set[int]:
    """The key versions the space's sealed texts in `table` name in their headers."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT get_byte(content, 4) FROM {table} WHERE space_id = %s", [space_id])
        return {row[0] for row in cursor.fetchall()}


def sealed_rows(space_id: int) -> int:
    """The stored fixture's rows under the space's key: three memories, one earlier version, and
    the entities they mention."""
    return 4 + Entity.objects.filter(space_id=space_id).count()


def rankings(owner) -> list[list[int]]:
    return [[hit.memory.pk for hit in search_hybrid(owner=owner, query=query)] for query in QUERIES]


@pytest.fixture
def stored(owner, write_indexed) -> list[Memory]:
    memories = [write_indexed(owner, text) for text in TEXTS]
    store(memories[0].pk, content_optimized="PERSON=Ottoline Brackenbury|ERROR=ERR_7731")
    services.memory_update(owner=owner, public_id=memories[1].public_id, content=TEXTS[1] + " Not Fridays.")
    return memories


def test_a_rotation_stopped_part_way_loses_nothing_and_carries_on_to_the_end(owner, stored):
    space_id = stored[0].space_id
    before = rankings(owner)

    rows = sealed_rows(space_id)
    rotation = rotation_start(space_id)
    assert (rotation.version, rotation.remaining, rotation.total) == (2, rows, rows)
    assert rotation_step(space_id, 2, batch=1) == 1  # then the worker dies
    assert rotation_of(space_id).remaining == rows - 1
    # Every memory is found, the best first as before; only a memory and its sequence neighbour
    # on either side of the rotation's boundary are not read as one until it passes both.
    during = rankings(owner)
    assert [sorted(ranking) for ranking in during] == [sorted(ranking) for ranking in before]
    assert [ranking[0] for ranking in during] == [ranking[0] for ranking in before]
    assert entity_find(owner=owner, name="Ottoline Brackenbury").name == "Ottoline Brackenbury"
    assert [memory.content for memory in Memory.objects.filter(space_id=space_id).order_by("pk")] == [
        TEXTS[0],
        TEXTS[1] + " Not Fridays.",
        TEXTS[2],
    ]
    written = services.memory_write(owner=owner, content="Written while the key is replaced: ERR_9000.")
    assert written.key_version == 2
    assert search_hybrid(owner=owner, query="ERR_9000")[0].memory.pk == written.pk

    kept = rotation_continue(space_id)  # everything sealed again; the older key waits for its time
    assert kept is not None and kept.remaining == 0
    assert header_versions("memories_memory", space_id) == header_versions("memories_memoryrevision", space_id) == {2}
    assert set(Memory.objects.filter(space_id=space_id).values_list("key_version", flat=True)) == {2}
    assert set(Entity.objects.filter(space_id=space_id).values_list("key_version", flat=True)) == {2}
    assert set(SpaceKey.objects.filter(space_id=space_id).values_list("version", flat=True)) == {1, 2}

    assert rotation_continue(space_id, retire_after=timedelta(0)) is None
    assert list(SpaceKey.objects.filter(space_id=space_id).values_list("version", flat=True)) == [2]
    written.delete()
    assert rankings(owner) == before
    assert Memory.objects.get(pk=stored[0].pk).content_optimized == "PERSON=Ottoline Brackenbury|ERROR=ERR_7731"
    assert [revision.content for revision in MemoryRevision.objects.filter(memory=stored[1])] == [TEXTS[1]]
    assert entity_find(owner=owner, name="ottoline brackenbury").name == "Ottoline Brackenbury"


def test_a_client_is_found_under_both_keys_while_a_rotation_runs(owner, stored, write_indexed):
    space_id = stored[0].space_id
    older = write_indexed(owner, "Cursor wrote the billing export notes.", written_by="cursor")
    rotation_start(space_id)
    newer = write_indexed(owner, "Cursor wrote the billing import notes.", written_by="cursor")
    assert (older.key_version, newer.key_version) == (1, 2)
    by_cursor = MemoryFilters(written_by="cursor")

    assert {memory.pk for memory in memory_list(owner=owner, filters=by_cursor, limit=10).memories} == {
        older.pk,
        newer.pk,
    }
    assert {hit.memory.pk for hit in search_hybrid(owner=owner, query="billing notes", filters=by_cursor)} == {
        older.pk,
        newer.pk,
    }
    assert ("cursor", 2) in (memory_count(owner=owner, filters=MemoryFilters(), group_by="written_by").groups or [])
    assert session_start(owner=owner, client="cursor").since == newer.created_at


def test_the_worker_drops_the_older_key_once_its_time_is_up(owner, stored):
    space_id = stored[0].space_id
    rotation_start(space_id)
    assert rotations_continue() == 1  # everything re-sealed, the new key only just made
    SpaceKey.objects.filter(space_id=space_id, version=2).update(created_at=timezone.now() - timedelta(hours=1))
    assert rotations_continue() == 0
    assert list(SpaceKey.objects.filter(space_id=space_id).values_list("version", flat=True)) == [2]


def test_an_owner_replaces_the_key_from_the_space_page(owner, owner_client, stored, django_capture_on_commit_callbacks):
    space = stored[0].space
    page = owner_client.get(reverse("space", args=[space.public_id])).content.decode()
    assert "Replace the encryption key" in page

    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(reverse("space_key_rotate", args=[space.public_id]), follow=True)

    assert "now seals everything under a new key (version 2)" in response.content.decode()
    page = owner_client.get(reverse("space", args=[space.public_id])).content.decode()
    rows = sealed_rows(space.pk)
    assert (
        'id="key-rotation"' in page and f"{rows} of {rows}" in page
    )  # the worker re-sealed it all once the request committed
    assert ActivityEvent.objects.filter(owner=owner, action="space_key_rotated").count() == 1


def test_only_its_owners_may_replace_a_space_key(owner, stranger_client, team, team_member, client):
    services.memory_write(owner=owner, content="A team memory.", space="Platform")
    url = reverse("space_key_rotate", args=[team.public_id])
    assert stranger_client.post(url).status_code == 404
    admin = team_member("ada", Role.ADMIN)
    client.force_login(admin)
    refused = client.post(url, follow=True).content.decode()
    assert "Only the space&#x27;s owners may replace its encryption key" in refused
    assert "Replace the encryption key" not in refused
    assert SpaceKey.objects.filter(space=team).count() == 1


def test_rotatekeys_space_seals_everything_again_and_says_when_the_old_key_goes(owner, stored, command):
    space = stored[0].space
    stdout, _ = command("rotatekeys", "--space", str(space.public_id), "--batch-size", "2")
    assert "now seals under key 2" in stdout
    rows = sealed_rows(space.pk)
    assert f"2/{rows} rows re-sealed" in stdout and f"{rows}/{rows} rows re-sealed" in stdout
    assert "The older keys are dropped 10 minutes after" in stdout
    assert header_versions("memories_memory", space.pk) == {2}


def test_rotatekeys_space_names_a_space_it_does_not_know(command, db):
    with pytest.raises(Exception, match="No space with id 'nope'"):
        command("rotatekeys", "--space", "nope")


def test_an_owner_replaces_the_key_over_rest_and_follows_the_progress(owner, stored, owner_token, client):
    space = stored[0].space
    url = f"/api/v1/spaces/{space.public_id}/key"
    headers = {"Authorization": f"Bearer {owner_token}"}
    rows = sealed_rows(space.pk)
    before = client.get(url, headers=headers).json()
    assert before == {
        "space": space.name,
        "key_version": 1,
        "rotating": False,
        "sealed_under_newest": rows,
        "total": rows,
    }

    started = client.post(url, headers=headers)

    assert started.status_code == 202
    assert started.json() | {"sealed_under_newest": None} == {
        "space": space.name,
        "key_version": 2,
        "rotating": True,
        "sealed_under_newest": None,
        "total": rows,
    }
    rotation_continue(space.pk)
    assert client.get(url, headers=headers).json()["sealed_under_newest"] == rows


def test_a_rotation_re_seals_notes_ten_at_a_time(owner):
    written = [notes.note_write(owner=owner, title=f"Runbook {n}", content=f"Step {n}.") for n in range(12)]
    space_id = written[0].space_id
    rotation_start(space_id)

    assert [rotation_step(space_id, 2), rotation_step(space_id, 2), rotation_step(space_id, 2)] == [10, 2, 0]
    assert [note.title for note in Note.objects.filter(space_id=space_id).order_by("pk")] == [
        f"Runbook {n}" for n in range(12)
    ]
    assert header_versions("memories_note", space_id) == {2}
