"""Fixtures of the encryption tests: master keys to configure, the spaces of the owner, the
stranger and the lead (without keys yet), and a process that has cached no key and compared no master key yet."""

import base64

import pytest

from memories.encryption import keys, master
from memories.models import SpaceKey

OLD_MASTER = bytes(range(32))
NEW_MASTER = bytes(range(100, 132))


def configured(key: bytes) -> str:
    """A master key as GNOSEM_MASTER_KEY holds it."""
    return base64.b64encode(key).decode()


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test starts as a new process would: no data key cached, no master key verified."""
    monkeypatch.setattr(keys, "_cache", {})
    monkeypatch.setattr(keys, "_uncommitted", {})
    monkeypatch.setattr(master, "_verified", set())


@pytest.fixture
def old_master(settings) -> bytes:
    """The installation runs with OLD_MASTER."""
    settings.GNOSEM_MASTER_KEY = configured(OLD_MASTER)
    settings.GNOSEM_PREVIOUS_MASTER_KEY = None
    return OLD_MASTER


def keyless(space_id: int) -> int:
    """The space without the key it was made with, as a space made before spaces had keys: its
    first key is made when something is first sealed there."""
    SpaceKey.objects.filter(space_id=space_id).delete()
    keys.forget_cached_keys()
    return space_id


@pytest.fixture
def space_a(owner) -> int:
    return keyless(owner.personal_space.id)


@pytest.fixture
def space_b(stranger) -> int:
    return keyless(stranger.personal_space.id)


@pytest.fixture
def space_c(lead) -> int:
    return keyless(lead.personal_space.id)
