"""Export download and import upload on the dashboard."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from memories import services
from memories.models import Memory
from memories.transfer.export import export_chunks, exported_space
from tests.memories.conftest import DEEP_EXPORT
from tests.memories.transfer.pages import imported_on_the_page


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
    moved = services.memory_write(owner=stranger, content="moving over", tags=["a"])
    document = "".join(export_chunks(exported_space(stranger))).encode()
    page = imported_on_the_page(owner_client, document)
    assert "Imported: 1 memory,\n      0 duplicates skipped." in page
    assert Memory.objects.get(space__personal_of=owner).public_id == moved.public_id
    assert Memory.objects.get(space__personal_of=owner).content == "moving over"


def test_a_bad_upload_is_refused_with_a_reason_and_changes_nothing(owner_client, owner):
    response = upload(owner_client, b'{"format": "gnosem-export", "version": 1, "memories": [{"content": "x"}]}')
    assert response.status_code == 400
    assert "memory #1: created_at: is missing" in response.content.decode()
    assert not Memory.objects.filter(space__personal_of=owner).exists()


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
    assert not Memory.objects.filter(space__personal_of=owner).exists()


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


LONG_TEXT = "The billing export moved to S3 bucket acme-billing-exports in eu-west-1 last spring. " * 6


def test_json_nested_thousands_deep_is_a_clear_error_on_the_page(owner_client, owner):
    response = upload(owner_client, DEEP_EXPORT)
    assert response.status_code == 400
    assert "export.json: is nested too deeply (more than 64 levels)" in response.content.decode()
    assert not Memory.objects.filter(space__personal_of=owner).exists()


def test_the_dashboard_shows_the_compressed_form_an_assistant_reads(owner_client, owner, owner_token, client):
    """Nothing the user cannot see may reach the assistant: the list rows and search results show
    the kept compressed form, as the detail page does."""
    item = {
        "content": LONG_TEXT,
        "content_optimized": "TOPIC=billing export|PLACE=S3 eu-west-1",
        "created_at": "2025-01-01",
    }
    document = {"format": "gnosem-export", "version": 1, "memories": [item]}
    imported_on_the_page(owner_client, json.dumps(document).encode())
    memory = Memory.objects.get(space__personal_of=owner)
    read = client.get(f"/api/v1/memories/{memory.public_id}", headers={"Authorization": f"Bearer {owner_token}"})
    assert read.json()["content"] == "TOPIC=billing export|PLACE=S3 eu-west-1"
    for page in [
        owner_client.get(reverse("home")),
        owner_client.get(reverse("home"), {"q": "billing export"}),
        owner_client.get(reverse("memory_detail", args=[memory.public_id])),
    ]:
        assert page.status_code == 200 and "TOPIC=billing export|PLACE=S3 eu-west-1" in page.content.decode()
