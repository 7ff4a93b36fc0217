"""Other tools' files through every door: the REST API, the dashboard's page and the commands
preview, import and export them alike; nothing of another user's is reachable through them."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import CommandError
from django.test import Client, TestCase
from django.urls import reverse

from accounts.spaces import personal_space_of
from memories import services
from memories.models import ImportJob, Memory

pytestmark = pytest.mark.django_db

MEM0 = json.dumps(
    {"results": [{"id": "1", "memory": "Prefers tea over coffee", "user_id": "ana", "created_at": "2025-01-02"}]}
).encode()
GRAPH = (
    b'{"type":"entity","name":"Ana","entityType":"person","observations":["Prefers tea over coffee"]}\n'
    b'{"type":"relation","from":"Ana","to":"Nobody","relationType":"knows"}\n'
)


def rest(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def test_the_api_previews_then_imports_another_tools_file(owner, owner_token):
    api = rest(owner_token)

    preview = api.post("/api/v1/import?preview=true", MEM0, content_type="application/json")

    assert preview.status_code == 200
    assert preview.json() == {
        "format": "mem0",
        "records": 1,
        "memories": 1,
        "duplicates": 0,
        "notes": 0,
        "notes_duplicates": 0,
        "skipped": [],
    }
    assert Memory.objects.count() == 0
    imported = api.post("/api/v1/import?format=mcp-memory", GRAPH, content_type="application/x-ndjson")
    assert imported.status_code == 200
    assert (imported.json()["imported"], imported.json()["skipped"]) == (
        1,
        ["line 2: the relation names 'Nobody', which is no entity of the file."],
    )
    api.post("/api/v1/import", MEM0, content_type="application/json")
    again = api.post("/api/v1/import", MEM0, content_type="application/json")
    assert (again.json()["format"], again.json()["imported"], again.json()["duplicates"]) == ("mem0", 0, 1)


def test_the_api_refuses_an_unknown_format_or_a_file_it_cannot_tell(owner_token):
    api = rest(owner_token)

    unknown = api.post("/api/v1/import?format=evernote", MEM0, content_type="application/json")
    untold = api.post("/api/v1/import", b"plain words", content_type="text/plain")

    assert unknown.status_code == untold.status_code == 400
    assert "must be one of gnosem, mcp-memory" in unknown.json()["error"]["message"]
    assert "choose its format" in untold.json()["error"]["message"]


def test_the_api_exports_each_format_and_refuses_an_unknown_one(owner, owner_token):
    services.memory_write(owner=owner, content="Ana: Prefers tea over coffee", tags=["person:ana"])
    api = rest(owner_token)

    graph = api.get("/api/v1/export?format=mcp-memory")
    folder = api.get("/api/v1/export?format=basic-memory")
    unknown = api.get("/api/v1/export?format=evernote")

    assert graph["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(graph.streaming_content).decode().splitlines()]
    ana = {"type": "entity", "name": "Ana", "entityType": "person", "observations": ["Prefers tea over coffee"]}
    assert lines == [ana]
    assert folder["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(folder.streaming_content))).namelist()
    assert len(names) == 1 and names[0].startswith("memories/")
    assert unknown.status_code == 400


def test_a_stranger_cannot_import_into_or_export_anothers_space(owner, stranger_token):
    space = personal_space_of(owner).public_id
    api = rest(stranger_token)

    imported = api.post(f"/api/v1/import?space={space}", MEM0, content_type="application/json")
    previewed = api.post(f"/api/v1/import?space={space}&preview=true", MEM0, content_type="application/json")
    exported = api.get(f"/api/v1/export?space={space}&format=mcp-memory")

    assert imported.status_code == previewed.status_code == exported.status_code == 404
    assert Memory.objects.count() == 0


def upload(client, content: bytes, name: str, **fields):
    return client.post(reverse("transfer"), {"file": SimpleUploadedFile(name, content), **fields}, follow=True)


def test_the_page_previews_an_upload_then_imports_it_once_started(owner_client, owner, stranger_client):
    page = owner_client.get(reverse("transfer")).content.decode()
    assert "MCP memory server (memory.jsonl)" in page and "format=basic-memory" in page

    preview = upload(owner_client, GRAPH, "memory.jsonl").content.decode()

    assert "2 records read:\n        1 memory to create,\n        0 duplicates to skip." in preview
    assert "the relation names &#x27;Nobody&#x27;" in preview
    assert Memory.objects.count() == 0  # nothing until it is started
    job = ImportJob.objects.get()
    assert stranger_client.get(reverse("import_job", args=[job.public_id])).status_code == 404
    assert stranger_client.post(reverse("import_job", args=[job.public_id])).status_code == 404
    with TestCase.captureOnCommitCallbacks(execute=True):
        owner_client.post(reverse("import_job", args=[job.public_id]))
    done = owner_client.get(reverse("import_job", args=[job.public_id])).content.decode()
    assert "Imported: 1 memory" in done and Memory.objects.count() == 1
    assert "memory.jsonl" in owner_client.get(reverse("transfer")).content.decode()  # listed among the imports
    refused = upload(owner_client, b"plain words", "notes.txt").content.decode()
    assert "notes.txt: is not a file this server can tell the tool of; choose its format" in refused


def test_the_commands_preview_import_and_export_other_formats(owner, command, tmp_path):
    graph = tmp_path / "memory.jsonl"
    graph.write_bytes(GRAPH)

    previewed, _ = command("importmemories", owner.username, str(graph), "--preview")
    assert Memory.objects.count() == 0
    imported, _ = command("importmemories", owner.username, str(graph), "--format", "mcp-memory")
    exported = tmp_path / "kb.zip"
    command("exportmemories", owner.username, "--format", "basic-memory", "-o", str(exported))

    assert "2 records read: 1 memory to create, 0 duplicates to skip, 1 record left out." in previewed
    assert "left out: line 2: the relation names 'Nobody'" in previewed
    assert "1 memory imported" in imported
    assert len(zipfile.ZipFile(exported).namelist()) == 1
    with pytest.raises(CommandError, match="give --output"):
        command("exportmemories", owner.username, "--format", "basic-memory")
