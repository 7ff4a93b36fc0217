"""Export download and import upload on the dashboard; the export and import commands."""

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from memories import services, transfer
from memories.models import Memory


def download(client) -> dict:
    response = client.get(reverse("export"))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="gnosem-export-')
    return json.loads(b"".join(response.streaming_content))


def upload(client, content: bytes, name: str = "export.json"):
    return client.post(reverse("transfer"), {"file": SimpleUploadedFile(name, content)})


def test_the_download_holds_only_the_users_memories(owner_client, stranger_client, owner, stranger):
    services.memory_write(owner=owner, content="owner's")
    services.memory_write(owner=stranger, content="stranger's")
    assert [item["content"] for item in download(owner_client)["memories"]] == ["owner's"]
    assert [item["content"] for item in download(stranger_client)["memories"]] == ["stranger's"]


def test_uploading_an_export_imports_it_and_reports_counts(owner_client, owner, stranger):
    services.memory_write(owner=stranger, content="moving over", tags=["a"])
    document = "".join(transfer.export_chunks(stranger)).encode()
    response = upload(owner_client, document)
    assert response.status_code == 302
    page = owner_client.get(response.url).content.decode()
    assert "export.json: 1 memory imported, 0 duplicates skipped, 1 given new ids." in page
    assert Memory.objects.get(owner=owner).content == "moving over"


def test_a_bad_upload_is_refused_with_a_reason_and_changes_nothing(owner_client, owner):
    response = upload(owner_client, b'{"format": "gnosem-export", "version": 1, "memories": [{"content": "x"}]}')
    assert response.status_code == 400
    assert "memory #1: created_at: is missing" in response.content.decode()
    assert not Memory.objects.filter(owner=owner).exists()


def test_an_oversized_upload_is_refused_before_it_is_read(owner, settings):
    settings.GNOSEM_IMPORT_MAX_BYTES = 2048
    item = {"content": "x" * 3000, "created_at": "2025-01-01"}
    # With CSRF enforced and no token: the answer is 413, not 403, so the size was judged before
    # the CSRF check read the form (and with it the file).
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = upload(client, json.dumps({"format": "gnosem-export", "version": 1, "memories": [item]}).encode())
    assert response.status_code == 413
    assert "larger than the 2 KiB import limit; nothing was imported" in response.content.decode()
    assert not Memory.objects.filter(owner=owner).exists()


def test_uploading_needs_a_file_and_the_csrf_token(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert upload(client, b"{}").status_code == 403
    logged_in = Client()
    logged_in.force_login(owner)
    assert logged_in.post(reverse("transfer")).status_code == 400


@pytest.mark.parametrize("name", ["export", "transfer"])
def test_anonymous_visitors_are_sent_to_sign_in(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and response.url.startswith(reverse("account_login"))


def test_the_commands_round_trip_through_a_file(owner, stranger, tmp_path):
    for i in range(3):
        services.memory_write(owner=owner, content=f"memory {i}", tags=["cli"])
    path = tmp_path / "export.json"
    call_command("exportmemories", "owner@example.com", "--output", str(path), stderr=StringIO())
    out = StringIO()
    call_command("importmemories", "stranger", str(path), stdout=out, stderr=StringIO())
    assert "3 memories imported, 0 duplicates skipped, 3 given new ids." in out.getvalue()
    assert sorted(Memory.objects.filter(owner=stranger).values_list("content", flat=True)) == [
        "memory 0",
        "memory 1",
        "memory 2",
    ]


def test_the_export_command_writes_to_stdout(owner):
    services.memory_write(owner=owner, content="to stdout")
    out = StringIO()
    call_command("exportmemories", "owner", stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue())["memories"][0]["content"] == "to stdout"


def test_the_import_command_refuses_bad_files_and_unknown_users(owner, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gnosem-export", "version": 1, "memories": [{"content": ""}]}')
    with pytest.raises(CommandError, match=r"bad\.json: nothing was imported"):
        call_command("importmemories", "owner", str(bad), stderr=StringIO())
    with pytest.raises(CommandError, match="over the limit"):
        call_command("importmemories", "owner", str(bad), "--max-bytes", "10", stderr=StringIO())
    with pytest.raises(CommandError, match="No user"):
        call_command("importmemories", "nobody", str(bad), stderr=StringIO())
    assert not Memory.objects.exists()
