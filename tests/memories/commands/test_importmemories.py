"""manage.py importmemories USER FILE: a Gnosem export into a user's memories, all or nothing."""

import pytest
from django.core.management import CommandError

from memories import services
from memories.models import Memory
from tests.memories.conftest import DEEP_EXPORT
from tests.memories.stored import texts


def test_an_export_made_by_exportmemories_round_trips_through_a_file(owner, stranger, tmp_path, command):
    for i in range(3):
        services.memory_write(owner=owner, content=f"memory {i}", tags=["cli"])
    path = tmp_path / "export.json"
    command("exportmemories", "owner@example.com", "--output", str(path))
    stdout, _ = command("importmemories", "stranger", str(path))
    assert "3 memories imported, 0 duplicates skipped." in stdout
    assert sorted(texts(space__personal_of=stranger)) == [
        "memory 0",
        "memory 1",
        "memory 2",
    ]


def test_it_refuses_bad_files_and_unknown_users(owner, tmp_path, command):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gnosem-export", "version": 1, "memories": [{"content": ""}]}')
    with pytest.raises(CommandError, match=r"bad\.json: nothing was imported"):
        command("importmemories", "owner", str(bad))
    with pytest.raises(CommandError, match="over the limit"):
        command("importmemories", "owner", str(bad), "--max-bytes", "10")
    with pytest.raises(CommandError, match="No user"):
        command("importmemories", "nobody", str(bad))
    assert not Memory.objects.exists()


def test_json_nested_thousands_deep_is_a_clear_error(owner, tmp_path, command):
    path = tmp_path / "deep.json"
    path.write_bytes(DEEP_EXPORT)
    with pytest.raises(CommandError, match=r"deep\.json: is nested too deeply"):
        command("importmemories", "owner", str(path))


def test_export_and_import_commands_say_which_account_they_acted_on(owner, tmp_path, command):
    path = tmp_path / "export.json"
    _, stderr = command("exportmemories", "owner@example.com", "--output", str(path))
    assert f"account #{owner.pk} owner <owner@example.com>" in stderr
    _, stderr = command("importmemories", "owner@example.com", str(path))
    assert f"Imported into account #{owner.pk} owner <owner@example.com>" in stderr
