"""manage.py rotatekeys --master: every data key rewrapped under the new master key, in batches
that each leave every key readable, so a stopped rotation finishes when run again."""

import pytest
from django.core.management.base import CommandError

from memories.encryption import keys
from memories.encryption.keys import current_key, key_for, rewrap_data_keys
from memories.encryption.master import master_id, verify_master_key
from memories.models import MasterKeyCheck, SpaceKey
from tests.encryption.conftest import NEW_MASTER, OLD_MASTER, configured


@pytest.fixture
def sealed(old_master, space_a, space_b, space_c) -> dict[int, bytes]:
    """A text sealed in each of three spaces, their keys wrapped by the old master key."""
    return {
        space: current_key(space).seal(f"a memory of space {space}", "ctx") for space in (space_a, space_b, space_c)
    }


@pytest.fixture
def rotating(settings, sealed) -> None:
    """Every process restarted with the new master key and the old one as the previous."""
    settings.GNOSEM_MASTER_KEY = configured(NEW_MASTER)
    settings.GNOSEM_PREVIOUS_MASTER_KEY = configured(OLD_MASTER)


def every_text_opens(sealed: dict[int, bytes]) -> bool:
    keys._cache.clear()  # unwrapped afresh, from what the database holds
    return all(key_for(space, 1).open(blob, "ctx") == f"a memory of space {space}" for space, blob in sealed.items())


def wrapped_by() -> set[str]:
    return set(SpaceKey.objects.values_list("master_id", flat=True))


def test_rotation_rewraps_every_data_key_under_the_new_master_key(settings, sealed, rotating, command):
    out, _ = command("rotatekeys", "--master", "--batch-size", "2")
    assert out.splitlines() == [
        "2/3 data keys rewrapped",
        "3/3 data keys rewrapped",
        f"Every data key is wrapped by master key {master_id(NEW_MASTER)}, which the database now expects. "
        "GNOSEM_PREVIOUS_MASTER_KEY may be removed.",
    ]
    assert wrapped_by() == {master_id(NEW_MASTER)}
    assert MasterKeyCheck.objects.get().master_id == master_id(NEW_MASTER)

    settings.GNOSEM_PREVIOUS_MASTER_KEY = None
    verify_master_key()
    assert every_text_opens(sealed)


def test_a_rotation_stopped_after_one_batch_leaves_every_key_readable_and_finishes_when_run_again(
    settings, sealed, rotating, command
):
    assert rewrap_data_keys(previous=OLD_MASTER, current=NEW_MASTER, limit=1) == 1
    assert wrapped_by() == {master_id(OLD_MASTER), master_id(NEW_MASTER)}
    assert every_text_opens(sealed)
    verify_master_key()  # a process restarted meanwhile starts

    out, _ = command("rotatekeys", "--master")
    assert out.splitlines()[0] == "2/2 data keys rewrapped"
    assert wrapped_by() == {master_id(NEW_MASTER)}
    assert every_text_opens(sealed)

    again, _ = command("rotatekeys", "--master")
    assert again.startswith("Every data key is wrapped by master key")


def test_rotation_without_the_previous_key_is_refused(settings, sealed, command):
    with pytest.raises(CommandError, match="GNOSEM_PREVIOUS_MASTER_KEY is not set"):
        command("rotatekeys", "--master")
    assert wrapped_by() == {master_id(OLD_MASTER)}


def test_rotation_from_a_key_the_data_is_not_encrypted_with_is_refused(settings, sealed, command):
    settings.GNOSEM_MASTER_KEY = configured(NEW_MASTER)
    settings.GNOSEM_PREVIOUS_MASTER_KEY = configured(bytes(32))
    with pytest.raises(CommandError, match="does not match"):
        command("rotatekeys", "--master")
    assert wrapped_by() == {master_id(OLD_MASTER)}


def test_the_command_says_what_to_rotate(command):
    with pytest.raises(CommandError, match="one of the arguments --master --space is required"):
        command("rotatekeys")
