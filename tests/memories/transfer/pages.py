"""Importing through the dashboard: upload a file, start the import its page previews, run it."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, TestCase
from django.urls import reverse


def imported_on_the_page(client: Client, content: bytes, name: str = "export.json", **fields: str) -> str:
    """Upload a file on the transfer page, start the import it previews, and run it (its task
    runs as the start commits); the import's page after."""
    uploaded = client.post(reverse("transfer"), {"file": SimpleUploadedFile(name, content), **fields})
    assert uploaded.status_code == 302, uploaded.content.decode()[:2000]
    with TestCase.captureOnCommitCallbacks(execute=True):
        started = client.post(uploaded.url)
    assert started.status_code == 302
    return client.get(started.url).content.decode()
