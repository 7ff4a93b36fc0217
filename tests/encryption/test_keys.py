"""memories.encryption.keys: each space's data keys, made once, cached in the process, and
binding what they seal to their space and its context."""

import os
import threading
import time
from contextlib import suppress

import pytest
from django.db import connection, transaction

from accounts.spaces import team_space_create
from memories.encryption import keys
from memories.encryption.cipher import Unreadable
from memories.encryption.keys import current_key, key_for, readable_keys
from memories.encryption.master import master_id, master_key, verify_master_key
from memories.models import SpaceKey


def add_version(space_id: int, version: int) -> None:
    """A newer data key for the space, as a space key rotation makes one."""
    master = master_key()
    SpaceKey.objects.create(
        space_id=space_id,
        version=version,
        wrapped=keys._wrap(master, space_id, version, os.urandom(32)),
        master_id=master_id(master),
    )


def test_a_space_s_first_key_is_made_once(space_a):
    made = current_key(space_a)
    assert (made.space_id, made.version) == (space_a, 1)
    assert current_key(space_a) == made
    assert SpaceKey.objects.filter(space_id=space_a).count() == 1


def test_the_key_material_is_stored_only_wrapped(space_a):
    made = current_key(space_a)
    stored = bytes(SpaceKey.objects.get(space_id=space_a).wrapped)
    assert made._material not in stored
    assert "material" not in repr(made) and made._material.hex() not in repr(made)


def test_making_the_first_key_inside_a_transaction_leaves_it_usable(space_a):
    with transaction.atomic():
        made = current_key(space_a)
        assert current_key(space_a) == made
        assert SpaceKey.objects.filter(space_id=space_a).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_processes_making_a_space_s_first_key_at_once_end_with_one(space_a):
    """The second inserts while the first's row is uncommitted: it waits on it, inserts nothing
    and takes the first's key."""
    verify_master_key()  # recorded before, so the second waits on the data key's row alone
    inserted, release = threading.Event(), threading.Event()
    made: dict[str, keys.DataKey] = {}
    failures: list[BaseException] = []

    def make(name: str, before: threading.Event | None, after: threading.Event | None) -> None:
        try:
            if before is not None:
                before.wait(10)
            with transaction.atomic():
                made[name] = current_key(space_a)
                if after is not None:
                    after.set()
                    release.wait(10)
        except BaseException as error:
            failures.append(error)
        finally:
            connection.close()

    first = threading.Thread(target=make, args=("first", None, inserted))
    second = threading.Thread(target=make, args=("second", inserted, None))
    first.start()
    second.start()
    waited = False
    deadline = time.monotonic() + 10
    while not waited and time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            waited = cursor.fetchone()[0] > 0
        time.sleep(0.02)
    release.set()
    first.join(10)
    second.join(10)
    assert not failures
    assert waited, "the second never waited on the first's row"
    assert made["first"] == made["second"]
    assert SpaceKey.objects.filter(space_id=space_a).count() == 1


def test_key_for_unwraps_a_key_once_then_answers_from_the_process_cache(
    space_a, django_capture_on_commit_callbacks, django_assert_num_queries
):
    with django_capture_on_commit_callbacks(execute=True):
        made = current_key(space_a)
    with django_assert_num_queries(1):
        assert key_for(space_a, 1) == made
    with django_assert_num_queries(0):
        assert key_for(space_a, 1) == made


def test_a_key_made_in_a_transaction_that_rolled_back_is_never_used(space_a):
    with suppress(RuntimeError), transaction.atomic():
        taken_back = current_key(space_a)
        raise RuntimeError("the write failed after its key was made")
    made_again = current_key(space_a)
    assert made_again != taken_back
    assert key_for(space_a, 1) == made_again
    keys._cache.clear()
    assert key_for(space_a, 1) == made_again  # what the database holds


def test_key_for_a_version_that_does_not_exist_is_unreadable(space_a):
    current_key(space_a)
    with pytest.raises(Unreadable, match=f"space {space_a} has no data key of version 2"):
        key_for(space_a, 2)


def test_readable_keys_lists_every_version_newest_first_in_one_query(
    space_a, space_b, space_c, django_capture_on_commit_callbacks, django_assert_num_queries
):
    with django_capture_on_commit_callbacks(execute=True):
        first_a, first_b = current_key(space_a), current_key(space_b)
        add_version(space_a, 2)
    with django_assert_num_queries(1):
        found = readable_keys([space_a, space_b, space_c])
    assert [key.version for key in found[space_a]] == [2, 1]
    assert found[space_a][1] == first_a
    assert found[space_b] == [first_b]
    assert found[space_c] == []
    assert current_key(space_a) == found[space_a][0]


def test_a_sealed_text_opens_only_in_its_space_and_context(space_a, space_b):
    key_a, key_b = current_key(space_a), current_key(space_b)
    blob = key_a.seal("Maria is on vacation in Lisbon", "memories_memory.content:1")
    assert key_for(space_a, 1).open(blob, "memories_memory.content:1") == "Maria is on vacation in Lisbon"
    with pytest.raises(Unreadable):
        key_b.open(blob, "memories_memory.content:1")
    with pytest.raises(Unreadable):
        key_a.open(blob, "memories_memory.content:2")


def test_a_text_sealed_under_another_version_says_which(space_a):
    sealed_under_1 = current_key(space_a).seal("text", "ctx")
    add_version(space_a, 2)
    with pytest.raises(Unreadable, match="sealed under key version 1, not 2"):
        current_key(space_a).open(sealed_under_1, "ctx")


def test_a_mac_is_the_same_for_the_same_space_purpose_and_data_only(space_a, space_b):
    key_a = current_key(space_a)
    digest = key_a.mac("term", "postgres")
    assert len(digest) == 32
    assert key_a.mac("term", "postgres") == digest
    keys._cache.clear()
    assert key_for(space_a, 1).mac("term", "postgres") == digest  # unwrapped again: the same key
    assert key_a.mac("term", "postgresql") != digest
    assert key_a.mac("entity", "postgres") != digest
    assert current_key(space_b).mac("term", "postgres") != digest


def test_a_space_is_made_with_its_first_key_which_the_process_has_at_hand(owner, django_assert_num_queries):
    space = team_space_create(user=owner, name="Research")
    assert list(SpaceKey.objects.filter(space=space).values_list("version", flat=True)) == [1]
    with django_assert_num_queries(0):
        key_for(space.pk, 1)


def test_the_current_key_is_read_once_then_again_after_its_time(owner, django_assert_num_queries, monkeypatch):
    space = team_space_create(user=owner, name="Research")
    with django_assert_num_queries(1):
        assert current_key(space.pk).version == 1
    with django_assert_num_queries(0):  # a write sealing several values reads it once
        assert current_key(space.pk).version == 1

    add_version(space.pk, 2)  # by another process: this one learns of it once its time is up
    assert current_key(space.pk).version == 1
    monkeypatch.setattr(keys, "CURRENT_TTL", 0.0)
    assert current_key(space.pk).version == 2


def test_a_key_this_process_adds_or_drops_is_current_at_once(owner):
    space = team_space_create(user=owner, name="Research")
    assert current_key(space.pk).version == 1
    assert keys.space_key_add(space.pk) == 2
    assert current_key(space.pk).version == 2
    keys.space_keys_drop_older(space.pk, 2)
    assert current_key(space.pk).version == 2 and [key.version for key in readable_keys([space.pk])[space.pk]] == [2]
