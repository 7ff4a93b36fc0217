"""Hostile JSON in an import's file, at each door an import takes (the REST API, the dashboard, the
command): each is refused with a 400 (a command error) that says what was wrong, never a 500, and
nothing is imported."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from memories.models import Memory
from tests.fuzzing import with_member

EXPORT = {"format": "gnosem-export", "version": 3, "memories": [{"content": "kept", "created_at": "2025-01-01"}]}


def spoiled_entry(**fields: object) -> bytes:
    return json.dumps({**EXPORT, "memories": [{**EXPORT["memories"][0], **fields}]}).encode()


# The file, and words of the message that refuses it.
HOSTILE = {
    "NUL in a memory's text": (spoiled_entry(content="a\x00b"), "content: must not contain NUL"),
    "a lone surrogate escape": (spoiled_entry(written_by="\udc00"), "lone UTF-16 surrogate"),
    "JSON nested 8,000 deep": (with_member(EXPORT, b"[" * 8_000 + b"]" * 8_000), "nested too deeply"),
    "a 5,000-digit integer": (with_member(EXPORT, b"1" * 5_000), "more than 4,300 digits"),
}
CASES = pytest.mark.parametrize(("body", "says"), HOSTILE.values(), ids=HOSTILE.keys())


@CASES
def test_the_rest_import_answers_400_naming_the_problem(owner, owner_token, body, says):
    api = Client(headers={"Authorization": f"Bearer {owner_token}"})

    response = api.post("/api/v1/import", body, content_type="application/json")

    assert response.status_code == 400, response.content[:500]
    assert says in response.json()["error"]["message"]
    assert not Memory.objects.exists()


@CASES
def test_the_dashboard_import_answers_400_naming_the_problem(owner_client, body, says):
    response = owner_client.post(reverse("transfer"), {"file": SimpleUploadedFile("export.json", body)})

    assert response.status_code == 400, response.content[:500]
    assert says in response.content.decode()
    assert not Memory.objects.exists()


@CASES
def test_the_import_command_refuses_naming_the_problem(owner, tmp_path, command, body, says):
    path = tmp_path / "export.json"
    path.write_bytes(body)

    with pytest.raises(CommandError, match=re.escape(says)):
        command("importmemories", "owner", str(path))
    assert not Memory.objects.exists()
