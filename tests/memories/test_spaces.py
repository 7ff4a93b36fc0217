"""What users write lands in their personal space, with them as its author, and goes with it."""

import pytest

from accounts.models import Space
from accounts.spaces import personal_space_of
from memories import services
from memories.models import Entity, Memory, Note
from memories.notes import services as notes

pytestmark = pytest.mark.django_db


def test_what_a_user_writes_lands_in_their_personal_space_as_its_author(owner, stranger, index):
    [memory] = index(
        services.memory_write(owner=owner, content="Priya Raman moved the Kestrel staging database to PostgreSQL 16.")
    )
    note = notes.note_write(owner=owner, title="Runbook", content="Restart Kestrel with systemctl.")

    space = personal_space_of(owner)
    assert (memory.space, memory.author) == (space, owner)
    assert (note.space, note.author) == (space, owner)
    assert Entity.objects.filter(space=space).exists()
    assert not Entity.objects.exclude(space=space).exists()
    assert personal_space_of(stranger) != space


def test_deleting_an_account_deletes_its_space_and_everything_in_it(owner, stranger, index):
    index(services.memory_write(owner=owner, content="Kestrel Labs pays on the fifth."))
    notes.note_write(owner=owner, title="Vendors", content="Kestrel Labs sends its reports.")
    space_id = personal_space_of(owner).pk

    owner.delete()

    assert not Space.objects.filter(pk=space_id).exists()
    assert not Memory.objects.filter(space_id=space_id).exists()
    assert not Note.objects.filter(space_id=space_id).exists()
    assert not Entity.objects.filter(space_id=space_id).exists()
    assert Space.objects.filter(personal_of=stranger).exists()
