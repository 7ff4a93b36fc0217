"""Export and import: a lossless round trip, all-or-nothing validation, duplicates skipped."""

import copy
import json
from datetime import UTC, datetime, timedelta

import pytest

from memories import services, transfer
from memories.exceptions import ValidationError
from memories.models import IndexingStatus, Memory

START = datetime(2024, 11, 2, 8, 30, 15, 123456, tzinfo=UTC)


def export_of(owner) -> dict:
    return json.loads("".join(transfer.export_chunks(owner)))


@pytest.fixture
def written(owner) -> list[Memory]:
    memories = [
        services.memory_write(
            owner=owner,
            content=f'Memory {i}: ünïcödé ✓ "quotes" and\nnew lines',
            tags=["project-x", f"n{i}"],
            written_by="claude-code" if i % 2 else "cursor",
            created_at=START + timedelta(days=i),
        )
        for i in range(5)
    ]
    services.memory_update(owner=owner, public_id=memories[0].public_id, tags=["edited"])
    long = services.memory_write(owner=owner, content="long " * 100, created_at=START - timedelta(days=3))
    Memory.objects.filter(pk=long.pk).update(content_optimized="FACT=long repeated", compression_status="compressed")
    return memories


def test_the_export_has_every_field_of_every_memory(owner, written):
    document = export_of(owner)
    assert document["format"] == "gnosem-export" and document["version"] == 1
    assert len(document["memories"]) == 6
    first = document["memories"][0]
    assert first["content_optimized"] == "FACT=long repeated" and first["compression_status"] == "compressed"
    edited = next(item for item in document["memories"] if item["id"] == str(written[0].public_id))
    assert edited["tags"] == ["edited"] and edited["written_by"] == "cursor"
    assert edited["created_at"] == START.isoformat() and edited["updated_at"] != edited["created_at"]


def test_export_then_import_into_an_empty_account_is_lossless(owner, written, django_capture_on_commit_callbacks):
    before = export_of(owner)
    Memory.objects.filter(owner=owner).delete()
    with django_capture_on_commit_callbacks(execute=True):
        report = transfer.import_memories(owner=owner, document=copy.deepcopy(before))
    assert report.as_dict() == {"imported": 6, "duplicates": 0, "new_ids": 0}
    after = export_of(owner)
    assert after["memories"] == before["memories"]
    # Imported memories are embedded again.
    assert set(Memory.objects.filter(owner=owner).values_list("indexing_status", flat=True)) == {IndexingStatus.INDEXED}


def test_importing_into_another_account_gives_new_ids_and_keeps_everything_else(owner, stranger, written):
    before = export_of(owner)
    report = transfer.import_memories(owner=stranger, document=before)
    assert report.as_dict() == {"imported": 6, "duplicates": 0, "new_ids": 6}
    strip = lambda items: [{k: v for k, v in item.items() if k != "id"} for item in items]  # noqa: E731
    assert strip(export_of(stranger)["memories"]) == strip(before["memories"])
    assert Memory.objects.filter(owner=owner).count() == 6


def test_importing_the_same_file_twice_skips_the_duplicates(owner, written):
    document = export_of(owner)
    report = transfer.import_memories(owner=owner, document=document)
    assert report.as_dict() == {"imported": 0, "duplicates": 6, "new_ids": 0}
    assert Memory.objects.filter(owner=owner).count() == 6


def test_duplicates_inside_one_file_are_imported_once(owner):
    item = {"content": "same", "created_at": "2025-01-01T00:00:00Z"}
    document = {"format": "gnosem-export", "version": 1, "memories": [item, dict(item), {**item, "content": "other"}]}
    report = transfer.import_memories(owner=owner, document=document)
    assert (report.imported, report.duplicates) == (2, 1)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "is not a Gnosem export"),
        ({"format": "other", "version": 1, "memories": []}, "is not a Gnosem export"),
        ({"format": "gnosem-export", "version": 2, "memories": []}, "reads version 1"),
        ({"format": "gnosem-export", "version": 1, "memories": {}}, '"memories" must be a list'),
        ({"format": "gnosem-export", "version": 1, "memories": ["text"]}, "memory #1: memory: must be an object"),
    ],
)
def test_a_malformed_document_is_refused_with_a_reason(owner, document, message):
    with pytest.raises(ValidationError, match=message):
        transfer.import_memories(owner=owner, document=document)


def test_a_bad_entry_anywhere_imports_nothing_and_lists_the_problems(owner, written):
    document = export_of(owner)
    Memory.objects.filter(owner=owner).delete()
    document["memories"][2]["tags"] = ["Not A Tag!"]
    document["memories"][4]["created_at"] = "last tuesday"
    document["memories"][5]["content"] = ""
    with pytest.raises(ValidationError) as caught:
        transfer.import_memories(owner=owner, document=document)
    message = caught.value.message
    assert message.startswith("nothing was imported")
    assert "memory #3: tags:" in message and "memory #5: created_at:" in message and "memory #6: content:" in message
    assert not Memory.objects.filter(owner=owner).exists()


def test_a_database_failure_midway_rolls_everything_back(owner, monkeypatch):
    items = [{"content": f"m{i}", "created_at": "2025-01-01T00:00:00Z"} for i in range(transfer.INSERT_BATCH + 10)]
    calls = []
    original = Memory.objects.bulk_create

    def failing_bulk_create(objs, *args, **kwargs):
        calls.append(len(objs))
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return original(objs, *args, **kwargs)

    monkeypatch.setattr(Memory.objects, "bulk_create", failing_bulk_create)
    with pytest.raises(RuntimeError):
        transfer.import_memories(owner=owner, document={"format": "gnosem-export", "version": 1, "memories": items})
    assert calls == [transfer.INSERT_BATCH, 10]
    assert not Memory.objects.filter(owner=owner).exists()


def test_parse_document_explains_what_is_not_json():
    with pytest.raises(ValidationError, match="is not valid JSON"):
        transfer.parse_document(b"{not json")
    with pytest.raises(ValidationError, match="is not UTF-8"):
        transfer.parse_document(b"\xff\xfe\x00")
    assert transfer.parse_document(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # a BOM is fine


def test_taken_ids_are_found_across_lookup_batches(owner, stranger, written, monkeypatch):
    monkeypatch.setattr(transfer, "ID_LOOKUP_BATCH", 2)
    document = export_of(owner)
    Memory.objects.filter(owner=owner, public_id__in=[written[1].public_id, written[3].public_id]).delete()
    report = transfer.import_memories(owner=stranger, document=document)
    assert report.as_dict() == {"imported": 6, "duplicates": 0, "new_ids": 4}
    kept = set(Memory.objects.filter(owner=stranger).values_list("public_id", flat=True))
    assert {written[1].public_id, written[3].public_id} <= kept


def test_duplicates_are_recognised_only_at_the_same_creation_time(owner):
    services.memory_write(owner=owner, content="repeated text", created_at=START)
    items = [
        {"content": "repeated text", "created_at": START.isoformat()},
        {"content": "repeated text", "created_at": (START + timedelta(seconds=1)).isoformat()},
    ]
    report = transfer.import_memories(
        owner=owner, document={"format": "gnosem-export", "version": 1, "memories": items}
    )
    assert (report.imported, report.duplicates) == (1, 1)


def test_importing_where_a_model_is_on_compresses_what_arrived_uncompressed(
    owner, stranger, written, chat_server, django_capture_on_commit_callbacks
):
    long_text = "The billing export moved to S3 bucket acme-billing-exports in eu-west-1 last spring. " * 6
    written_while_off = services.memory_write(owner=owner, content=long_text)
    Memory.objects.filter(pk=written_while_off.pk).update(compression_status="disabled")
    document = export_of(owner)
    assert {item["compression_status"] for item in document["memories"]} == {"skipped_short", "compressed", "disabled"}
    chat_server.answer("TOPIC=billing export|PLACE=S3 acme-billing-exports, eu-west-1|DATE=last spring")

    with django_capture_on_commit_callbacks(execute=True):
        transfer.import_memories(owner=stranger, document=document)

    imported = {memory.content: memory for memory in Memory.objects.filter(owner=stranger)}
    assert imported[long_text].compression_status == "compressed"
    assert imported[long_text].content_optimized.startswith("TOPIC=billing export")
    assert imported["long " * 100].content_optimized == "FACT=long repeated"  # kept, not sent again
    assert len(chat_server.requests) == 1
