"""memories.encryption.master: the master key from the environment or the data folder, refused
when malformed or when it is not the key the database's data is encrypted with."""

import base64
import logging
import stat

import pytest
from django.core.exceptions import ImproperlyConfigured

from memories.encryption import master
from memories.encryption.keys import current_key
from memories.encryption.master import (
    data_dir_master_key,
    master_id,
    master_key,
    previous_master_key,
    verify_master_key,
)
from memories.models import MasterKeyCheck
from tests.encryption.conftest import NEW_MASTER, OLD_MASTER, configured


def test_without_a_variable_the_key_is_generated_once_into_the_data_folder(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="memories.encryption.master"):
        key = data_dir_master_key(tmp_path)
    path = tmp_path / "secrets" / "gnosem_master_key"
    assert len(key) == 32
    assert base64.b64decode(path.read_text()) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    [warning] = caplog.records
    assert str(path) in warning.getMessage()
    assert "without this file no backup of the database can be read" in warning.getMessage()

    caplog.clear()
    data_dir_master_key.cache_clear()  # another process, later
    assert data_dir_master_key(tmp_path) == key
    assert caplog.records == []


def test_the_first_process_to_write_the_key_file_wins(tmp_path):
    path = tmp_path / "secrets" / "gnosem_master_key"
    assert master._create_once(path, "first\n")
    assert not master._create_once(path, "second\n")
    assert path.read_text() == "first\n"
    assert [entry.name for entry in path.parent.iterdir()] == ["gnosem_master_key"]


def test_a_configured_key_is_the_base64_of_32_bytes(settings):
    settings.GNOSEM_MASTER_KEY = configured(OLD_MASTER) + "\n"
    settings.GNOSEM_PREVIOUS_MASTER_KEY = configured(NEW_MASTER)
    assert master_key() == OLD_MASTER
    assert previous_master_key() == NEW_MASTER


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("not base64!", "is not base64"),
        (base64.b64encode(bytes(16)).decode(), "holds 16 bytes, not 32"),
        (base64.b64encode(bytes(33)).decode(), "holds 33 bytes, not 32"),
    ],
)
@pytest.mark.parametrize("variable", ["GNOSEM_MASTER_KEY", "GNOSEM_PREVIOUS_MASTER_KEY"])
def test_a_malformed_key_is_refused_naming_its_variable(settings, variable, value, complaint):
    setattr(settings, variable, value)
    with pytest.raises(ImproperlyConfigured, match=complaint) as refused:
        master_key()
        previous_master_key()
    assert str(refused.value).startswith(f"{variable} (or {variable}_FILE)")
    assert "openssl rand -base64 32" in str(refused.value)
    assert value not in str(refused.value)


def test_a_master_key_id_is_short_public_and_stable():
    assert master_id(OLD_MASTER) == master_id(OLD_MASTER)
    assert len(master_id(OLD_MASTER)) == 16
    assert master_id(OLD_MASTER) != master_id(NEW_MASTER)
    assert OLD_MASTER.hex()[:16] != master_id(OLD_MASTER)


def test_the_first_key_to_be_verified_is_recorded(db, old_master):
    verify_master_key()
    record = MasterKeyCheck.objects.get()
    assert record.master_id == master_id(OLD_MASTER)
    verify_master_key()  # the same key again


def test_another_master_key_is_refused_saying_which_key_the_data_needs(db, settings, old_master):
    verify_master_key()
    settings.GNOSEM_MASTER_KEY = configured(NEW_MASTER)
    with pytest.raises(ImproperlyConfigured) as refused:
        verify_master_key()
    message = str(refused.value)
    assert f"GNOSEM_MASTER_KEY (master key {master_id(NEW_MASTER)}) does not match" in message
    assert f"this database's data is encrypted with (master key {master_id(OLD_MASTER)})" in message
    assert "Set GNOSEM_MASTER_KEY_FILE to the file that holds that key" in message
    assert "GNOSEM_PREVIOUS_MASTER_KEY" in message


def test_the_generated_key_s_file_is_named_when_it_is_the_wrong_one(db, settings, old_master):
    verify_master_key()
    settings.GNOSEM_MASTER_KEY = None
    with pytest.raises(ImproperlyConfigured, match=r"The master key in .*/secrets/gnosem_master_key"):
        verify_master_key()


def test_a_process_with_another_master_key_makes_no_data_key(db, settings, old_master, space_a):
    verify_master_key()
    settings.GNOSEM_MASTER_KEY = configured(NEW_MASTER)
    with pytest.raises(ImproperlyConfigured, match="does not match"):
        current_key(space_a)


def test_during_a_rotation_the_previous_key_is_accepted(db, settings, old_master):
    verify_master_key()
    settings.GNOSEM_MASTER_KEY = configured(NEW_MASTER)
    settings.GNOSEM_PREVIOUS_MASTER_KEY = configured(OLD_MASTER)
    verify_master_key()
