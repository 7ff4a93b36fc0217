"""Export format version 2: pinned flags, corrections, provenance and earlier versions make the
round trip; version 1 files still import; broken links between entries are refused whole."""

import copy
import json
import uuid

import pytest

from gnosem.errors import ValidationError
from memories import services
from memories.models import Memory, MemoryRevision
from memories.transfer.document import LINK_FIELDS
from memories.transfer.export import export_chunks, exported_space
from memories.transfer.importing import import_memories


def export_of(owner) -> dict:
    return json.loads("".join(export_chunks(exported_space(owner))))


@pytest.fixture
def corrected(owner) -> tuple[Memory, Memory]:
    old = services.memory_write(owner=owner, content="We deploy on Tuesdays.", written_by="cursor")
    services.memory_update(owner=owner, public_id=old.public_id, content="We deploy on Tuesdays at noon.")
    new = services.memory_write(owner=owner, content="We deploy on Thursdays.", supersedes=[str(old.public_id)])
    services.memory_write(owner=owner, content="we deploy on thursdays.", written_by="claude code")
    services.memory_update(owner=owner, public_id=new.public_id, pinned=True)
    return old, new


def test_the_round_trip_keeps_pins_corrections_provenance_and_history(owner, corrected):
    before = export_of(owner)
    old_entry, new_entry = before["memories"]
    assert before["version"] == 3
    assert old_entry["superseded_by"] == new_entry["id"]
    assert [revision["content"] for revision in old_entry["revisions"]] == ["We deploy on Tuesdays."]
    assert new_entry["pinned"] is True and new_entry["also_written_by"] == ["claude code"]

    Memory.objects.filter(space__personal_of=owner).delete()
    report = import_memories(owner=owner, document=copy.deepcopy(before))

    assert report.imported == 2
    assert export_of(owner)["memories"] == before["memories"]


def test_links_follow_the_new_ids_when_the_old_ones_are_taken(owner, stranger, corrected):
    document = export_of(owner)

    import_memories(owner=owner, document=copy.deepcopy(document))  # duplicates: nothing new
    import_memories(owner=stranger, document=copy.deepcopy(document))

    old, new = Memory.objects.filter(space__personal_of=stranger).order_by("created_at")
    assert old.superseded_by == new
    assert MemoryRevision.objects.filter(memory=old).count() == 1
    assert Memory.objects.filter(space__personal_of=owner).count() == 2


def test_a_version_1_file_still_imports(owner):
    document = {
        "format": "gnosem-export",
        "version": 1,
        "memories": [{"content": "We deploy on Tuesdays.", "created_at": "2025-01-01T00:00:00Z"}],
    }

    assert import_memories(owner=owner, document=document).imported == 1


@pytest.mark.parametrize("link", LINK_FIELDS)
@pytest.mark.parametrize("problem", ["unknown target", "cycle", "itself"])
def test_broken_links_refuse_the_whole_file(owner, link, problem):
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    targets = {
        "unknown target": (str(uuid.uuid4()), None),
        "cycle": (second, first),
        "itself": (first, None),
    }[problem]
    document = {
        "format": "gnosem-export",
        "version": 2,
        "memories": [
            {"id": first, "content": "one", "created_at": "2025-01-01T00:00:00Z", link: targets[0]},
            {"id": second, "content": "two", "created_at": "2025-01-02T00:00:00Z", link: targets[1]},
        ],
    }

    with pytest.raises(ValidationError, match=f"nothing was imported: memory #1: .*{link}"):
        import_memories(owner=owner, document=document)
    assert not Memory.objects.exists()
