"""A note's title is one line of plain text at every door (MCP, REST, the dashboard): control
characters, direction overrides and invisible characters are refused with a message naming the
character; a title derived from an uploaded file drops them instead."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from gnosem.errors import ValidationError
from memories.models import MAX_NOTE_TITLE_CHARS, Note
from memories.notes import services as notes

# A title, and words of the message that refuses it.
REFUSED = {
    "a right-to-left override": ("Invoice \u202efdp.exe", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "a right-to-left isolate": ("Runbook \u2067x", "U+2067 RIGHT-TO-LEFT ISOLATE"),
    "a zero-width space": ("Run\u200bbook", "U+200B ZERO WIDTH SPACE"),
    "a byte order mark": ("\ufeffRunbook", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    "BEL": ("Runbook\x07", "must not contain control characters or line breaks (it holds U+0007)"),
    "ESC": ("Runbook\x1b[31m", "must not contain control characters or line breaks (it holds U+001B)"),
    "NUL": ("Run\x00book", "(it holds U+0000)"),
}
CASES = pytest.mark.parametrize(("title", "says"), REFUSED.values(), ids=REFUSED.keys())


@CASES
def test_mcp_refuses_the_title_naming_the_character(mcp, title, says):
    message = mcp.fails("note_write", {"title": title, "content": "Fail over after five minutes."})

    assert "title" in message and says in message
    assert not Note.objects.exists()


@CASES
def test_rest_refuses_the_title_naming_the_character(owner_token, title, says):
    api = Client(headers={"Authorization": f"Bearer {owner_token}"})

    response = api.post("/api/v1/notes", {"title": title, "content": "text"}, content_type="application/json")

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["field"] == "title" and says in error["message"]
    assert not Note.objects.exists()


@CASES
def test_the_dashboard_refuses_the_title_naming_the_character(owner_client, title, says):
    response = owner_client.post(reverse("notes"), {"title": title, "content": "text", "format": "markdown"})

    assert response.status_code == 400
    page = response.content.decode()
    assert "title: must not contain" in page and says in page
    assert not Note.objects.exists()


@CASES
def test_a_title_change_is_refused_the_same_way(owner, title, says):
    note = notes.note_write(owner=owner, title="Runbook", content="text")

    with pytest.raises(ValidationError, match=re.escape(says)):
        notes.note_update(owner=owner, public_id=note.public_id, title=title)
    assert Note.objects.get().title == "Runbook"


def test_a_control_character_is_not_called_a_length_problem(owner):
    with pytest.raises(ValidationError) as caught:
        notes.note_write(owner=owner, title="Bell\x07", content="text")

    assert "characters;" not in caught.value.message and str(MAX_NOTE_TITLE_CHARS) not in caught.value.message


def test_a_long_title_is_refused_for_its_length(owner):
    with pytest.raises(ValidationError, match=f"is 201 characters; a title has at most {MAX_NOTE_TITLE_CHARS}"):
        notes.note_write(owner=owner, title="t" * 201, content="text")


def test_line_breaks_and_tabs_in_a_title_become_spaces_and_joiners_stay(owner):
    assert notes.note_write(owner=owner, title=" Fail\tover\nrunbook ", content="text").title == "Fail over runbook"
    family = "Family \U0001f468\u200d\U0001f469\u200d\U0001f467 plans"  # emoji joined by U+200D
    assert notes.note_write(owner=owner, title=family, content="text").title == family


def test_an_uploaded_files_title_drops_what_a_typed_one_may_not_hold(owner_client, owner):
    data = "# Fail\u200bover \u202erunbook\x07\n\nFail over after five minutes.\n".encode()

    response = owner_client.post(reverse("note_upload"), {"file": SimpleUploadedFile("runbook.md", data)})

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Note.objects.get(space__personal_of=owner).title == "Failover runbook"
